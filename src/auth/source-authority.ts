// A GitTarget carries its author's authority, no more: the server reads the source and uses
// credentials with its own identity, so whoever writes what a GitTarget reads must hold those
// permissions themselves. The same check runs at admission (src/registry/gittarget-strategy.ts,
// as the requesting user) and in the periodic re-verification (src/controllers/authority/), as the
// user recorded in status.authority. Any error reaching the authorizer denies (fail closed), as in
// assert-author.ts.
import type { Attributes, Authorizer, UserInfo } from './types.js';
import { forbiddenReasonText, goQuote } from './messages.js';

/** One permission a GitTarget's spec needs of its author. */
export interface SourcePermission {
  verb: 'list' | 'watch' | 'get';
  apiGroup: string;
  resource: string;
  /** undefined: the cluster scope (every namespace). */
  namespace?: string;
  name?: string;
}

/** status.authority: whose authority a GitTarget runs under, recorded by the server from the authenticated request. */
export interface Authority {
  username: string;
  uid?: string;
  groups: string[];
  extra?: Record<string, string[]>;
  /** RFC 3339: when the server last verified this authority at a write of the spec. */
  verifiedAt: string;
}

interface SpecShape {
  repository?: { secretRef?: { name?: unknown } };
  source?: { kubeConfig?: { secretRef?: { name?: unknown } } };
  resources?: Array<{ group?: unknown; resource?: unknown; namespaces?: unknown }>;
}

/**
 * The permissions a spec needs, in a stable order: `get` on each referenced Secret in the
 * GitTarget's namespace, then — only for the default source — `list` and `watch` of each selected
 * resource in each selected namespace (the cluster scope when namespaces are omitted). A kubeconfig
 * Secret names another cluster whose own identity decides what is read: its `get` is what counts.
 */
export function requiredPermissions(spec: unknown, namespace: string): SourcePermission[] {
  const s = (spec ?? {}) as SpecShape;
  const out: SourcePermission[] = [];
  const secret = (name: unknown) => {
    if (typeof name === 'string' && name !== '' && !out.some((p) => p.resource === 'secrets' && p.name === name)) {
      out.push({ verb: 'get', apiGroup: '', resource: 'secrets', namespace, name });
    }
  };
  const kubeconfigSecret = s.source?.kubeConfig?.secretRef?.name;
  secret(kubeconfigSecret);
  secret(s.repository?.secretRef?.name);
  if (kubeconfigSecret !== undefined) return out;
  for (const r of Array.isArray(s.resources) ? s.resources : []) {
    if (typeof r?.resource !== 'string' || typeof r.group !== 'string') continue;
    const nss = Array.isArray(r.namespaces) && r.namespaces.length > 0 ? [...new Set(r.namespaces.filter((n): n is string => typeof n === 'string'))] : [undefined];
    for (const ns of nss) {
      for (const verb of ['list', 'watch'] as const) out.push({ verb, apiGroup: r.group, resource: r.resource, ...(ns === undefined ? {} : { namespace: ns }) });
    }
  }
  return out;
}

/**
 * Whether an update changes what is read (resources, namespaces, selectors) or where credentials
 * come from (the repository's Secret, the source): such an update is authorized as its writer, who
 * becomes the GitTarget's authority.
 */
export function readsChanged(spec: unknown, old: unknown): boolean {
  const reads = (x: unknown) => {
    const s = (x ?? {}) as SpecShape;
    return JSON.stringify([s.resources ?? null, s.repository?.secretRef ?? null, s.source ?? null]);
  };
  return reads(spec) !== reads(old);
}

export function permissionAttributes(user: UserInfo, p: SourcePermission, cluster?: string): Attributes {
  const a: Attributes = { user, verb: p.verb, resourceRequest: true, apiGroup: p.apiGroup, resource: p.resource };
  if (p.namespace !== undefined) a.namespace = p.namespace;
  if (p.name !== undefined) a.name = p.name;
  if (cluster) a.cluster = cluster;
  return a;
}

/** A cache key for one question (the per-pass cache of the re-verification shares answers). */
export function questionKey(a: Attributes): string {
  const u = a.user;
  return JSON.stringify([a.cluster ?? '', u.username, u.uid ?? '', [...u.groups].sort(), u.extra ?? {}, a.verb, a.apiGroup, a.resource, a.namespace ?? '', a.name ?? '']);
}

export type AuthorityCheck =
  | { allowed: true }
  /** `missing`: "User ... cannot ..." for the first permission not held; `error`: the authorizer could not answer. */
  | { allowed: false; missing: string; error?: boolean };

export type Ask = (a: Attributes) => Promise<{ decision: string; reason?: string }>;

/**
 * Asks, in order, for every permission; stops at the first one not granted. `ask` defaults to the
 * authorizer (the re-verification passes a caching one).
 */
export async function checkAuthority(
  authorizer: Authorizer, user: UserInfo, perms: SourcePermission[], cluster?: string, ask: Ask = (a) => authorizer.authorize(a),
): Promise<AuthorityCheck> {
  for (const p of perms) {
    const attrs = permissionAttributes(user, p, cluster);
    let r: { decision: string; reason?: string };
    try {
      r = await ask(attrs);
    } catch (e) {
      return { allowed: false, missing: `${forbiddenReasonText(attrs)}: the authorization check could not be made: ${(e as Error).message || String(e)}`, error: true };
    }
    if (r.decision !== 'allow') return { allowed: false, missing: r.reason ? `${forbiddenReasonText(attrs)}: ${r.reason}` : forbiddenReasonText(attrs) };
  }
  return { allowed: true };
}

/** The 403 message of a GitTarget write refused for want of a permission, worded as kube's Forbidden. */
export function gitTargetForbiddenMessage(name: string, missing: string): string {
  return `gittargets.configbutler.ai ${goQuote(name)} is forbidden: ${missing}`;
}

/** What is recorded in status.authority: the whole identity, because the SubjectAccessReview of a re-verification must ask about the same user (extra included: scopes narrow a grant). */
export function authorityOf(user: UserInfo, now: Date = new Date()): Authority {
  // Milliseconds kept: the re-verification compares this instant with its own passes.
  const a: Authority = { username: user.username, groups: [...user.groups], verifiedAt: now.toISOString() };
  if (user.uid) a.uid = user.uid;
  if (user.extra && Object.keys(user.extra).length > 0) a.extra = Object.fromEntries(Object.entries(user.extra).map(([k, v]) => [k, [...v]]));
  return a;
}

export function userOfAuthority(a: Authority): UserInfo {
  const u: UserInfo = { username: a.username, groups: [...(a.groups ?? [])] };
  if (a.uid) u.uid = a.uid;
  if (a.extra) u.extra = a.extra;
  return u;
}
