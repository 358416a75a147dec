// The audit listener's mTLS: the handshake refuses clients without a certificate from the audit CA
// (none, another CA's, the API's own admin certificate), so no request of theirs is ever read.
// Also: --audit-port=0 and the flag checks at start-up (exit 2 naming the flag).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { until } from '../support/deadline.js';
import { auditEvent, auditPKI, eventList, metric, postTo, startAuditServer } from './ingest-support.js';
import { serveUntilExit } from '../security/serve-process.js';
import { startServer } from '../support/server.js';

const TLS_REFUSAL = /certificate|alert|ECONNRESET|EPIPE|socket hang up/i;

test('only a client certificate from the audit CA gets a request through', async (t) => {
  const srv = await startAuditServer(t);
  const pki = auditPKI();
  const list = eventList([auditEvent({ uid: 'tls-1', responseRV: '11' })]);
  const total = async () => {
    let n = 0;
    for (const o of ['accepted', 'decode_error', 'too_large', 'not_found', 'method_not_allowed', 'storage_error', 'unsupported_media_type']) {
      n += await metric(srv, 'reverser_audit_eventlists_total', { outcome: o });
    }
    return n;
  };
  const before = await total();
  await assert.rejects(srv.post('/audit-webhook', list, { cert: null }), TLS_REFUSAL, 'no certificate');
  await assert.rejects(srv.post('/audit-webhook', list, { cert: pki.stranger }), TLS_REFUSAL, 'another CA');
  await assert.rejects(srv.post('/audit-webhook', list, { cert: { certPem: srv.cert, keyPem: srv.key } }), TLS_REFUSAL, "the API's admin certificate");
  assert.equal(await total(), before, 'no refused client got as far as a request');
  const ok = await srv.post('/audit-webhook', list);
  assert.equal(ok.status, 200, ok.text);
  assert.equal(await total(), before + 1);
  // The main port is unchanged: the audit CA means nothing there.
  const main = await srv.request('GET', '/apis', { anonymous: true });
  assert.equal(main.status, 401);
});

test('a changed --audit-client-ca-file applies to new handshakes; an unusable one keeps the previous CA', async (t) => {
  const pki = auditPKI();
  const caFile = join(mkdtempSync(join(tmpdir(), 'audit-ca-')), 'ca.crt');
  t.after(() => rmSync(dirname(caFile), { recursive: true, force: true }));
  writeFileSync(caFile, pki.caPem);
  const srv = await startAuditServer(t, [`--audit-client-ca-file=${caFile}`]);
  const list = eventList([]);
  await assert.rejects(srv.post('/audit-webhook', list, { cert: pki.stranger }), TLS_REFUSAL);
  // Rotation: the bundle gains the other CA.
  writeFileSync(caFile, pki.caPem + pki.otherCaPem);
  await until(
    async () => (await srv.post('/audit-webhook', list, { cert: pki.stranger }).catch(() => ({ status: 0 }))).status === 200,
    'a certificate of the added CA to be accepted',
    20_000,
    250,
  );
  // A broken file is refused, the bundle stays.
  writeFileSync(caFile, 'not a certificate');
  await until(() => /changed but is unusable, keeping the previous CA/.test(srv.stderr()), 'the unusable CA file to be reported', 20_000, 250);
  assert.equal((await srv.post('/audit-webhook', list, { cert: pki.stranger })).status, 200);
  assert.equal((await srv.post('/audit-webhook', list)).status, 200);
});

test('--audit-port=0 picks a free port and prints it', async (t) => {
  const srv = await startAuditServer(t, [], { auditPort: 0 });
  assert.match(srv.stdout(), new RegExp(`reverser-apiserver audit webhook is serving on https://127\\.0\\.0\\.1:${srv.auditPort}/audit-webhook\\n`));
  assert.notEqual(srv.auditPort, 0);
  const r = await postTo(srv.auditPort, srv.ca, '/audit-webhook', eventList([]));
  assert.equal(r.status, 200, r.text);
});

test('without --audit-client-ca-file there is no audit listener', async (t) => {
  const srv = await startServer(['--audit-port=0']);
  t.after(() => srv.stop());
  assert.doesNotMatch(srv.stdout(), /audit webhook/);
});

test('audit flags are checked at start-up: exit 2 naming the flag', async () => {
  const pki = auditPKI();
  const notPem = join(pki.dir, 'not-a-cert.txt');
  writeFileSync(notPem, 'hello');
  const cases: [string[], RegExp][] = [
    [['--audit-client-ca-file=/nonexistent/ca.crt'], /--audit-client-ca-file: cannot read \/nonexistent\/ca\.crt: no such file/],
    [[`--audit-client-ca-file=${notPem}`], /--audit-client-ca-file: .* is not a PEM certificate/],
    [[`--audit-client-ca-file=${pki.caFile}`, '--audit-bind-address=localhost'], /--audit-bind-address: must be an IP address/],
    [['--audit-port=70000'], /--audit-port: must be an integer between 0 and 65535/],
    [['--audit-max-request-bytes=10'], /--audit-max-request-bytes: must be an integer between 1024/],
    [['--audit-fact-ttl=forever'], /--audit-fact-ttl: must be a duration between 1s and 24h/],
    [['--audit-fact-ttl=500ms'], /--audit-fact-ttl: must be a duration between 1s and 24h/],
  ];
  for (const [flags, message] of cases) {
    const r = await serveUntilExit(flags);
    assert.equal(r.code, 2, `${flags.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, message);
  }
});
