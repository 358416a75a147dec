// --kcp-require-apibinding: a request for a kcp logical cluster is refused unless that workspace
// has a Bound APIBinding to our APIExport. kcp's shard only routes a workspace to us once it is
// bound, but a caller that reaches this server directly (a client certificate, a token) could name
// any logical cluster and create state there; this closes that. The answer is looked up in the
// workspace itself (`GET <kcp URL>/clusters/<name>/apis/apis.kcp.io/v1alpha2/apibindings`), cached
// briefly per logical cluster (both ways), and a failed lookup refuses (fail closed, not cached).
import type { RequiredAPIBinding } from './options.js';
import type { Attributes, AuthorizationResult, Authorizer } from './types.js';
import type { HostingClient } from './hosting.js';

export const APIBINDINGS_PATH = '/apis/apis.kcp.io/v1alpha2/apibindings';
export const APIBINDING_CACHE_TTL_MS = 10_000;

interface APIBinding {
  spec?: { reference?: { export?: { path?: string; name?: string } } };
  status?: { phase?: string };
}

export function exportName(b: RequiredAPIBinding): string {
  return b.path ? `${b.path}:${b.name}` : b.name;
}

/** Whether one of `items` is a Bound binding to the export (the path must match when the flag names one). */
export function bindsExport(items: APIBinding[], want: RequiredAPIBinding): boolean {
  return items.some((b) => {
    const ref = b.spec?.reference?.export;
    return ref?.name === want.name && (want.path === undefined || ref.path === want.path) && b.status?.phase === 'Bound';
  });
}

export class APIBindingAuthorizer implements Authorizer {
  private readonly cache = new Map<string, { expires: number; bound: Promise<boolean> }>();
  /** APIBinding lists fetched (tests). */
  lookups = 0;
  private readonly now: () => number;
  private readonly ttlMs: number;

  constructor(
    private readonly client: HostingClient,
    private readonly want: RequiredAPIBinding,
    private readonly inner: Authorizer,
    opts: { now?: () => number; ttlMs?: number } = {},
  ) {
    this.now = opts.now ?? Date.now;
    this.ttlMs = opts.ttlMs ?? APIBINDING_CACHE_TTL_MS;
  }

  async authorize(attrs: Attributes): Promise<AuthorizationResult> {
    const cluster = attrs.cluster;
    // The default cluster is not a kcp workspace; the wildcard is the shard's and is decided by --wildcard-cluster-groups.
    if (cluster === undefined || cluster === '*') return this.inner.authorize(attrs);
    let bound: boolean;
    try {
      bound = await this.isBound(cluster);
    } catch (e) {
      return { decision: 'deny', reason: `whether logical cluster ${JSON.stringify(cluster)} binds APIExport ${exportName(this.want)} could not be checked (--kcp-require-apibinding): ${(e as Error).message}` };
    }
    if (!bound) {
      return { decision: 'deny', reason: `logical cluster ${JSON.stringify(cluster)} has no Bound APIBinding to APIExport ${exportName(this.want)} (--kcp-require-apibinding)` };
    }
    return this.inner.authorize(attrs);
  }

  private isBound(cluster: string): Promise<boolean> {
    const now = this.now();
    const hit = this.cache.get(cluster);
    if (hit && hit.expires > now) return hit.bound;
    const entry = { expires: Infinity, bound: this.lookup(cluster) };
    if (this.cache.size >= 10_000) this.cache.delete(this.cache.keys().next().value!);
    this.cache.set(cluster, entry);
    entry.bound.then(
      () => { entry.expires = this.now() + this.ttlMs; },
      () => { if (this.cache.get(cluster) === entry) this.cache.delete(cluster); },
    );
    return entry.bound;
  }

  private async lookup(cluster: string): Promise<boolean> {
    this.lookups++;
    const res = await this.client.request('GET', APIBINDINGS_PATH, undefined, cluster);
    const items = (res.body as { items?: unknown } | undefined)?.items;
    if (!Array.isArray(items)) throw new Error('the APIBinding list has no items');
    return bindsExport(items as APIBinding[], this.want);
  }
}
