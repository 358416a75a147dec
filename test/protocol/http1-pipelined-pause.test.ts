// An HTTP/1.1 client over TLS whose request arrives while the server holds back reading (earlier
// responses on the connection not yet sent) is answered, never reset. Node's HTTP/1.1 server pauses
// the connection when queued responses pass the socket's high-water mark; over TLS the rest of
// an already-read request (the TLS records decrypted from the same TCP read) still reached the
// paused parser, which refused it (HPE_PAUSED) and the connection was closed mid-request
// (src/apiserver/http1-tls.ts says how the server avoids it).
//
// The condition, made on purpose: a watch holds the connection's response slot for a few seconds;
// a GET of a 64 KiB object pipelined behind it is answered into a queue (more than the 16 KiB
// high-water mark); then creates, each a 64 KiB body written at once (several TLS records in one
// TCP read), arrive while the connection is paused. The GET's answer is queued within
// milliseconds of the request; the creates are sent over two seconds, so all but the first few
// arrive paused even on a loaded machine.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect as tlsConnect } from 'node:tls';
import { gitTarget, ns, startServer } from '../support/server.js';
import { until, withDeadline } from '../support/deadline.js';

const CREATES = 20;
const CREATE_SPACING_MS = 100;
const WATCH_SECONDS = 5;
const BLOB = 'x'.repeat(64 * 1024);

test('pipelined HTTP/1.1 requests that arrive while the connection is paused are all answered', { timeout: 120_000 }, async (t) => {
  const server = await startServer();
  t.after(() => server.stop());
  const big = gitTarget('big', 'pipe');
  big.metadata.annotations = { 'example.com/blob': BLOB };
  assert.equal((await server.request('POST', ns('pipe'), { body: big })).status, 201);

  const socket = tlsConnect({ host: '127.0.0.1', port: server.port, ca: server.ca, cert: server.cert, key: server.key, ALPNProtocols: ['http/1.1'] });
  t.after(() => socket.destroy());
  let received = '';
  let closed = false;
  let socketError = '';
  socket.on('data', (c: Buffer) => (received += c.toString('latin1')));
  socket.on('error', (e: NodeJS.ErrnoException) => (socketError = e.code ?? e.message));
  socket.on('close', () => (closed = true));
  await withDeadline(new Promise<void>((resolve, reject) => socket.once('secureConnect', resolve).once('error', reject)), 'the TLS handshake');
  assert.equal(socket.alpnProtocol, 'http/1.1');

  const head = (method: string, path: string, extra = '') => `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${extra}\r\n`;
  socket.write(head('GET', `${ns('quiet')}?watch=true&timeoutSeconds=${WATCH_SECONDS}`) + head('GET', `${ns('pipe')}/big`));
  // Status lines anywhere: a JSON body ends without a newline, and none of these bodies holds one.
  const statusLines = () => received.match(/HTTP\/1\.1 \d{3} /g)?.map((l) => l.slice(9, 12)) ?? [];
  // The watch's headers: both GETs were read and are being served.
  await until(() => statusLines().length >= 1 || closed, 'the watch response to start');

  for (let i = 0; i < CREATES && !closed; i++) {
    const body = gitTarget(`c-${i}`, 'pipe');
    body.metadata.annotations = { 'example.com/blob': BLOB };
    const json = JSON.stringify(body);
    socket.write(head('POST', ns('pipe'), `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(json)}\r\n`) + json);
    await new Promise((r) => setTimeout(r, CREATE_SPACING_MS));
  }
  // The watch ends after WATCH_SECONDS; then the GET and every create are answered, in order.
  await until(() => statusLines().length >= 2 + CREATES || closed, `${2 + CREATES} responses on the connection`, 60_000);
  assert.equal(closed, false, `the server closed the connection (client error ${socketError || 'none'}) after responses ${statusLines().join(',')}`);
  assert.deepEqual(statusLines(), ['200', '200', ...Array.from({ length: CREATES }, () => '201')]);
  socket.end();

  const list = await server.get(`${ns('pipe')}?limit=500`);
  assert.equal(list.status, 200);
  assert.deepEqual(
    list.body.items.map((o: any) => o.metadata.name).sort(),
    ['big', ...Array.from({ length: CREATES }, (_, i) => `c-${i}`)].sort(),
  );
});
