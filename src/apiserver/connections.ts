// Connection hygiene before authentication: anyone who can reach the port can open connections,
// so none may hold a file descriptor without doing work. TLS handshakes are bounded
// (--tls-handshake-timeout); an HTTP/2 session with no open stream, an HTTP/1.1 connection with
// no request in progress, and a request whose body never finishes are closed after
// --idle-connection-timeout (kube-apiserver closes idle HTTP/2 connections after 90 s); streams per
// HTTP/2 session are capped (--http2-max-streams-per-connection); TLS handshakes in progress are
// bounded per client address and in total (--max-tls-handshakes-per-address, --max-tls-handshakes,
// handshakes.ts). Long-running
// requests (watches) are not idle: their connections stay open however quiet they are. HTTP/1.1
// over TLS is parsed from the socket's stream, so that pausing a connection holds (http1-tls.ts).
import type { Http2SecureServer, Http2Session, ServerHttp2Stream } from 'node:http2';
import { constants } from 'node:http2';
import type { Socket } from 'node:net';
import type { Logger } from '../metrics/logger.js';
import * as status from '../api/status.js';
import { gateHandshakes } from './handshakes.js';
import { parseHTTP1FromStream } from './http1-tls.js';

export interface ConnectionLimits {
  /** Idle HTTP/2 sessions and HTTP/1.1 connections are closed after this long (ms). */
  idleTimeoutMs: number;
  /** A TLS handshake must complete within this long (ms). */
  handshakeTimeoutMs: number;
  /** SETTINGS_MAX_CONCURRENT_STREAMS announced to (and enforced on) HTTP/2 clients. */
  maxStreamsPerConnection: number;
  /** TLS handshakes in progress per client address; more connections wait their turn (0: no bound). */
  maxHandshakesPerAddress: number;
  /** TLS handshakes in progress over all addresses; more connections wait their turn (0: no bound). */
  maxHandshakes: number;
}

export const DEFAULT_CONNECTION_LIMITS: ConnectionLimits = {
  idleTimeoutMs: 90_000,
  handshakeTimeoutMs: 10_000,
  maxStreamsPerConnection: 1000,
  maxHandshakesPerAddress: 16,
  maxHandshakes: 64,
};

/** Options merged into the TLS/HTTP2 server's options. */
export function connectionServerOptions(limits: ConnectionLimits): Record<string, unknown> {
  return {
    handshakeTimeout: limits.handshakeTimeoutMs,
    // nghttp2 refuses streams beyond the announced limit (RST_STREAM REFUSED_STREAM). Memory per
    // session is bounded by Node's maxSessionMemory (10 MB by default).
    settings: { maxConcurrentStreams: limits.maxStreamsPerConnection },
  };
}

const openStreams = new WeakMap<Http2Session, number>();

/** Closes a session at once: GOAWAY, then the socket, without waiting for a peer that does not read. */
function closeSession(session: Http2Session): void {
  if (session.destroyed) return;
  session.close();
  // A peer that never reads keeps a graceful close pending; the socket must go regardless.
  setTimeout(() => session.destroy(), 1000).unref();
}

/** How long after the first count the counts of closed idle connections and failed handshakes are logged. */
const REPORT_MS = 60_000;

export function guardConnections(server: Http2SecureServer, limits: ConnectionLimits, log: Logger, reportMs = REPORT_MS): void {
  const idle = limits.idleTimeoutMs;
  const gate = gateHandshakes(server as never, limits.maxHandshakesPerAddress, limits.maxHandshakes, limits.handshakeTimeoutMs);
  // A paused HTTP/1.1 connection must not see a request cut short (http1-tls.ts).
  parseHTTP1FromStream(server as never);
  let waitedOutBefore = 0;
  let closedIdle = 0;
  // Handshakes that time out or fail are the client's problem; count them, never log each.
  let handshakeFailures = 0;
  // The counts are logged a minute after the first of them, not every minute: a server nobody
  // connects to has no timer here (every wake-up of an idle process is CPU at rest:
  // docs/architecture.md, "At rest and at start-up"). A connection arms it too, since the handshake
  // gate counts its waits (handshakes.ts); a count made after a report waits for the next one.
  let report: NodeJS.Timeout | undefined;
  const flush = (): void => {
    report = undefined;
    const waitedOut = gate.waitedOut() - waitedOutBefore;
    if (closedIdle > 0 || handshakeFailures > 0 || waitedOut > 0) {
      log.debug('closed idle connections', { idle: closedIdle, tlsHandshakeFailures: handshakeFailures, waitedForHandshakeSlot: waitedOut });
      closedIdle = 0;
      handshakeFailures = 0;
      waitedOutBefore += waitedOut;
    }
  };
  const armReport = (): void => {
    if (report) return;
    report = setTimeout(flush, reportMs);
    report.unref();
  };
  server.on('session', (session: Http2Session) => {
    openStreams.set(session, 0);
    // `on`, not setTimeout's callback (a `once`): a session found busy is checked again next time.
    session.setTimeout(idle);
    session.on('timeout', () => {
      // Only a session without streams is idle; a quiet watch is not.
      if ((openStreams.get(session) ?? 0) === 0) {
        closedIdle++;
        armReport();
        closeSession(session);
      }
    });
    session.on('stream', (stream: ServerHttp2Stream) => {
      openStreams.set(session, (openStreams.get(session) ?? 0) + 1);
      stream.once('close', () => openStreams.set(session, Math.max(0, (openStreams.get(session) ?? 1) - 1)));
      // A request whose body never completes is reset; once the request is in, the stream
      // (a watch, say) may be as quiet as it likes.
      stream.setTimeout(idle);
      stream.on('timeout', () => {
        if (!requestReceived(stream) && !stream.closed) stream.close(constants.NGHTTP2_CANCEL);
      });
    });
  });
  // HTTP/1.1 connections (the allowHTTP1 fallback): the socket times out after `idle` without
  // traffic. Destroy it unless a response is in progress (a watch over HTTP/1.1).
  server.setTimeout(idle);
  server.on('timeout', (target: Socket | Http2Session) => {
    if (isSession(target)) return; // handled by the session's own timeout above
    const busy = (target as unknown as { _httpMessage?: unknown })._httpMessage;
    if (!busy) {
      closedIdle++;
      armReport();
      target.destroy();
    }
  });
  server.on('tlsClientError', () => {
    handshakeFailures++;
    armReport();
  });
  server.on('connection', armReport);
  server.once('close', () => clearTimeout(report));
}

/** The client has sent the whole request (END_STREAM seen), whether or not a handler read it. */
function requestReceived(stream: ServerHttp2Stream): boolean {
  return stream.endAfterHeaders || stream.readableEnded || (stream as unknown as { _readableState?: { ended?: boolean } })._readableState?.ended === true;
}

function isSession(x: unknown): x is Http2Session {
  return typeof (x as Http2Session).goaway === 'function';
}

/**
 * fastify's clientErrorHandler: HTTP/1.1 requests the parser refuses (headers too large, garbage,
 * too slow) get a metav1.Status body like every other error, then the connection is closed.
 */
export function clientErrorHandler(err: NodeJS.ErrnoException, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const code = err.code === 'HPE_HEADER_OVERFLOW' ? 431 : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
  const body = JSON.stringify(status.malformedHTTP(code).status);
  const reason = code === 431 ? 'Request Header Fields Too Large' : code === 408 ? 'Request Timeout' : 'Bad Request';
  if (socket.writable) {
    socket.write(`HTTP/1.1 ${code} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
  }
  socket.destroy();
}

/**
 * fastify's `schemaController` option for our servers. Requests are validated by our own lazily
 * compiled schemas (src/api/validation.ts) and no route declares a fastify schema, but without this
 * option fastify requires @fastify/ajv-compiler and @fastify/fast-json-stringify-compiler (ajv,
 * ajv-formats: ~90 CommonJS modules, ~0.08 CPU-s) while it starts, before /readyz can answer
 * (test/unit/lazy-startup.test.ts). A route that declares a schema fails loudly at start-up.
 */
export const NO_ROUTE_SCHEMAS = {
  compilersFactory: {
    buildValidator: () => () => {
      throw new Error('fastify route schemas are not used: requests are validated by src/api/validation.ts');
    },
    buildSerializer: () => () => {
      throw new Error('fastify response schemas are not used: responses are serialized by src/apiserver/respond.ts');
    },
  },
};
