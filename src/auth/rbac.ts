// Local evaluation of rbac.authorization.k8s.io/v1 objects with Kubernetes' semantics
// (plugin/pkg/auth/authorizer/rbac: RuleAllows, appliesTo, ResourceMatches, NonResourceURLMatches).
import type { Attributes, AuthorizationResult, Authorizer, ResourceRule, SubjectRules, UserInfo } from './types.js';

export interface PolicyRule {
  verbs: string[];
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
  nonResourceURLs?: string[];
}

export interface Subject {
  kind: string;
  name: string;
  namespace?: string;
  apiGroup?: string;
}

export interface RoleRef {
  kind: string;
  name: string;
  apiGroup?: string;
}

export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: Array<{ key: string; operator: string; values?: string[] }>;
}

export interface RBACObject {
  kind: 'Role' | 'ClusterRole' | 'RoleBinding' | 'ClusterRoleBinding';
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  rules?: PolicyRule[];
  aggregationRule?: { clusterRoleSelectors?: LabelSelector[] };
  subjects?: Subject[];
  roleRef?: RoleRef;
}

function has(list: string[] | undefined, v: string, wildcard = true): boolean {
  if (!list) return false;
  for (const x of list) if (x === v || (wildcard && x === '*')) return true;
  return false;
}

export function verbMatches(rule: PolicyRule, verb: string): boolean {
  return has(rule.verbs, verb);
}

export function apiGroupMatches(rule: PolicyRule, group: string): boolean {
  return has(rule.apiGroups, group);
}

export function resourceMatches(rule: PolicyRule, combined: string, subresource: string): boolean {
  for (const r of rule.resources ?? []) {
    if (r === '*' || r === combined) return true;
    // "*/status" matches the status subresource of every resource.
    if (subresource && r.length === subresource.length + 2 && r.startsWith('*/') && r.endsWith(subresource)) return true;
  }
  return false;
}

export function resourceNameMatches(rule: PolicyRule, name: string): boolean {
  // A rule with resourceNames never matches a request without a name (list, create by generateName...).
  if (!rule.resourceNames || rule.resourceNames.length === 0) return true;
  return rule.resourceNames.includes(name);
}

export function nonResourceURLMatches(rule: PolicyRule, path: string): boolean {
  for (const u of rule.nonResourceURLs ?? []) {
    if (u === '*' || u === path) return true;
    if (u.endsWith('*') && path.startsWith(u.replace(/\*+$/, ''))) return true;
  }
  return false;
}

export function ruleAllows(a: Attributes, rule: PolicyRule): boolean {
  if (a.resourceRequest) {
    const sub = a.subresource ?? '';
    const combined = sub ? `${a.resource ?? ''}/${sub}` : a.resource ?? '';
    return verbMatches(rule, a.verb) && apiGroupMatches(rule, a.apiGroup ?? '')
      && resourceMatches(rule, combined, sub) && resourceNameMatches(rule, a.name ?? '');
  }
  return verbMatches(rule, a.verb) && nonResourceURLMatches(rule, a.path ?? '');
}

/** appliesToUser: `bindingNamespace` is the RoleBinding's namespace ("" for ClusterRoleBindings). */
export function subjectMatches(user: UserInfo, s: Subject, bindingNamespace: string): boolean {
  switch (s.kind) {
    case 'User':
      return user.username === s.name;
    case 'Group':
      return user.groups.includes(s.name);
    case 'ServiceAccount': {
      const ns = s.namespace || bindingNamespace;
      if (!ns) return false;
      return user.username === `system:serviceaccount:${ns}:${s.name}`;
    }
    default:
      return false;
  }
}

function selectorMatches(sel: LabelSelector, labels: Record<string, string>): boolean {
  for (const [k, v] of Object.entries(sel.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const e of sel.matchExpressions ?? []) {
    const present = Object.prototype.hasOwnProperty.call(labels, e.key);
    const vals = e.values ?? [];
    switch (e.operator) {
      case 'In': if (!present || !vals.includes(labels[e.key]!)) return false; break;
      case 'NotIn': if (present && vals.includes(labels[e.key]!)) return false; break;
      case 'Exists': if (!present) return false; break;
      case 'DoesNotExist': if (present) return false; break;
      default: return false;
    }
  }
  return true;
}

interface Binding {
  kind: 'RoleBinding' | 'ClusterRoleBinding';
  name: string;
  namespace: string;
  subjects: Subject[];
  roleRef: RoleRef;
}

/**
 * The annotation naming the logical cluster a policy object belongs to (as kcp annotates every
 * object); absent = the default cluster (requests without a /clusters/<name> prefix).
 */
export const CLUSTER_ANNOTATION = 'kcp.io/cluster';

/** The policy of one logical cluster, indexed. */
class ClusterPolicy {
  private readonly roles = new Map<string, PolicyRule[]>(); // "<ns>/<name>"
  readonly clusterRoles = new Map<string, PolicyRule[]>();
  private readonly clusterBindings: Binding[] = [];
  private readonly bindingsByNamespace = new Map<string, Binding[]>();

  /** @param shared ClusterRoles present in every cluster (the bootstrap roles), found when a binding's own cluster has none of that name. */
  constructor(objects: RBACObject[], private readonly shared?: Map<string, PolicyRule[]>) {
    const aggregated: RBACObject[] = [];
    for (const o of objects) {
      const name = o.metadata.name;
      switch (o.kind) {
        case 'Role':
          this.roles.set(`${o.metadata.namespace ?? ''}/${name}`, o.rules ?? []);
          break;
        case 'ClusterRole':
          this.clusterRoles.set(name, o.rules ?? []);
          if (o.aggregationRule?.clusterRoleSelectors?.length) aggregated.push(o);
          break;
        case 'RoleBinding': {
          const b: Binding = { kind: 'RoleBinding', name, namespace: o.metadata.namespace ?? '', subjects: o.subjects ?? [], roleRef: o.roleRef! };
          const list = this.bindingsByNamespace.get(b.namespace) ?? [];
          list.push(b);
          this.bindingsByNamespace.set(b.namespace, list);
          break;
        }
        case 'ClusterRoleBinding':
          this.clusterBindings.push({ kind: 'ClusterRoleBinding', name, namespace: '', subjects: o.subjects ?? [], roleRef: o.roleRef! });
          break;
      }
    }
    // Aggregated ClusterRoles get the rules of every ClusterRole their selectors match, as the
    // clusterrole-aggregation controller would have written them.
    for (const agg of aggregated) {
      const rules = [...(agg.rules ?? [])];
      for (const o of objects) {
        if (o.kind !== 'ClusterRole' || o === agg) continue;
        const labels = o.metadata.labels ?? {};
        if (agg.aggregationRule!.clusterRoleSelectors!.some((s) => selectorMatches(s, labels))) rules.push(...(o.rules ?? []));
      }
      this.clusterRoles.set(agg.metadata.name, rules);
    }
  }

  private rulesOf(b: Binding): PolicyRule[] | string {
    const ref = b.roleRef;
    if (ref.kind === 'ClusterRole') {
      return this.clusterRoles.get(ref.name) ?? this.shared?.get(ref.name) ?? `clusterrole.rbac.authorization.k8s.io ${JSON.stringify(ref.name)} not found`;
    }
    if (ref.kind === 'Role' && b.kind === 'RoleBinding') {
      return this.roles.get(`${b.namespace}/${ref.name}`) ?? `role.rbac.authorization.k8s.io ${JSON.stringify(ref.name)} not found`;
    }
    return `unsupported roleRef kind ${JSON.stringify(ref.kind)} in ${b.kind} ${JSON.stringify(b.name)}`;
  }

  /** The rules `user` holds in `namespace` ('' = cluster-wide bindings only), as kube's RBAC RulesFor; unresolvable roles are errors. */
  rulesFor(user: UserInfo, namespace: string, out: PolicyRule[], errors: string[]): void {
    const visit = (bindings: Binding[] | undefined): void => {
      for (const b of bindings ?? []) {
        if (!b.subjects.some((s) => subjectMatches(user, s, b.namespace))) continue;
        const rules = this.rulesOf(b);
        if (typeof rules === 'string') errors.push(rules);
        else out.push(...rules);
      }
    };
    visit(this.clusterBindings);
    if (namespace) visit(this.bindingsByNamespace.get(namespace));
  }

  /** Kubernetes' RBAC authorizer: allow with the granting binding as reason, else no opinion. */
  evaluate(a: Attributes): AuthorizationResult {
    const errors: string[] = [];
    const visit = (bindings: Binding[] | undefined): AuthorizationResult | undefined => {
      for (const b of bindings ?? []) {
        if (!b.subjects.some((s) => subjectMatches(a.user, s, b.namespace))) continue;
        const rules = this.rulesOf(b);
        if (typeof rules === 'string') {
          errors.push(rules);
          continue;
        }
        for (const r of rules) {
          if (ruleAllows(a, r)) {
            const where = b.kind === 'RoleBinding' ? ` in namespace ${JSON.stringify(b.namespace)}` : '';
            return { decision: 'allow', reason: `RBAC: allowed by ${b.kind} ${JSON.stringify(b.name)}${where} of ${b.roleRef.kind} ${JSON.stringify(b.roleRef.name)}` };
          }
        }
      }
      return undefined;
    };
    const allowed = visit(this.clusterBindings) ?? (a.namespace ? visit(this.bindingsByNamespace.get(a.namespace)) : undefined);
    if (allowed) return allowed;
    return errors.length > 0 ? { decision: 'noopinion', reason: `RBAC: ${errors.join(', ')}` } : { decision: 'noopinion' };
  }
}

/** The cluster an object belongs to ('' = the default cluster). */
export function clusterOf(o: RBACObject): string {
  return o.metadata.annotations?.[CLUSTER_ANNOTATION] ?? '';
}

const WILDCARD_NEVER_GRANTED = 'RBAC: a request across all logical clusters (/clusters/*) is never granted by a binding inside one cluster';

/**
 * An immutable policy over every logical cluster: a grant applies only in the cluster its binding
 * belongs to; `everyCluster` objects (the bootstrap roles) apply in each cluster; nothing applies
 * to the wildcard. Build a new one on every reload and swap it in.
 */
export class RBACPolicy {
  private readonly clusters = new Map<string, ClusterPolicy>();
  private readonly everyCluster: ClusterPolicy | undefined;

  constructor(objects: RBACObject[], everyCluster: RBACObject[] = []) {
    this.everyCluster = everyCluster.length > 0 ? new ClusterPolicy(everyCluster) : undefined;
    const byCluster = new Map<string, RBACObject[]>();
    for (const o of objects) {
      const c = clusterOf(o);
      const list = byCluster.get(c) ?? [];
      list.push(o);
      byCluster.set(c, list);
    }
    for (const [c, objs] of byCluster) this.clusters.set(c, new ClusterPolicy(objs, this.everyCluster?.clusterRoles));
  }

  /** The rules `user` holds in `namespace` of `cluster` (its own grants and the bootstrap roles); nothing for the wildcard. */
  rulesFor(user: UserInfo, namespace: string, cluster?: string): SubjectRules {
    const rules: PolicyRule[] = [];
    const errors: string[] = [];
    if (cluster !== '*') {
      this.clusters.get(cluster ?? '')?.rulesFor(user, namespace, rules, errors);
      this.everyCluster?.rulesFor(user, namespace, rules, errors);
    }
    const out: SubjectRules = { resourceRules: [], nonResourceRules: [], incomplete: false };
    for (const r of rules) {
      if (r.nonResourceURLs?.length) out.nonResourceRules.push({ verbs: [...r.verbs], nonResourceURLs: [...r.nonResourceURLs] });
      else {
        const rr: ResourceRule = { verbs: [...r.verbs] };
        if (r.apiGroups) rr.apiGroups = [...r.apiGroups];
        if (r.resources) rr.resources = [...r.resources];
        if (r.resourceNames?.length) rr.resourceNames = [...r.resourceNames];
        out.resourceRules.push(rr);
      }
    }
    if (errors.length) out.evaluationError = errors.join(', ');
    return out;
  }

  evaluate(a: Attributes): AuthorizationResult {
    if (a.cluster === '*') return { decision: 'noopinion', reason: WILDCARD_NEVER_GRANTED };
    const own = this.clusters.get(a.cluster ?? '')?.evaluate(a);
    if (own?.decision === 'allow') return own;
    const shared = this.everyCluster?.evaluate(a);
    if (shared?.decision === 'allow') return shared;
    return own ?? shared ?? { decision: 'noopinion' };
  }
}

/** An authorizer over a policy that can be swapped atomically (file reloads). */
export class RBACAuthorizer implements Authorizer {
  constructor(protected policy: RBACPolicy) {}

  setPolicy(p: RBACPolicy): void {
    this.policy = p;
  }

  async authorize(attrs: Attributes): Promise<AuthorizationResult> {
    return this.policy.evaluate(attrs);
  }

  rulesFor(user: UserInfo, namespace: string, cluster?: string): SubjectRules {
    return this.policy.rulesFor(user, namespace, cluster);
  }
}
