// Connections to source clusters, shared per endpoint and credentials, as client-go shares its
// transports: every SourceClient whose kubeconfig names the same origin (scheme, host, port), the
// same TLS trust and the same client credentials uses one Transport, and a Transport carries all
// its requests and watches as streams of a few HTTP/2 sessions (a new session only when the
// server's SETTINGS_MAX_CONCURRENT_STREAMS is reached). A server that does not negotiate h2 (ALPN),
// or an http:// one, gets one keep-alive HTTP/1.1 agent per Transport instead.
//
// Credentials are part of the key (transportKey): two kubeconfigs that differ in any credential
// never share a connection, so a stream always carries the authority of the client that opened it
// (docs/security.md#shared-source-connections). The key is a SHA-256 digest; neither it nor the
// material it is made of is logged.
import { createHash } from 'node:crypto';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import { isIP, type LookupFunction } from 'node:net';
import { connect as h2Connect, constants as h2, type ClientHttp2Session, type ClientHttp2Stream } from 'node:http2';
import { request as httpsRequest, Agent as HttpsAgent } from 'node:https';
import { request as httpRequest, Agent as HttpAgent, type IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import type { KubeConfig } from '../../kubeconfig/kubeconfig.js';

/** TLS material as KubeConfig.applyToHTTPSOptions yields it. */
export interface TlsMaterial {
  ca?: string | Buffer;
  cert?: string | Buffer;
  key?: string | Buffer;
  rejectUnauthorized?: boolean;
  servername?: string;
}

export interface OpenResponse {
  status: number;
  body: Readable;
}

/** Streams per session when the server announces no limit (RFC 9113 recommends at least 100). */
const DEFAULT_STREAM_LIMIT = 100;
/** Never more streams on one session than this, whatever the server allows. */
const MAX_STREAM_LIMIT = 1000;
/** A session without streams for this long is closed (the servers' own idle timeout is 90 s). */
const SESSION_IDLE_MS = 30_000;
/** After a request timed out, the session must answer a PING within this long or it is destroyed. */
const PING_TIMEOUT_MS = 10_000;
/**
 * A session carrying streams (watches) from which nothing was read for this long is PINGed, so a
 * half-open connection is found per connection rather than by each watch's own silence deadline
 * (reflector.ts): that lets the watches run for 30-60 min, as kube-apiserver's own watch timeouts
 * do, without a timer per watch. As client-go's ReadIdleTimeout (30 s), a session that reads
 * (events, the server's bookmarks about once a minute) is not PINGed: every PING is a write, an
 * answer and a cleared timer, three wake-ups of a process at rest. Checked every interval against
 * the bytes read since the last check, so a dead connection is found within twice the interval
 * plus PING_TIMEOUT_MS (70 s; client-go's 30 s + 15 s).
 */
export const KEEPALIVE_PING_MS = 30_000;
/** TCP, TLS and the server's first SETTINGS frame must arrive within this long (client-go dials with 30 s). */
const CONNECT_TIMEOUT_MS = 30_000;

/** Settles like `p`, or rejects when `signal` aborts first (the work behind `p` goes on and is someone else's). */
function abortable<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason ?? new Error('aborted'));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason ?? new Error('aborted'));
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}

/** What identifies a source connection: origin, TLS trust, client credentials, and who chose them. */
export function transportKey(config: KubeConfig): string {
  const cluster = config.getCurrentCluster();
  const user = config.getCurrentUser();
  const origin = cluster ? new URL(cluster.server).origin : '';
  // A tenant's kubeconfig (EgressKubeConfig, kubeconfig.ts) connects under the egress policy; the
  // operator's never shares a connection with it even when both name the same server and user.
  const tenant = 'egress' in config;
  const material = {
    origin,
    tenant,
    ca: cluster?.caData ?? null,
    caFile: cluster?.caFile ?? null,
    skipTLSVerify: cluster?.skipTLSVerify ?? false,
    tlsServerName: cluster?.tlsServerName ?? null,
    user: user ? { ...user, name: undefined } : null,
  };
  return createHash('sha256').update(JSON.stringify(material)).digest('hex');
}

interface Session {
  session: ClientHttp2Session;
  active: number;
  limit: number;
  dead: boolean;
  idleTimer?: NodeJS.Timeout;
  keepalive?: NodeJS.Timeout;
  /** The connection's bytes read at the last keepalive check. */
  readAtCheck?: number;
  /** A PING is waiting for its answer. */
  pinging?: boolean;
}

export class Transport {
  private readonly sessions: Session[] = [];
  private connecting: Promise<Session | undefined> | undefined;
  /** Set once the server turned h2 down: every request goes through `agent`. */
  private http1 = false;
  private agent: HttpsAgent | HttpAgent | undefined;
  private closed = false;
  refs = 0;

  constructor(
    readonly origin: string,
    private readonly lookup?: LookupFunction,
    /** How long a session with streams may read nothing before it is PINGed (tests shorten it). */
    private readonly keepaliveMs = KEEPALIVE_PING_MS,
  ) {
    this.http1 = new URL(origin).protocol !== 'https:';
  }

  /** Open sessions and their streams, for tests and metrics. */
  stats(): { sessions: number; streams: number; http1: boolean } {
    const live = this.sessions.filter((s) => !s.dead);
    return { sessions: live.length, streams: live.reduce((n, s) => n + s.active, 0), http1: this.http1 };
  }

  /** GET `pathAndQuery`; resolves when the response head arrived. `signal` aborts the request at any time. */
  async request(pathAndQuery: string, headers: Record<string, string>, tls: TlsMaterial, signal: AbortSignal): Promise<OpenResponse> {
    if (this.closed) throw new Error('the source transport is closed');
    if (!this.http1) {
      // A connect in progress is shared: a caller that gives up stops waiting, the connect goes on for the others.
      const s = await abortable(this.session(tls), signal);
      if (s) return this.h2Request(s, pathAndQuery, headers, signal);
    }
    return this.h1Request(pathAndQuery, headers, tls, signal);
  }

  /** A request on this transport timed out: a session that does not answer a PING is half-open and goes. */
  suspect(): void {
    for (const s of this.sessions) if (!s.dead) this.ping(s);
  }

  /** PINGs `s` at the next check if nothing was read from it since this one (KEEPALIVE_PING_MS). */
  private keepAlive(s: Session): void {
    // The TLS socket's count of bytes read: every frame, whichever stream it is for.
    const read = () => s.session.socket?.bytesRead ?? -1;
    s.readAtCheck = read();
    s.keepalive = setTimeout(() => {
      if (s.dead || s.active === 0) return;
      if (read() === s.readAtCheck) this.ping(s);
      this.keepAlive(s);
    }, this.keepaliveMs);
    s.keepalive.unref();
  }

  /** A session that does not answer a PING within PING_TIMEOUT_MS is destroyed (its streams end and reconnect). */
  private ping(s: Session): void {
    // One PING at a time: its own timeout decides; more would only pile up (node refuses past ten).
    if (s.pinging) return;
    s.pinging = true;
    const timer = setTimeout(() => this.drop(s, true), PING_TIMEOUT_MS);
    timer.unref();
    try {
      s.session.ping((err) => {
        s.pinging = false;
        clearTimeout(timer);
        if (err) this.drop(s, true);
      });
    } catch {
      s.pinging = false;
      clearTimeout(timer);
      this.drop(s, true);
    }
  }

  close(): void {
    this.closed = true;
    for (const s of [...this.sessions]) this.drop(s, true);
    this.agent?.destroy();
    this.agent = undefined;
  }

  private drop(s: Session, destroy: boolean): void {
    s.dead = true;
    clearTimeout(s.idleTimer);
    clearTimeout(s.keepalive);
    const i = this.sessions.indexOf(s);
    if (i >= 0) this.sessions.splice(i, 1);
    if (destroy) s.session.destroy();
    else s.session.close();
  }

  /** A session with a free stream slot, connecting a new one when all are full; undefined = no h2. */
  private async session(tls: TlsMaterial): Promise<Session | undefined> {
    for (;;) {
      const free = this.sessions.find((s) => !s.dead && s.active < s.limit);
      if (free) return free;
      if (this.http1 || this.closed) return undefined;
      // One connect at a time: many streams started together share the session it makes.
      this.connecting ??= this.connect(tls).finally(() => (this.connecting = undefined));
      const made = await this.connecting;
      if (!made) return undefined;
    }
  }

  private async connect(tls: TlsMaterial): Promise<Session | undefined> {
    const url = new URL(this.origin);
    const host = url.hostname.replace(/^\[|\]$/g, '');
    const socket: TLSSocket = tlsConnect({
      host,
      port: Number(url.port || 443),
      servername: tls.servername ?? (isIP(host) ? undefined : host),
      ca: tls.ca,
      cert: tls.cert,
      key: tls.key,
      rejectUnauthorized: tls.rejectUnauthorized ?? true,
      ALPNProtocols: ['h2', 'http/1.1'],
      lookup: this.lookup,
    });
    const timer = setTimeout(() => socket.destroy(new Error(`no TLS connection within ${CONNECT_TIMEOUT_MS} ms`)), CONNECT_TIMEOUT_MS);
    timer.unref();
    try {
      await new Promise<void>((resolve, reject) => {
        socket.once('secureConnect', () => {
          socket.off('error', reject);
          resolve();
        });
        socket.once('error', reject);
      });
    } finally {
      clearTimeout(timer);
    }
    if (socket.alpnProtocol !== 'h2') {
      // The server speaks HTTP/1.1 only: remember it, and use the keep-alive agent from now on.
      socket.destroy();
      this.http1 = true;
      return undefined;
    }
    const session = h2Connect(this.origin, { createConnection: () => socket });
    const s: Session = { session, active: 0, limit: DEFAULT_STREAM_LIMIT, dead: false };
    await new Promise<void>((resolve, reject) => {
      const fail = (e: Error) => reject(e);
      const settingsTimer = setTimeout(() => fail(new Error(`no HTTP/2 SETTINGS within ${CONNECT_TIMEOUT_MS} ms`)), CONNECT_TIMEOUT_MS);
      settingsTimer.unref();
      session.once('error', fail);
      session.once('close', () => fail(new Error('the HTTP/2 session closed before its SETTINGS')));
      session.once('remoteSettings', (settings) => {
        clearTimeout(settingsTimer);
        session.off('error', fail);
        const announced = settings.maxConcurrentStreams;
        s.limit = Math.max(1, Math.min(announced && announced > 0 ? announced : DEFAULT_STREAM_LIMIT, MAX_STREAM_LIMIT));
        resolve();
      });
    }).catch((e) => {
      session.destroy();
      throw e;
    });
    // A session that errs, is told to go away or closes takes no new streams; its open ones end
    // with it and their owners (the reflector) reconnect.
    session.on('error', () => this.drop(s, true));
    session.on('goaway', () => this.drop(s, false));
    session.on('close', () => this.drop(s, false));
    this.sessions.push(s);
    this.idle(s);
    return s;
  }

  /** No streams: unref (an idle source connection keeps no process alive) and close after a while. */
  private idle(s: Session): void {
    s.session.unref();
    clearTimeout(s.keepalive);
    s.keepalive = undefined;
    clearTimeout(s.idleTimer);
    s.idleTimer = setTimeout(() => {
      if (s.active === 0) this.drop(s, false);
    }, SESSION_IDLE_MS);
    s.idleTimer.unref();
  }

  private h2Request(s: Session, pathAndQuery: string, headers: Record<string, string>, signal: AbortSignal): Promise<OpenResponse> {
    let stream: ClientHttp2Stream;
    try {
      stream = s.session.request({ [h2.HTTP2_HEADER_METHOD]: 'GET', [h2.HTTP2_HEADER_PATH]: pathAndQuery, ...headers }, { endStream: true, signal });
    } catch (e) {
      this.drop(s, true);
      return Promise.reject(e);
    }
    if (s.active++ === 0) {
      clearTimeout(s.idleTimer);
      s.session.ref();
      this.keepAlive(s);
    }
    stream.once('close', () => {
      if (--s.active === 0 && !s.dead) this.idle(s);
    });
    // An aborted or reset stream emits 'error' even when its reader already left: never an uncaught exception.
    stream.on('error', () => undefined);
    return new Promise<OpenResponse>((resolve, reject) => {
      stream.once('error', reject);
      stream.once('response', (head) => {
        stream.off('error', reject);
        resolve({ status: Number(head[h2.HTTP2_HEADER_STATUS]), body: stream });
      });
    });
  }

  private h1Request(pathAndQuery: string, headers: Record<string, string>, tls: TlsMaterial, signal: AbortSignal): Promise<OpenResponse> {
    const https = new URL(this.origin).protocol === 'https:';
    this.agent ??= https
      ? new HttpsAgent({ keepAlive: true, ca: tls.ca, cert: tls.cert, key: tls.key, rejectUnauthorized: tls.rejectUnauthorized, servername: tls.servername, lookup: this.lookup })
      : new HttpAgent({ keepAlive: true, lookup: this.lookup });
    return new Promise<OpenResponse>((resolve, reject) => {
      const req = (https ? httpsRequest : httpRequest)(new URL(pathAndQuery, this.origin), { method: 'GET', headers, agent: this.agent, signal }, (res: IncomingMessage) => {
        res.on('error', () => undefined); // as for HTTP/2 streams: an abort is never an uncaught exception
        resolve({ status: res.statusCode ?? 0, body: res });
      });
      req.on('error', reject);
      req.end();
    });
  }
}

/** Transports by transportKey, counted by their users; the last user's release closes one. */
export class TransportPool {
  private readonly transports = new Map<string, Transport>();

  acquire(config: KubeConfig): Transport {
    const key = transportKey(config);
    let t = this.transports.get(key);
    if (!t) {
      const server = config.getCurrentCluster()?.server ?? '';
      const lookup = (config as { egress?: { lookup: LookupFunction } }).egress?.lookup;
      t = new Transport(new URL(server).origin, lookup);
      this.transports.set(key, t);
    }
    t.refs++;
    return t;
  }

  release(t: Transport): void {
    if (--t.refs > 0) return;
    for (const [k, v] of this.transports) if (v === t) this.transports.delete(k);
    t.close();
  }

  /** Every live transport's sessions and streams (tests, metrics). */
  stats(): { transports: number; sessions: number; streams: number } {
    let sessions = 0;
    let streams = 0;
    for (const t of this.transports.values()) {
      const s = t.stats();
      sessions += s.sessions;
      streams += s.streams;
    }
    return { transports: this.transports.size, sessions, streams };
  }
}

/** The process's pool: every SourceClient not given another shares it (client-go's transport cache is process-wide too). */
export const sharedTransports = new TransportPool();
