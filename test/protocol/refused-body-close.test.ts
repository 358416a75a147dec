// A client still sending a body the server has refused (413: Content-Length over the limit) reads
// the refusal, never a reset. The server answers before reading the body and closes the
// connection (it will not read megabytes it refused). If it closed at once, the body bytes the
// client keeps sending would reach a closed socket, the server's kernel would answer them with a
// TCP reset, and the client's kernel drops whatever it had received and not yet read: the 413
// itself. Node's own client lost the answer that way under load (EPIPE in
// test/protocol/bad-input.test.ts). src/apiserver/http1-tls.ts says how the server closes.
//
// The condition, made on purpose: a raw TLS client sends the head of a 3 MiB + 1 create and the
// first 64 KiB of its body, stops reading its socket (the answer waits in the kernel), keeps
// writing body for a while after the server has answered, and only then reads.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect as tlsConnect } from 'node:tls';
import { gitTarget, ns, startServer } from '../support/server.js';
import { until, withDeadline } from '../support/deadline.js';

const LIMIT = 3 * 1024 * 1024;
const CHUNK = Buffer.alloc(64 * 1024, 0x61);

test('a client still sending a refused body reads the 413, not a reset', { timeout: 120_000 }, async (t) => {
  const server = await startServer();
  t.after(() => server.stop());

  for (let round = 0; round < 3; round++) {
    const socket = tlsConnect({ host: '127.0.0.1', port: server.port, ca: server.ca, cert: server.cert, key: server.key, ALPNProtocols: ['http/1.1'] });
    let received = '';
    let socketError = '';
    let closed = false;
    socket.on('data', (c: Buffer) => (received += c.toString('latin1')));
    socket.on('error', (e: NodeJS.ErrnoException) => (socketError = e.code ?? e.message));
    socket.on('close', () => (closed = true));
    await withDeadline(new Promise<void>((resolve, reject) => socket.once('secureConnect', resolve).once('error', reject)), 'the TLS handshake');
    assert.equal(socket.alpnProtocol, 'http/1.1');

    socket.write(`POST ${ns('refused')} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${LIMIT + 1}\r\n\r\n`);
    socket.write(CHUNK);
    // Stop reading: the answer stays in this side's kernel buffer until resume().
    socket.pause();
    // Keep sending body for 600 ms after the server has surely answered (it answers on the head).
    await new Promise((r) => setTimeout(r, 200));
    const sendUntil = Date.now() + 600;
    while (Date.now() < sendUntil && !closed && !socket.destroyed) {
      socket.write(CHUNK);
      await new Promise((r) => setTimeout(r, 20));
    }
    socket.resume();
    await until(() => closed || /\r\n\r\n\{[^]*\}$/.test(received), 'the answer or the close', 30_000);
    socket.destroy();
    const statusLine = received.split('\r\n', 1)[0];
    assert.equal(statusLine, 'HTTP/1.1 413 Payload Too Large', `round ${round}: received ${JSON.stringify(received.slice(0, 200))}, socket error ${socketError || 'none'}`);
    const body = JSON.parse(received.slice(received.indexOf('\r\n\r\n') + 4));
    assert.equal(body.reason, 'RequestEntityTooLarge');
    assert.match(received, /\r\nconnection: close\r\n/i);
  }
});

test('a request pipelined behind a refused body is never run', { timeout: 120_000 }, async (t) => {
  const server = await startServer();
  t.after(() => server.stop());
  const socket = tlsConnect({ host: '127.0.0.1', port: server.port, ca: server.ca, cert: server.cert, key: server.key, ALPNProtocols: ['http/1.1'] });
  t.after(() => socket.destroy());
  let received = '';
  let closed = false;
  socket.on('data', (c: Buffer) => (received += c.toString('latin1')));
  socket.on('error', () => {});
  socket.on('close', () => (closed = true));
  await withDeadline(new Promise<void>((resolve, reject) => socket.once('secureConnect', resolve).once('error', reject)), 'the TLS handshake');

  const json = JSON.stringify(gitTarget('pipelined', 'refused'));
  socket.write(`POST ${ns('refused')} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${LIMIT + 1}\r\n\r\n`);
  socket.write(Buffer.alloc(LIMIT + 1, 0x61));
  socket.write(`POST ${ns('refused')} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(json)}\r\n\r\n${json}`);
  await until(() => closed, 'the server to close the connection', 30_000);
  assert.deepEqual(received.match(/HTTP\/1\.1 \d{3} /g), ['HTTP/1.1 413 ']);
  assert.equal((await server.get(`${ns('refused')}/pipelined`)).status, 404);
});
