// The join (docs/attribution.md): which audit fact names the author of a
// mirrored change. This file decides the keys and the outcome of one lookup; the waiting (the
// durable staging list, the grace, the order) lives with the commit windows, which own the record
// the staged changes are kept in (controllers/windows/staging.ts).
import type { KubeObject } from '../model/object.js';
import { authorOfIdentity, UNRESOLVED_AUTHOR, type AuthorIdentity } from '../model/author.js';
import { DEFAULT_CLUSTER } from '../storage/types.js';
import { sandboxRoute } from './sandbox.js';
import { HOSTING_ROUTE, type AttributionFacts, type FactMatch, type FactQuery, type FactTier } from './types.js';
import type { GitTargetSpec } from '../api/gittarget.js';

/** The `tier` label values of reverser_attribution_joins_total: every fact tier, and `unresolved`. */
export type JoinTier = FactTier | 'unresolved';
export const JOIN_TIERS: readonly JoinTier[] = ['exact', 'delete_uid', 'deletecollection_uid', 'delete_name', 'latest_write', 'unresolved'];

/** How long a change waits for its fact by default (--attribution-grace). */
export const DEFAULT_ATTRIBUTION_GRACE_MS = 3_000;
/** How long edits may be mirrored on a route without any fact before AuditAttribution turns False. */
export const DEFAULT_NO_FACTS_GRACE_MS = 60_000;

/** A window's authorKey for the edits of one Kubernetes user (the key a CommitRequest's submitter claims). */
export function windowKeyOfUser(username: string): string {
  return `user:${username}`;
}

/** The authorKey of windows whose changes no fact named. No CommitRequest claims them. */
export const UNRESOLVED_WINDOW_KEY = 'unresolved';

/** Who made a change, as the windows record it. */
export interface Attribution {
  /** windowKeyOfUser(username), or UNRESOLVED_WINDOW_KEY. */
  authorKey: string;
  author: AuthorIdentity;
  kind: 'audit' | 'unresolved';
  tier: JoinTier;
  /** RFC 3339 of the fact that named the change (absent when unresolved). */
  factTime?: string;
}

export const UNRESOLVED: Attribution = { authorKey: UNRESOLVED_WINDOW_KEY, author: UNRESOLVED_AUTHOR, kind: 'unresolved', tier: 'unresolved' };

export function attributionOf(m: FactMatch): Attribution {
  return { authorKey: windowKeyOfUser(m.fact.user.username), author: authorOfIdentity(m.fact.user.username, m.fact.user.extra), kind: 'audit', tier: m.tier, factTime: m.fact.time };
}

/** The join's view of the controllers' configuration: where facts are and whether anyone posts them. */
export interface AttributionConfig {
  facts: AttributionFacts;
  /** The audit listener is enabled (--audit-client-ca-file): default-source GitTargets read the hosting route. */
  auditListener: boolean;
  /**
   * The default source is this server's own sandbox, whose writes record their facts on the request
   * path (sandbox.ts): default-source GitTargets join on the sandbox route of their logical cluster.
   */
  sandboxSource?: boolean;
  graceMs?: number;
  noFactsGraceMs?: number;
}

/** The kcp annotation the registry stamps on objects of a logical cluster other than the default. */
const CLUSTER_ANNOTATION = 'kcp.io/cluster';

/**
 * The fact route a GitTarget's changes are joined on, or undefined (windows stay unattributed and
 * a CommitRequest claims them): spec.attribution.auditRoute when set; else, for a GitTarget that
 * mirrors the default source, the sandbox route of its logical cluster when the default source is
 * this server's sandbox, or the hosting cluster's audit route when the audit listener is enabled.
 */
export function effectiveRoute(gt: KubeObject | undefined, auditListener: boolean, sandboxSource = false): string | undefined {
  const spec = gt?.spec as GitTargetSpec | undefined;
  if (!spec) return undefined;
  if (spec.attribution?.auditRoute) return spec.attribution.auditRoute;
  if (spec.source) return undefined;
  if (sandboxSource) return sandboxRoute(gt?.metadata.annotations?.[CLUSTER_ANNOTATION] ?? DEFAULT_CLUSTER);
  return auditListener ? HOSTING_ROUTE : undefined;
}

/** effectiveRoute under the controllers' attribution configuration. */
export function routeOf(gt: KubeObject | undefined, cfg: AttributionConfig | undefined): string | undefined {
  return cfg ? effectiveRoute(gt, cfg.auditListener, cfg.sandboxSource) : undefined;
}

/** The part of a mirrored change the join reads (structurally the windows' PendingChange). */
export type JoinableChange =
  | { op: 'write'; object: { apiVersion: string; kind: string; metadata: { namespace?: string; name?: string } }; resource?: string; source?: JoinSource }
  | { op: 'delete'; ref: { apiVersion: string; kind: string; namespace?: string; name: string }; source?: JoinSource };

export interface JoinSource {
  uid: string;
  resourceVersion: string;
  /** Plural resource in the source cluster. */
  resource?: string;
}

function groupOf(apiVersion: string): string {
  const slash = apiVersion.indexOf('/');
  return slash < 0 ? '' : apiVersion.slice(0, slash);
}

/** The lookup for one change, or undefined when the change carries nothing to join on. */
export function queryOf(change: JoinableChange, route: string): FactQuery | undefined {
  const src = change.source;
  if (!src) return undefined;
  if (change.op === 'write') {
    const m = change.object.metadata;
    return { route, group: groupOf(change.object.apiVersion), resource: src.resource ?? change.resource ?? '', namespace: m.namespace ?? '', name: m.name ?? '', uid: src.uid, resourceVersion: src.resourceVersion, removal: false };
  }
  const r = change.ref;
  return { route, group: groupOf(r.apiVersion), resource: src.resource ?? '', namespace: r.namespace ?? '', name: r.name, uid: src.uid, resourceVersion: src.resourceVersion, removal: true };
}

/**
 * Looks up `changes` in order and stops at the first one no fact names yet: the attributions of
 * the resolved prefix (a later change may not overtake an earlier one, so looking further is
 * wasted). A change with nothing to join on is unresolved at once.
 */
export async function resolvePrefix(facts: AttributionFacts, route: string, changes: JoinableChange[]): Promise<Attribution[]> {
  const out: Attribution[] = [];
  for (const c of changes) {
    const q = queryOf(c, route);
    if (!q) {
      out.push(UNRESOLVED);
      continue;
    }
    const m = await facts.find(q);
    if (!m || provisional(m)) break;
    out.push(attributionOf(m));
  }
  return out;
}

/**
 * A match that may still be bettered: a removal matched only by its object's last write. A write
 * fact never settles a deletion while its grace runs, because the delete fact (the person who
 * deleted) may still be in kube-apiserver's audit batch.
 */
export function provisional(m: FactMatch): boolean {
  return m.tier === 'latest_write';
}
