// Quotas on what one tenant's GitTargets may make the server hold: GitTargets per namespace and
// per logical cluster, source streams (list+watch streams, src/controllers/mirror/target.ts) per
// GitTarget and per namespace. A refusal reads like kube-apiserver's ResourceQuota admission
// (plugin/pkg/admission/resourcequota): 403 Forbidden,
// `<resource> "<name>" is forbidden: exceeded quota: <quota>, requested: <r>, used: <u>, limited: <l>`,
// with the quota named after its flag (docs/configuration.md).
//
// Counting is done in the store at admission, from a consistent list. Creates of GitTargets run
// one at a time in a process over the widest scope a quota counts (Registry.create,
// strategy.serializeCreates): the logical cluster when --max-gittargets-per-cluster is on, else the
// namespace when a per-namespace quota is; none when no quota counts (each serialized create waits
// for the store's round trip of the one before: ~1,100-1,600 creates/s against ~2,700-2,900
// concurrent, bench/api CREATE on 2 cores). So one replica never passes a limit; replicas sharing
// Redis each count on their own, so N replicas creating at the same instant may pass it by at most
// N-1 (the count includes every create any replica acknowledged before). Updates that add streams
// are checked the same way, unserialized.
import * as status from '../api/status.js';
import type { KubeObject } from '../model/object.js';
import type { ResourceRef, Store } from '../storage/types.js';
import type { RequestContext } from './context.js';
import { chain, type ResourceStrategy } from './strategy.js';

export interface GitTargetQuotas {
  /** GitTargets in one namespace (0: unlimited). */
  perNamespace: number;
  /** GitTargets in one logical cluster (0: unlimited). */
  perCluster: number;
  /** Source streams one GitTarget opens (0: unlimited). */
  streamsPerGitTarget: number;
  /** Source streams of all GitTargets of one namespace (0: unlimited). */
  streamsPerNamespace: number;
}

/**
 * 100 GitTargets measured ~200 file descriptors and 200 source connections (docs/security.md):
 * 100 per namespace (a tenant, without kcp) is a tenant's repositories with room; 10,000 per
 * logical cluster lets one plain deployment serve the thousands of tenants' GitTargets it is
 * built for (design: scale is a feature) while a kcp workspace, a tenant of its own, is bounded
 * too. A stream is one resource type in one namespace: 100 per GitTarget is more than any
 * hand-written selection; 1,000 per namespace matches 10 such GitTargets.
 */
export const DEFAULT_GITTARGET_QUOTAS: GitTargetQuotas = { perNamespace: 100, perCluster: 10_000, streamsPerGitTarget: 100, streamsPerNamespace: 1000 };

const GITTARGETS: ResourceRef = { group: 'configbutler.ai', resource: 'gittargets' };
const GR = 'gittargets.configbutler.ai';
const COUNT = `count/${GR}`;

/**
 * The list+watch streams a GitTarget's spec asks for: one per resource rule, or one per listed
 * namespace (as the mirror opens them; a cluster-scoped type listed with namespaces opens one,
 * so this is an upper bound).
 */
export function streamsOf(obj: KubeObject | undefined): number {
  const rules = (obj?.spec as { resources?: Array<{ namespaces?: string[] }> } | undefined)?.resources;
  if (!Array.isArray(rules)) return 0;
  return rules.reduce((n, r) => n + (Array.isArray(r?.namespaces) && r.namespaces.length ? new Set(r.namespaces).size : 1), 0);
}

function exceeded(name: string | undefined, quota: string, resource: string, requested: number, used: number, limited: number): status.StatusError {
  const who = name ? `${GR} ${JSON.stringify(name)}` : GR;
  return status.forbidden(`${who} is forbidden: exceeded quota: ${quota}, requested: ${resource}=${requested}, used: ${resource}=${used}, limited: ${resource}=${limited}`, {
    ...(name ? { name } : {}),
    group: 'configbutler.ai',
    kind: 'gittargets',
  });
}

/**
 * `base` (GitTarget's strategy: authority follows the requester, gittarget-strategy.ts) with the
 * quotas checked after its own checks, as kube-apiserver runs admission after authorization.
 */
export function withGitTargetQuotas(base: ResourceStrategy, store: Pick<Store, 'list'>, q: GitTargetQuotas): ResourceStrategy {
  const hooks = gitTargetQuotaHooks(store, q);
  return { ...base, ...(hooks.serializeCreates ? { serializeCreates: hooks.serializeCreates } : {}), admitCreate: chain(base.admitCreate, hooks.admitCreate), admitUpdate: chain(base.admitUpdate, hooks.admitUpdate) };
}

/** The quota hooks (admitCreate, admitUpdate, serializeCreates). */
export function gitTargetQuotaHooks(store: Pick<Store, 'list'>, q: GitTargetQuotas): Partial<ResourceStrategy> {
  const streamsCheck = async (obj: KubeObject, old: KubeObject | undefined, items: () => Promise<KubeObject[]>) => {
    const next = streamsOf(obj);
    const before = streamsOf(old);
    if (next <= before) return;
    const name = obj.metadata.name;
    if (q.streamsPerGitTarget > 0 && next > q.streamsPerGitTarget) throw exceeded(name, 'max-streams-per-gittarget', 'streams', next - before, before, q.streamsPerGitTarget);
    if (q.streamsPerNamespace > 0) {
      const used = (await items()).reduce((n, o) => n + streamsOf(o), 0);
      if (used + next - before > q.streamsPerNamespace) throw exceeded(name, 'max-streams-per-namespace', 'streams', next - before, used, q.streamsPerNamespace);
    }
  };
  const inNamespace = (ctx: RequestContext, namespace: string) => async () => (await store.list(GITTARGETS, { cluster: ctx.cluster, namespace })).items;
  const serializeCreates = q.perCluster > 0 ? 'cluster' : q.perNamespace > 0 || q.streamsPerNamespace > 0 ? 'namespace' : undefined;
  return {
    ...(serializeCreates ? { serializeCreates } : {}),
    async admitCreate(ctx, obj) {
      const ns = obj.metadata.namespace ?? '';
      const name = obj.metadata.name || undefined;
      const items = inNamespace(ctx, ns);
      if (q.perNamespace > 0) {
        const used = (await items()).length;
        if (used + 1 > q.perNamespace) throw exceeded(name, 'max-gittargets-per-namespace', COUNT, 1, used, q.perNamespace);
      }
      if (q.perCluster > 0) {
        const used = (await store.list(GITTARGETS, { cluster: ctx.cluster })).items.length;
        if (used + 1 > q.perCluster) throw exceeded(name, 'max-gittargets-per-cluster', COUNT, 1, used, q.perCluster);
      }
      await streamsCheck(obj, undefined, items);
    },
    async admitUpdate(ctx, obj, old, subresource) {
      if (subresource !== '') return;
      await streamsCheck(obj, old, inNamespace(ctx, obj.metadata.namespace ?? ''));
    },
  };
}
