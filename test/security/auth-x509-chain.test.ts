// Client-certificate chains were verified by hand (dates, EKU, CA:TRUE and
// signatures, but not path length, name constraints or keyCertSign). OpenSSL verifies them now, in
// the TLS handshake; each authenticator then requires the chain's root to be in its own bundle.
import { before, after, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { issueClientCert, makeCA, makeIntermediate, type CA, type KeyPair } from '../support/pki.js';
import { assertStatus } from '../support/server.js';
import { GROUP_PATH, commitRequest, request, startServer, tempDir, type HttpResult } from '../auth-e2e/harness.js';

const cleanups: Array<() => unknown> = [];
const ctx = { after: (fn: () => unknown) => cleanups.push(fn) };
after(async () => {
  for (const fn of cleanups.reverse()) await fn();
});

let url: string;
let caPem: string;
let root: CA;
let rhCA: CA;
let dir: string;
let srvLogs: () => string;

before(async () => {
  dir = tempDir(ctx, 'sec-x509-');
  const serverCA = makeCA('sec-serving-ca');
  root = makeCA('sec-client-root');
  rhCA = makeCA('sec-front-proxy-ca');
  writeFileSync(join(dir, 'client-ca.crt'), root.certPem);
  writeFileSync(join(dir, 'rh-ca.crt'), rhCA.certPem);
  const srv = await startServer(ctx, serverCA, ['--client-ca-file', join(dir, 'client-ca.crt'), '--requestheader-client-ca-file', join(dir, 'rh-ca.crt'),
    '--requestheader-allowed-names=front-proxy', '--authorization-mode=AlwaysAllow', '--log-level=error']);
  url = srv.url;
  caPem = serverCA.certPem;
  srvLogs = srv.logs;
});

/** The leaf followed by the intermediates it presents, as one PEM (what a client sends). */
const presented = (leaf: KeyPair, ...intermediates: CA[]): KeyPair => ({ certPem: leaf.certPem + intermediates.map((i) => i.certPem).join(''), keyPem: leaf.keyPem });
const LIST = `${GROUP_PATH}/gittargets`;
const asStatus = (r: HttpResult) => ({ status: r.status, text: r.text, body: JSON.parse(r.text), headers: r.headers });

let created = 0;
/** Authenticated as `username`: a CommitRequest it creates records it as the submitter. */
async function expectUser(cert: KeyPair, username: string): Promise<void> {
  const r = await request(url, caPem, `${GROUP_PATH}/namespaces/team-a/commitrequests`, { method: 'POST', cert, body: commitRequest(`x509-${++created}`, 'tenants') });
  assert.equal(r.status, 201, r.text);
  assert.equal(JSON.parse(r.text).status.submitter.username, username);
}

async function expect401(cert: KeyPair, headers: Array<[string, string]> = []): Promise<void> {
  const r = await request(url, caPem, LIST, { cert, headers });
  assertStatus(asStatus(r), 401, 'Unauthorized', 'Unauthorized');
}

test('a valid chain (root → intermediate → leaf with clientAuth) is accepted', async () => {
  const inter = makeIntermediate(root, 'good-intermediate');
  await expectUser(presented(issueClientCert(inter, 'valid-user'), inter), 'valid-user');
  // Two levels under a pathlen:1 intermediate are fine too.
  const p1 = makeIntermediate(root, 'pathlen-1', { pathLen: 1 });
  const below = makeIntermediate(p1, 'below-pathlen-1');
  await expectUser(presented(issueClientCert(below, 'deep-user'), below, p1), 'deep-user');
});

test('an intermediate without CA:TRUE is refused', async () => {
  const notCA = makeIntermediate(root, 'not-a-ca', { caFlag: false });
  await expect401(presented(issueClientCert(notCA, 'mallory'), notCA));
});

test('a violated path length is refused', async () => {
  const p0 = makeIntermediate(root, 'pathlen-0', { pathLen: 0 });
  const below = makeIntermediate(p0, 'below-pathlen-0');
  await expect401(presented(issueClientCert(below, 'mallory'), below, p0));
});

test('an intermediate without keyCertSign is refused', async () => {
  const noSign = makeIntermediate(root, 'no-keycertsign', { keyCertSign: false });
  await expect401(presented(issueClientCert(noSign, 'mallory'), noSign));
});

test('an expired intermediate is refused', async () => {
  const expired = makeIntermediate(root, 'expired-intermediate', { notBeforeDays: -30, notAfterDays: -1 });
  await expect401(presented(issueClientCert(expired, 'mallory'), expired));
});

test('a leaf without clientAuth (serverAuth only) is refused; an expired leaf too', async () => {
  await expect401(issueClientCert(root, 'server-only', [], { eku: ['serverAuth'] }));
  await expect401(issueClientCert(root, 'expired-leaf', [], { notBeforeDays: -30, notAfterDays: -1 }));
  // The same name with clientAuth is fine: the EKU is what was refused.
  await expectUser(issueClientCert(root, 'server-only'), 'server-only');
});

test('the bundles stay separate: a front-proxy certificate is not a client certificate, and vice versa', async () => {
  // Signed by the requestheader CA: believed as a front proxy...
  const proxy = issueClientCert(rhCA, 'front-proxy');
  const asAlice = await request(url, caPem, LIST, { cert: proxy, headers: [['X-Remote-User', 'alice']] });
  assert.equal(asAlice.status, 200, asAlice.text);
  // ...but without X-Remote-User it is nobody (the client CA did not sign it).
  await expect401(proxy);
  // A client-CA certificate named front-proxy cannot assert X-Remote-User: it is itself.
  const impostor = issueClientCert(root, 'front-proxy');
  const r = await request(url, caPem, '/apis', { cert: impostor, headers: [['X-Remote-User', 'alice']] });
  assert.equal(r.status, 200, r.text);
});

test('an intermediate\'s name constraints are enforced (certificates made with the openssl CLI; node-forge cannot encode them)', async () => {
  const d = join(dir, 'nc');
  mkdirSync(d, { recursive: true });
  writeFileSync(join(d, 'root.crt'), root.certPem);
  writeFileSync(join(d, 'root.key'), root.keyPem);
  writeFileSync(join(d, 'ext.cnf'), [
    '[ca_ext]', 'basicConstraints=critical,CA:TRUE', 'keyUsage=critical,keyCertSign,cRLSign', 'nameConstraints=critical,permitted;DNS:example.com',
    '[outside]', 'basicConstraints=CA:FALSE', 'keyUsage=critical,digitalSignature', 'extendedKeyUsage=clientAuth', 'subjectAltName=DNS:mallory.evil.org',
    '[inside]', 'basicConstraints=CA:FALSE', 'keyUsage=critical,digitalSignature', 'extendedKeyUsage=clientAuth', 'subjectAltName=DNS:alice.example.com', '',
  ].join('\n'));
  const ssl = (...args: string[]) => execFileSync('openssl', args, { cwd: d, stdio: ['ignore', 'pipe', 'pipe'], timeout: 20_000 });
  ssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'int.key', '-out', 'int.csr', '-subj', '/CN=constrained');
  ssl('x509', '-req', '-in', 'int.csr', '-CA', 'root.crt', '-CAkey', 'root.key', '-set_serial', '7', '-out', 'int.crt', '-days', '10', '-extfile', 'ext.cnf', '-extensions', 'ca_ext');
  const leaf = (name: string, section: string): KeyPair => {
    ssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name}`);
    ssl('x509', '-req', '-in', `${name}.csr`, '-CA', 'int.crt', '-CAkey', 'int.key', '-set_serial', '8', '-out', `${name}.crt`, '-days', '5', '-extfile', 'ext.cnf', '-extensions', section);
    return { certPem: readFileSync(join(d, `${name}.crt`), 'utf8') + readFileSync(join(d, 'int.crt'), 'utf8'), keyPem: readFileSync(join(d, `${name}.key`), 'utf8') };
  };
  await expect401(leaf('mallory', 'outside'));
  await expectUser(leaf('alice', 'inside'), 'alice');
});

test('rotating the client CA file takes effect without restart', { timeout: 30_000 }, async () => {
  const next = makeCA('sec-client-root-2');
  const oldCert = issueClientCert(root, 'old-ca-user');
  const newCert = issueClientCert(next, 'new-ca-user');
  await expect401(newCert);
  writeFileSync(join(dir, 'client-ca.crt'), next.certPem);
  const deadline = Date.now() + 15_000;
  for (;;) {
    const r = await request(url, caPem, LIST, { cert: newCert });
    if (r.status === 200) break;
    assert.ok(Date.now() < deadline, `the new CA was not picked up:\n${srvLogs()}`);
    await new Promise((res) => setTimeout(res, 100));
  }
  await expect401(oldCert);
});
