// Delegated authorization: one SubjectAccessReview per decision to the hosting cluster (or to the
// caller's kcp workspace), with allow and deny answers cached for separate short times. The cache
// key is a cheap string of the attributes so a warm GET costs one Map lookup.
import type { HostingClusterOptions } from './options.js';
import type { Attributes, AuthorizationResult, Authorizer } from './types.js';
import { HostingClient } from './hosting.js';

const SAR_PATH = '/apis/authorization.k8s.io/v1/subjectaccessreviews';

export interface DelegatedOptions {
  allowTTLMs: number;
  denyTTLMs: number;
  maxEntries?: number;
  /** The clock the TTLs run on (default Date.now). */
  now?: () => number;
}

interface Entry {
  expires: number;
  result: Promise<AuthorizationResult>;
}

/** Thrown when no decision could be obtained; callers deny (fail closed) and are not cached. */
export class AuthorizationUnavailableError extends Error {}

/** The SubjectAccessReview body k8s.io/apiserver's webhook authorizer would send (Go field order, omitempty). */
export function subjectAccessReviewFor(a: Attributes): Record<string, unknown> {
  const spec: Record<string, unknown> = {};
  if (a.resourceRequest) {
    const ra: Record<string, string> = {};
    if (a.namespace) ra.namespace = a.namespace;
    if (a.verb) ra.verb = a.verb;
    if (a.apiGroup) ra.group = a.apiGroup;
    if (a.apiVersion) ra.version = a.apiVersion;
    if (a.resource) ra.resource = a.resource;
    if (a.subresource) ra.subresource = a.subresource;
    if (a.name) ra.name = a.name;
    spec.resourceAttributes = ra;
  } else {
    spec.nonResourceAttributes = { path: a.path ?? '', verb: a.verb };
  }
  const u = a.user;
  spec.user = u.username;
  if (u.groups.length > 0) spec.groups = u.groups;
  if (u.extra && Object.keys(u.extra).length > 0) spec.extra = u.extra;
  if (u.uid) spec.uid = u.uid;
  return { kind: 'SubjectAccessReview', apiVersion: 'authorization.k8s.io/v1', metadata: {}, spec };
}

/** A collision-free key: \u0000 and \u0001 cannot appear in names, groups or header-borne values. */
export function attributesKey(a: Attributes): string {
  const u = a.user;
  let k = `${a.cluster ?? ''}\u0000${a.verb}\u0000${u.username}\u0000${u.uid ?? ''}\u0000${u.groups.join('\u0001')}\u0000`;
  if (u.extra) {
    const keys = Object.keys(u.extra);
    if (keys.length > 1) keys.sort();
    for (const x of keys) k += `${x}=${u.extra[x]!.join('\u0001')}\u0001`;
  }
  k += a.resourceRequest
    ? `\u0000r\u0000${a.namespace ?? ''}\u0000${a.apiGroup ?? ''}\u0000${a.apiVersion ?? ''}\u0000${a.resource ?? ''}\u0000${a.subresource ?? ''}\u0000${a.name ?? ''}`
    : `\u0000n\u0000${a.path ?? ''}`;
  return k;
}

export class DelegatedAuthorizer implements Authorizer {
  private cache = new Map<string, Entry>();
  /** Number of SubjectAccessReviews sent (tests and metrics). */
  reviews = 0;

  private readonly now: () => number;

  constructor(private readonly client: HostingClient, private readonly opts: DelegatedOptions, private readonly ownsClient = false) {
    this.now = opts.now ?? Date.now;
  }

  static async create(hosting: HostingClusterOptions, opts: DelegatedOptions): Promise<DelegatedAuthorizer> {
    return new DelegatedAuthorizer(await HostingClient.create(hosting), opts, true);
  }

  authorize(attrs: Attributes): Promise<AuthorizationResult> {
    // No workspace can grant a request across all of them, and the hosting cluster's answer for a
    // plain request is not one either (PrivilegedUnionAuthorizer decides wildcard requests).
    if (attrs.cluster === '*') return Promise.resolve({ decision: 'noopinion', reason: 'a request across all logical clusters (/clusters/*) is not delegated' });
    const key = attributesKey(attrs);
    const now = this.now();
    const hit = this.cache.get(key);
    if (hit && hit.expires > now) return hit.result;
    if (hit) this.cache.delete(key);
    // The pending promise is cached too, so concurrent identical requests share one review; it
    // is replaced by the TTL'd answer, or removed on error (errors are never cached).
    const result = this.review(attrs);
    const entry: Entry = { expires: Infinity, result };
    if (this.cache.size >= (this.opts.maxEntries ?? 10_000)) this.cache.delete(this.cache.keys().next().value!);
    this.cache.set(key, entry);
    result.then(
      (r) => { entry.expires = this.now() + (r.decision === 'allow' ? this.opts.allowTTLMs : this.opts.denyTTLMs); },
      () => { if (this.cache.get(key) === entry) this.cache.delete(key); },
    );
    return result;
  }

  private async review(attrs: Attributes): Promise<AuthorizationResult> {
    this.reviews++;
    let body: unknown;
    try {
      // In a logical cluster: `<kcp URL>/clusters/<name>/apis/authorization.k8s.io/...`, so the grants of that workspace decide.
      body = (await this.client.request('POST', SAR_PATH, subjectAccessReviewFor(attrs), attrs.cluster)).body;
    } catch (e) {
      throw new AuthorizationUnavailableError(`SubjectAccessReview failed: ${(e as Error).message}`);
    }
    const s = (body as { status?: { allowed?: unknown; denied?: unknown; reason?: unknown; evaluationError?: unknown } } | undefined)?.status;
    if (!s || typeof s !== 'object') throw new AuthorizationUnavailableError('SubjectAccessReview answer has no status');
    if (s.allowed === true && s.denied === true) {
      throw new AuthorizationUnavailableError('SubjectAccessReview answered both allowed and denied');
    }
    const reason = typeof s.reason === 'string' && s.reason ? s.reason : undefined;
    if (s.allowed === true) return { decision: 'allow', reason };
    return { decision: s.denied === true ? 'deny' : 'noopinion', reason };
  }

  close(): void {
    this.cache.clear();
    if (this.ownsClient) this.client.close();
  }
}
