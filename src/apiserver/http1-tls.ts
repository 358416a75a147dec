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
import type { Server as NetServer } from 'node:net';
import type { TLSSocket } from 'node:tls';

function ignore(): void {}

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
  });
}
