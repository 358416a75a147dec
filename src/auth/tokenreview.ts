// Bearer tokens, checked by a TokenReview against the hosting cluster, or for a request to a kcp
// logical cluster against that workspace (`/clusters/<name>/apis/authentication.k8s.io/...`): a
// kcp service-account token is valid only in its own workspace. Answers (authenticated or not) are
// cached briefly under the logical cluster and a SHA-256 of the token, never the token itself;
// errors are not cached. A rejected token is an error (401), never anonymous.
import { createHash } from 'node:crypto';
import type { AuthnRequest, AuthnResult, Authenticator, UserInfo } from './types.js';
import type { HostingClient } from './hosting.js';

const TOKENREVIEW_PATH = '/apis/authentication.k8s.io/v1/tokenreviews';

interface Entry {
  expires: number;
  user?: UserInfo;
}

export interface TokenReviewOptions {
  ttlMs: number;
  audiences: string[];
  maxEntries?: number;
  /** The clock the TTL runs on (default Date.now). */
  now?: () => number;
}

/** The bearer token of an Authorization header, or undefined (scheme case-insensitive, as Go). */
export function bearerToken(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const parts = header.split(' ');
  if (parts.length < 2 || parts[0]!.toLowerCase() !== 'bearer') return undefined;
  return parts[1] ? parts[1] : undefined;
}

export class TokenReviewAuthenticator implements Authenticator {
  private cache = new Map<string, Entry>();
  private inflight = new Map<string, Promise<Entry>>();
  /** Number of TokenReviews sent (tests and metrics). */
  reviews = 0;

  private readonly now: () => number;

  constructor(private readonly client: HostingClient, private readonly opts: TokenReviewOptions) {
    this.now = opts.now ?? Date.now;
  }

  async authenticate(req: AuthnRequest): Promise<AuthnResult> {
    const h = req.headers.authorization;
    const token = bearerToken(Array.isArray(h) ? h[0] : h);
    if (!token) return { kind: 'anonymous' };
    // The wildcard has no workspace to ask: its tokens are reviewed where the default cluster's are.
    const cluster = req.cluster === '*' ? undefined : req.cluster;
    const key = `${cluster ?? ''}\u0000${createHash('sha256').update(token).digest('base64')}`;
    const now = this.now();
    let entry = this.cache.get(key);
    if (!entry || entry.expires <= now) {
      if (entry) this.cache.delete(key);
      try {
        let p = this.inflight.get(key);
        if (!p) {
          p = this.review(token, cluster).finally(() => this.inflight.delete(key));
          this.inflight.set(key, p);
        }
        entry = await p;
      } catch (e) {
        return { kind: 'error', message: `token review failed: ${(e as Error).message}` };
      }
      if (this.cache.size >= (this.opts.maxEntries ?? 10_000)) this.cache.delete(this.cache.keys().next().value!);
      this.cache.set(key, entry);
    }
    if (!entry.user) return { kind: 'error', message: 'invalid bearer token' };
    // The token is consumed: handlers never see the caller's credential.
    return { kind: 'user', user: entry.user, consumedHeaders: ['authorization'] };
  }

  private async review(token: string, cluster: string | undefined): Promise<Entry> {
    const spec: Record<string, unknown> = { token };
    if (this.opts.audiences.length > 0) spec.audiences = this.opts.audiences;
    this.reviews++;
    const res = await this.client.request('POST', TOKENREVIEW_PATH, {
      kind: 'TokenReview', apiVersion: 'authentication.k8s.io/v1', metadata: {}, spec,
    }, cluster);
    const status = (res.body as { status?: TokenReviewStatus } | undefined)?.status ?? {};
    if (status.error) throw new Error(status.error);
    const expires = this.now() + this.opts.ttlMs;
    if (!status.authenticated) return { expires };
    if (this.opts.audiences.length > 0 && status.audiences && status.audiences.length > 0
      && !status.audiences.some((a) => this.opts.audiences.includes(a))) {
      return { expires };
    }
    const u = status.user ?? {};
    if (!u.username) throw new Error('TokenReview answered authenticated without a username');
    const user: UserInfo = { username: u.username, groups: Array.isArray(u.groups) ? u.groups : [] };
    if (u.uid) user.uid = u.uid;
    if (u.extra && Object.keys(u.extra).length > 0) user.extra = u.extra;
    return { expires, user: Object.freeze(user) as UserInfo };
  }
}

interface TokenReviewStatus {
  authenticated?: boolean;
  error?: string;
  audiences?: string[];
  user?: { username?: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> };
}
