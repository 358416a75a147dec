// A client for one source cluster, built from a KubeConfig (src/kubeconfig/kubeconfig.ts, which applies the
// TLS material and credentials, including in-cluster token refresh). Its requests travel on the
// Transport shared by every client of the same endpoint and credentials (transport.ts); they are
// plain JSON GETs and watch streams;
// every failure becomes a SourceError that says whether the cluster was unreachable, refused our
// credentials (401) or our access (403), so the GitTarget's SourceReachable condition can say so.
import type { RequestOptions } from 'node:https';
import type { KubeConfig } from '../../kubeconfig/kubeconfig.js';
import { EGRESS_DENIED } from '../../net/egress.js';
import { sharedTransports, type OpenResponse, type TlsMaterial, type Transport, type TransportPool } from './transport.js';

export type SourceErrorReason = 'Unreachable' | 'AuthenticationFailed' | 'AccessDenied' | 'NotFound' | 'Expired' | 'Failed' | 'EgressDenied';

export class SourceError extends Error {
  constructor(
    readonly reason: SourceErrorReason,
    message: string,
    readonly statusCode?: number,
  ) {
    super(message);
    this.name = 'SourceError';
  }
}

/** HTTP status → reason. Bodies are never echoed into messages beyond a Status `message` (no Secret data reaches a list error). */
export function reasonForStatus(code: number): SourceErrorReason {
  if (code === 401) return 'AuthenticationFailed';
  if (code === 403) return 'AccessDenied';
  if (code === 404) return 'NotFound';
  if (code === 410) return 'Expired';
  if (code >= 500 || code === 429) return 'Unreachable';
  return 'Failed';
}

/** Any error of the watch or a request → SourceError. */
export function toSourceError(e: unknown, server: string): SourceError {
  if (e instanceof SourceError) return e;
  const err = e as { statusCode?: number; code?: string | number; message?: string };
  if (err?.code === EGRESS_DENIED) return new SourceError('EgressDenied', String(err.message));
  if (typeof err?.statusCode === 'number') return new SourceError(reasonForStatus(err.statusCode), `${server} answered ${err.statusCode}`, err.statusCode);
  const code = typeof err?.code === 'string' ? ` (${err.code})` : '';
  return new SourceError('Unreachable', `cannot reach ${server}: ${String(err?.message ?? e).split('\n')[0]}${code}`);
}

export interface SourceClientOptions {
  /** Per request (lists, discovery, gets); watches are long-lived and use their own deadline. */
  requestTimeoutMs?: number;
  /** Where connections come from; default: the process's pool, shared by every client (transport.ts). */
  transports?: TransportPool;
}

/** Query parameters of a request; undefined values are left out. */
export type Query = Record<string, string | number | boolean | undefined>;

export class SourceClient {
  readonly server: string;
  private readonly serverPath: string;
  private readonly pool: TransportPool;
  private transport: Transport | undefined;
  private closed = false;
  private readonly timeoutMs: number;

  constructor(
    readonly config: KubeConfig,
    opts: SourceClientOptions = {},
  ) {
    const cluster = config.getCurrentCluster();
    if (!cluster) throw new SourceError('Failed', 'the kubeconfig has no current cluster');
    this.server = cluster.server.replace(/\/+$/, '');
    this.timeoutMs = opts.requestTimeoutMs ?? 30_000;
    this.pool = opts.transports ?? sharedTransports;
    // A server URL may carry a path (a kcp workspace: <front-proxy>/clusters/<name>); it prefixes every request.
    this.serverPath = new URL(this.server).pathname.replace(/\/+$/, '');
  }

  /**
   * Opens GET `path` on the shared transport with this client's credentials (applied per request: an
   * in-cluster token file rotates underneath us). Resolves with the response head; rejects with SourceError.
   */
  async open(path: string, query: Query, signal: AbortSignal): Promise<OpenResponse> {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) if (v !== undefined) params.set(k, String(v));
    const search = params.size ? `?${params}` : '';
    const opts: RequestOptions = { headers: {} };
    try {
      await this.config.applyToHTTPSOptions(opts);
    } catch (e) {
      if ((e as { code?: string }).code === EGRESS_DENIED) throw new SourceError('EgressDenied', (e as Error).message);
      throw new SourceError('Failed', `the kubeconfig cannot be applied: ${(e as Error).message}`);
    }
    // HTTP/2 header names are lowercase.
    const headers: Record<string, string> = { accept: 'application/json' };
    for (const [k, v] of Object.entries(opts.headers ?? {})) if (v !== undefined) headers[k.toLowerCase()] = String(v);
    if (opts.auth) headers.authorization = `Basic ${Buffer.from(opts.auth).toString('base64')}`;
    // Closed is final: a request after close() must not take a transport nobody releases.
    if (this.closed) throw new SourceError('Failed', `the client of ${this.server} is closed`);
    this.transport ??= this.pool.acquire(this.config);
    const tls = { ca: opts.ca as TlsMaterial['ca'], cert: opts.cert as TlsMaterial['cert'], key: opts.key as TlsMaterial['key'], rejectUnauthorized: opts.rejectUnauthorized, servername: opts.servername };
    try {
      return await this.transport.request(this.serverPath + path + search, headers, tls, signal);
    } catch (e) {
      throw toSourceError(e, this.server);
    }
  }

  /** GET `path` (with query) as JSON. Rejects with SourceError. */
  async getJSON<T = any>(path: string, query: Query = {}): Promise<T> {
    const ac = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      this.transport?.suspect();
      ac.abort(new Error(`no answer within ${this.timeoutMs} ms`));
    }, this.timeoutMs);
    try {
      const res = await this.open(path, query, ac.signal);
      const chunks: Buffer[] = [];
      for await (const c of res.body) chunks.push(c as Buffer);
      const text = Buffer.concat(chunks).toString('utf8');
      const code = res.status;
      let body: any;
      try {
        body = JSON.parse(text);
      } catch {
        body = undefined;
      }
      if (code >= 200 && code < 300 && body !== undefined) return body as T;
      const why = body?.kind === 'Status' && typeof body.message === 'string' ? `: ${body.message}` : '';
      throw new SourceError(code >= 200 && code < 300 ? 'Failed' : reasonForStatus(code), `GET ${this.serverPath + path} answered ${code}${why}`, code);
    } catch (e) {
      if (timedOut) throw new SourceError('Unreachable', `cannot reach ${this.server}: no answer within ${this.timeoutMs} ms`);
      throw toSourceError(e, this.server);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Lets go of the shared transport (the last client of a transport closes its connections). */
  close(): void {
    this.closed = true;
    if (this.transport) this.pool.release(this.transport);
    this.transport = undefined;
  }
}
