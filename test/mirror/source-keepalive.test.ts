// The source transport's keepalive (src/controllers/source/transport.ts): a session carrying
// streams is PINGed only when nothing was read from it since the last check, as client-go's
// ReadIdleTimeout does. A watch that hears events or bookmarks costs no PING (each is a write, an
// answer and a cleared timer: wake-ups of a process at rest), a silent one is still PINGed, and a
// server that stops answering is dropped. Against a real HTTP/2 TLS server in this process, with the
// check interval shortened to 200 ms.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createSecureServer, type ServerHttp2Stream, type ServerHttp2Session } from 'node:http2';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { selfSignedServerCertificate } from '../../src/certs/pki.js';
import { Transport } from '../../src/controllers/source/transport.js';
import { until, withDeadline } from '../support/deadline.js';

const INTERVAL_MS = 200;

async function h2Server(t: { after(fn: () => unknown): void }) {
  const tls = selfSignedServerCertificate('localhost', ['localhost']);
  const sessions: ServerHttp2Session[] = [];
  const pings: number[] = [];
  const streams: ServerHttp2Stream[] = [];
  const server = createSecureServer({ key: tls.keyPem, cert: tls.certPem });
  server.on('session', (s) => {
    sessions.push(s);
    s.on('ping', () => pings.push(Date.now()));
  });
  server.on('stream', (s) => {
    s.respond({ ':status': 200 });
    s.write('{"type":"ADDED"}\n');
    streams.push(s);
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  t.after(() => {
    for (const s of sessions) s.destroy();
    server.close();
  });
  return { url: `https://127.0.0.1:${(server.address() as AddressInfo).port}`, ca: tls.certPem, pings, streams, sessions };
}

const sleep = (ms: number) => new Promise((ok) => setTimeout(ok, ms));

/** A watch through our Transport (check interval INTERVAL_MS) to `url`, its body read as it comes. */
async function watch(t: { after(fn: () => unknown): void }, url: string, ca: string) {
  const transport = new Transport(url, undefined, INTERVAL_MS);
  t.after(() => transport.close());
  const abort = new AbortController();
  t.after(() => abort.abort());
  const res = await transport.request('/api/v1/configmaps?watch=1', {}, { ca, servername: 'localhost' }, abort.signal);
  assert.equal(res.status, 200);
  res.body.on('data', () => undefined);
  res.body.on('error', () => undefined);
  return { transport, body: res.body };
}

test('a session that reads is not PINGed; a silent one is, every other check', { timeout: 30_000 }, async (t) => {
  const srv = await h2Server(t);
  await watch(t, srv.url, srv.ca);
  await until(() => srv.streams.length === 1, 'the stream on the server', 5_000);
  const stream = srv.streams[0]!;

  // Events every 50 ms for 10 intervals: nothing to PING.
  const events = setInterval(() => stream.write('{"type":"MODIFIED"}\n'), 50);
  await sleep(10 * INTERVAL_MS);
  clearInterval(events);
  assert.equal(srv.pings.length, 0, `PINGs while the watch read every 50 ms: ${srv.pings.length}`);

  // Silent for 10 intervals: a check that read nothing PINGs; the answer is read before the next
  // check, which therefore does not, so one PING every other interval (5, give or take the edges).
  const silentFrom = Date.now();
  await sleep(10 * INTERVAL_MS);
  const silent = srv.pings.filter((at) => at >= silentFrom).length;
  assert.ok(silent >= 3 && silent <= 6, `PINGs while the watch was silent for 10 intervals: ${silent}`);
});

test('a connection that stops carrying anything (half-open) is dropped after an unanswered PING: its streams end', { timeout: 30_000 }, async (t) => {
  const srv = await h2Server(t);
  // A TCP relay in between, which can freeze: what a cut network path looks like to both ends.
  const pairs: Array<[Socket, Socket]> = [];
  const relay = createServer((c) => {
    const u = connect((new URL(srv.url).port as unknown as number) * 1, '127.0.0.1');
    c.pipe(u);
    u.pipe(c);
    c.on('error', () => undefined);
    u.on('error', () => undefined);
    pairs.push([c, u]);
  });
  await new Promise<void>((ok) => relay.listen(0, '127.0.0.1', ok));
  t.after(() => {
    for (const [c, u] of pairs) [c, u].forEach((x) => x.destroy());
    relay.close();
  });
  const { transport, body } = await watch(t, `https://127.0.0.1:${(relay.address() as AddressInfo).port}`, srv.ca);
  const ended = new Promise<void>((ok) => body.once('close', () => ok()));
  await until(() => pairs.length === 1 && srv.streams.length === 1, 'the stream through the relay', 5_000);
  const [c, u] = pairs[0]!;
  c.unpipe(u);
  u.unpipe(c);
  c.pause();
  u.pause();
  const frozenAt = Date.now();
  // Found within two checks and the PING timeout (10 s).
  await withDeadline(ended, 'the stream ending after the PING went unanswered', 15_000);
  const ms = Date.now() - frozenAt;
  assert.ok(ms >= 10_000, `dropped ${ms} ms after the freeze: not before the PING timeout`);
  assert.equal(transport.stats().sessions, 0);
});
