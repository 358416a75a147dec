// A small client for the hosting cluster: JSON POST/GET and one watch, over a keep-alive agent
// built once from the kubeconfig's TLS material. kubeconfig/kubeconfig.ts loads the kubeconfig
// (files, in-cluster, token files that rotate); we make the calls ourselves so the uncached
// authorization path costs one request on a warm connection and nothing else.
import http from 'node:http';
import https from 'node:https';
import { KubeConfig } from '../kubeconfig/kubeconfig.js';
import type { HostingClusterOptions } from './options.js';

export class HostingError extends Error {
  constructor(message: string, readonly status?: number) {
    super(message);
  }
}

export interface HostingResponse {
  status: number;
  body: unknown;
}

/** How long the Authorization header from the kubeconfig is reused before asking it again (token files rotate). */
const AUTH_HEADER_TTL_MS = 60_000;

/**
 * How long a keep-alive connection to the hosting cluster stays open unused. The calls of a
 * start-up (the ConfigMap, the APIService, SubjectAccessReviews) open several connections at once;
 * kept without end, each was closed by the other side whenever it chose (a minute and a half later
 * by a sandbox), a wake-up of an idle process for each (docs/architecture.md, "At rest and at
 * start-up"), and descriptors held meanwhile. client-go's transport keeps them 90 s.
 */
export const HOSTING_IDLE_SOCKET_MS = 30_000;

export class HostingClient {
  private authHeader: { value?: string; expires: number } = { expires: 0 };

  private readonly agents = new Map<string, http.Agent>();

  private constructor(
    private readonly kc: KubeConfig,
    private readonly base: URL,
    private readonly tls: https.RequestOptions,
    readonly timeoutMs: number,
    /** Where a logical cluster's calls go (--kcp-server-url); undefined = the kubeconfig's server. */
    private readonly kcpBase?: URL,
    private readonly idleSocketMs = HOSTING_IDLE_SOCKET_MS,
  ) {}

  static async create(opts: HostingClusterOptions): Promise<HostingClient> {
    const kc = new KubeConfig();
    if (opts.kubeconfig) kc.loadFromFile(opts.kubeconfig);
    else kc.loadFromCluster();
    const cluster = kc.getCurrentCluster();
    if (!cluster) throw new Error(`hosting cluster: ${opts.kubeconfig ?? 'in-cluster config'} names no current cluster`);
    const base = new URL(cluster.server);
    const probe: https.RequestOptions = {};
    await kc.applyToHTTPSOptions(probe);
    const tls: https.RequestOptions = {
      ca: probe.ca, cert: probe.cert, key: probe.key,
      rejectUnauthorized: probe.rejectUnauthorized, servername: probe.servername,
    };
    const client = new HostingClient(kc, base, tls, opts.timeoutMs, opts.kcpServerURL ? new URL(opts.kcpServerURL) : undefined, opts.idleSocketMs);
    client.rememberAuth(probe);
    return client;
  }

  private rememberAuth(o: https.RequestOptions): void {
    const h = (o.headers ?? {}) as Record<string, string | undefined>;
    const basic = typeof o.auth === 'string' ? `Basic ${Buffer.from(o.auth).toString('base64')}` : undefined;
    this.authHeader = { value: h.Authorization ?? h.authorization ?? basic, expires: Date.now() + AUTH_HEADER_TTL_MS };
  }

  private async authorization(): Promise<string | undefined> {
    if (Date.now() >= this.authHeader.expires) {
      const o: https.RequestOptions = {};
      await this.kc.applyToHTTPSOptions(o);
      (o.agent as http.Agent | undefined)?.destroy();
      this.rememberAuth(o);
    }
    return this.authHeader.value;
  }

  /**
   * The URL of `path` on the hosting cluster, or in logical cluster `cluster` (a kcp workspace):
   * `<kcp URL or the kubeconfig's server>/clusters/<cluster><path>`. A path prefix in either URL
   * (a proxy) is kept.
   */
  url(path: string, cluster?: string): URL {
    const base = cluster === undefined ? this.base : (this.kcpBase ?? this.base);
    const prefix = base.pathname.replace(/\/$/, '') + (cluster === undefined ? '' : `/clusters/${encodeURIComponent(cluster)}`);
    return new URL(prefix + path, base);
  }

  /**
   * One keep-alive agent per scheme (the kcp URL may differ from the kubeconfig's), with the
   * kubeconfig's TLS material. `timeout` is the idle socket's: the agent closes a free connection
   * after it (request() sets each call's own timeout while the socket is in use).
   */
  private agentFor(u: URL): http.Agent {
    let a = this.agents.get(u.protocol);
    if (!a) {
      const idle = { keepAlive: true, maxSockets: 64, timeout: this.idleSocketMs };
      a = u.protocol === 'http:' ? new http.Agent(idle) : new https.Agent({ ...idle, ...this.tls } as https.AgentOptions);
      this.agents.set(u.protocol, a);
    }
    return a;
  }

  /**
   * One JSON call with the configured timeout, to the hosting cluster or (with `cluster`) to that
   * logical cluster. Non-2xx answers throw HostingError with the status. PATCH sends a JSON merge
   * patch (the event recorder's series updates, src/controllers/events/sinks.ts).
   */
  async request(method: 'GET' | 'POST' | 'PUT' | 'PATCH', path: string, body?: unknown, cluster?: string): Promise<HostingResponse> {
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const auth = await this.authorization();
    const u = this.url(path, cluster);
    const where = cluster === undefined ? path : `/clusters/${cluster}${path}`;
    const mod = u.protocol === 'http:' ? http : https;
    return new Promise<HostingResponse>((resolve, reject) => {
      const headers: Record<string, string | number> = { Accept: 'application/json' };
      if (auth) headers.Authorization = auth;
      if (payload) {
        headers['Content-Type'] = method === 'PATCH' ? 'application/merge-patch+json' : 'application/json';
        headers['Content-Length'] = payload.length;
      }
      const req = mod.request(u, { method, headers, agent: this.agentFor(u), ...this.tls }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', (e) => reject(new HostingError(`${method} ${where}: ${e.message}`)));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          const status = res.statusCode ?? 0;
          if (status < 200 || status > 299) {
            reject(new HostingError(`${method} ${where}: HTTP ${status}: ${statusMessage(text)}`, status));
            return;
          }
          try {
            resolve({ status, body: text ? JSON.parse(text) : undefined });
          } catch {
            reject(new HostingError(`${method} ${where}: answer is not JSON`, status));
          }
        });
      });
      req.setTimeout(this.timeoutMs, () => {
        req.destroy(new HostingError(`${method} ${where}: no answer within ${this.timeoutMs / 1000}s`));
      });
      req.on('error', (e) => reject(e instanceof HostingError ? e : new HostingError(`${method} ${where}: ${e.message}`)));
      req.end(payload);
    });
  }

  /**
   * Streams a watch (`?watch=true`), on the hosting cluster or in logical cluster `cluster`, calling
   * onEvent per JSON line; resolves when the stream ends. Not bounded by the request timeout
   * (watches are long), only by `abort` and, with `silentMs`, by a connection on which nothing
   * arrived for that long (rejected: a half-open connection never ends by itself).
   */
  async watch(path: string, onEvent: (ev: { type: string; object: unknown }) => void, abort: AbortSignal, cluster?: string, silentMs?: number): Promise<void> {
    const auth = await this.authorization();
    const u = this.url(path, cluster);
    const mod = u.protocol === 'http:' ? http : https;
    await new Promise<void>((resolve, reject) => {
      const headers: Record<string, string> = { Accept: 'application/json' };
      if (auth) headers.Authorization = auth;
      /** Why this side ended the stream: it ends as a failure, not as the server's clean end. */
      let failure: Error | undefined;
      const fail = (e: Error): void => {
        failure ??= e;
        req.destroy(failure);
      };
      const ended = (): void => (failure ? reject(failure) : resolve());
      const req = mod.request(u, { method: 'GET', headers, signal: abort, ...this.tls }, (res) => {
        if ((res.statusCode ?? 0) !== 200) {
          res.resume();
          reject(new HostingError(`watch ${path}: HTTP ${res.statusCode}`, res.statusCode));
          return;
        }
        let buf = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          buf += chunk;
          let nl: number;
          while ((nl = buf.indexOf('\n')) >= 0 && !failure) {
            const line = buf.slice(0, nl).trim();
            buf = buf.slice(nl + 1);
            if (!line) continue;
            let ev: { type: string; object: unknown };
            try {
              ev = JSON.parse(line) as { type: string; object: unknown };
            } catch {
              // The caller starts over (its re-read repairs what this stream would have told).
              fail(new HostingError(`watch ${path}: a line of the stream is not JSON`));
              return;
            }
            try {
              onEvent(ev);
            } catch {
              // The caller's own failure (each handles its errors): the stream goes on.
            }
          }
        });
        res.on('end', ended);
        res.on('error', (e) => reject(failure ?? e));
        res.on('aborted', ended);
      });
      if (silentMs !== undefined) {
        // The socket's idle timer: re-armed by any byte read, so a live watch never sees it.
        req.setTimeout(silentMs, () => fail(new HostingError(`watch ${path}: nothing received within ${Math.round(silentMs / 1000)}s`)));
      }
      req.on('error', (e) => (abort.aborted ? resolve() : reject(failure ?? e)));
      req.end();
    });
  }

  close(): void {
    for (const a of this.agents.values()) a.destroy();
  }
}

function statusMessage(text: string): string {
  try {
    const s = JSON.parse(text) as { message?: unknown };
    if (typeof s.message === 'string') return s.message;
  } catch {
    // not a Status
  }
  return text.slice(0, 200);
}
