// HTTP/1.1 over TLS (the allowHTTP1 fallback): keep node's HTTP/1.1 parser behind the socket's
// stream, so that pausing the socket really stops what reaches the parser.
//
// Node's HTTP/1.1 server stops reading a connection whose earlier responses have not drained
// (parserOnIncoming in node v20's lib/_http_server.js: `socket.pause()`, then `parser.pause()`
// once the current chunk is parsed) and resumes when they have (socketOnDrain). For speed the
// parser "consumes" the socket's native handle: bytes go from the handle to the parser in C++,
// and a pause of the socket is carried out by `readStop()` on the handle (onSocketPause). Over TLS
// that handle is a TLSWrap, and readStop() stops only the TCP reads beneath it: the records already
// decrypted from the same TCP read are still handed over one by one (TLSWrap::ClearOut in node's
// src/crypto/crypto_tls.cc loops until SSL_read has nothing left). The first of them that reaches
// the paused parser makes it answer HPE_PAUSED, which node reports as a client error, and the
// connection was closed in the middle of a valid request: an HTTP/1.1 client that sent a request
// of a few TLS records (a 64 KiB create) while a previous response on the connection was still
// queued saw ECONNRESET (test/protocol/http1-pipelined-pause.test.ts).
//
// Node's own fix of this family of bugs for plain TCP (nodejs/node pull request 3342) made the
// pause stop the handle; nothing stops TLSWrap's loop. Node's server gives its parser back to the
// socket's stream whenever someone listens for 'data' (generateSocketListenerWrapper and unconsume
// in lib/_http_server.js): the parser then receives 'data' events, and a paused stream buffers
// instead of emitting them, however many records one TCP read held. HTTP/2 sessions are not
// affected (nghttp2 does its own flow control), so only HTTP/1.1 connections are switched.
//
// The same connections close gracefully ("lingering close"). A response that ends the connection
// (`Connection: close`, as fastify answers a body it refuses: 413 on its Content-Length) is often
// sent while the client is still sending that body. Node then calls `socket.destroySoon()`
// (resOnFinish in lib/_http_server.js), which closes the descriptor as soon as the answer is
// written; the body bytes still arriving meet a closed socket, the kernel answers them with a TCP
// reset, and the client's kernel drops what it had received and not yet read: the answer itself
// (node's own client saw EPIPE instead of the 413; test/protocol/refused-body-close.test.ts). Go's
// net/http half-closes and waits (closeWriteAndWait, rstAvoidanceDelay in net/http/server.go),
// Apache reads and discards (lingering_close). Here: half-close (the answer, TLS close_notify and
// FIN go out), read and discard for at most LINGER_MS or LINGER_BYTES, then close; sooner when the
// client closes its side.
import type { Server as NetServer } from 'node:net';
import type { TLSSocket } from 'node:tls';

function ignore(): void {}

/** How long a closing connection keeps reading (and discarding) after its last answer. */
export const LINGER_MS = 1_000;
/** How much a closing connection reads and discards before it closes anyway. */
export const LINGER_BYTES = 4 * 1024 * 1024;

/** Ends the writing side at once; keeps reading, bounded, so the client reads the last answer. */
function lingeringClose(this: TLSSocket): void {
  const socket = this;
  if (socket.destroyed) return;
  let discarded = 0;
  const close = () => socket.destroy();
  const timer = setTimeout(close, LINGER_MS);
  timer.unref();
  socket.once('close', () => clearTimeout(timer));
  // A client that has read everything closes its side; the lingering ends with it.
  socket.once('end', close);
  // Nothing read from now on is a request: the parser (node's socketOnData) stops here, so a
  // request pipelined behind the refused body is never run on a connection that said it closes.
  socket.removeAllListeners('data');
  socket.on('data', (chunk: Buffer) => {
    discarded += chunk.length;
    if (discarded > LINGER_BYTES) close();
  });
  socket.end();
}

/**
 * Installs the switch on a TLS (or HTTP/2 secure, allowHTTP1) server. Call after the server is
 * constructed: its own 'secureConnection' listener, which attaches the HTTP/1.1 parser, runs first.
 */
export function parseHTTP1FromStream(server: NetServer): void {
  server.on('secureConnection', (socket: TLSSocket) => {
    if (socket.alpnProtocol === 'h2') return;
    // Set by node's HTTP/1.1 connection listener; absent when no HTTP/1.1 server took the socket.
    if (!(socket as unknown as { parser?: unknown }).parser) return;
    socket.on('data', ignore);
    (socket as unknown as { destroySoon: () => void }).destroySoon = lingeringClose;
  });
}
