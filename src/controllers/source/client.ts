// A client for one source cluster, built from a @kubernetes/client-node KubeConfig (which applies the
// TLS material and credentials, including in-cluster token refresh). Requests are plain JSON GETs;
// every failure becomes a SourceError that says whether the cluster was unreachable, refused our
// credentials (401) or our access (403), so the GitTarget's SourceReachable condition can say so.
import { request as httpsRequest, Agent as HttpsAgent, type AgentOptions as HttpsAgentOptions, type RequestOptions } from 'node:https';
import { request as httpRequest, Agent as HttpAgent } from 'node:http';
import type { KubeConfig } from '@kubernetes/client-node';
import { EGRESS_DENIED } from '../../net/egress.js';

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
}

export class SourceClient {
  readonly server: string;
  private agent: HttpsAgent | HttpAgent | undefined;
  private readonly timeoutMs: number;

  constructor(
    readonly config: KubeConfig,
    opts: SourceClientOptions = {},
  ) {
    const cluster = config.getCurrentCluster();
    if (!cluster) throw new SourceError('Failed', 'the kubeconfig has no current cluster');
    this.server = cluster.server.replace(/\/+$/, '');
    this.timeoutMs = opts.requestTimeoutMs ?? 30_000;
  }

  /** GET `path` (with query) as JSON. Rejects with SourceError. */
  async getJSON<T = any>(path: string, query: Record<string, string | number | boolean | undefined> = {}): Promise<T> {
    const url = new URL(this.server + path);
    for (const [k, v] of Object.entries(query)) if (v !== undefined) url.searchParams.set(k, String(v));
    const opts: RequestOptions = { headers: {} };
    try {
      // Credentials are applied per request: an in-cluster token file rotates underneath us.
      await this.config.applyToHTTPSOptions(opts);
    } catch (e) {
      if ((e as { code?: string }).code === EGRESS_DENIED) throw new SourceError('EgressDenied', (e as Error).message);
      throw new SourceError('Failed', `the kubeconfig cannot be applied: ${(e as Error).message}`);
    }
    const https = url.protocol === 'https:';
    // One keep-alive agent per client; the one client-node makes per call is left unused.
    // A tenant's kubeconfig (EgressKubeConfig) resolves names through its egress policy: checked per connection.
    const lookup = (this.config as { egress?: { lookup: HttpsAgentOptions['lookup'] } }).egress?.lookup;
    this.agent ??= https
      ? new HttpsAgent({ keepAlive: true, ca: opts.ca, cert: opts.cert, key: opts.key, rejectUnauthorized: opts.rejectUnauthorized, servername: opts.servername, lookup })
      : new HttpAgent({ keepAlive: true, lookup });
    const headers: Record<string, string> = { accept: 'application/json' };
    for (const [k, v] of Object.entries(opts.headers ?? {})) if (v !== undefined) headers[k] = String(v);
    if (opts.auth) headers.authorization = `Basic ${Buffer.from(opts.auth).toString('base64')}`;
    return new Promise<T>((resolve, reject) => {
      const req = (https ? httpsRequest : httpRequest)(url, { method: 'GET', headers, agent: this.agent, timeout: this.timeoutMs }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', (e) => reject(toSourceError(e, this.server)));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          const code = res.statusCode ?? 0;
          let body: any;
          try {
            body = JSON.parse(text);
          } catch {
            body = undefined;
          }
          if (code >= 200 && code < 300 && body !== undefined) return resolve(body as T);
          const why = body?.kind === 'Status' && typeof body.message === 'string' ? `: ${body.message}` : '';
          reject(new SourceError(code >= 200 && code < 300 ? 'Failed' : reasonForStatus(code), `GET ${url.pathname} answered ${code}${why}`, code));
        });
      });
      req.on('timeout', () => req.destroy(new Error(`no answer within ${this.timeoutMs} ms`)));
      req.on('error', (e) => reject(toSourceError(e, this.server)));
      req.end();
    });
  }

  close(): void {
    this.agent?.destroy();
    this.agent = undefined;
  }
}
