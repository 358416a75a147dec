// --authorization-policy-file: a YAML stream (or List) of rbac.authorization.k8s.io/v1 objects,
// validated strictly and re-read when it changes. A broken edit keeps the previous policy (and is
// logged); a broken file at startup stops the server.
import { readFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';
import { CLUSTER_ANNOTATION, RBACAuthorizer, RBACPolicy, type RBACObject } from './rbac.js';
import { watchFileContent } from './filewatch.js';
import type { AuthLogger } from './deps.js';
import { BOOTSTRAP_POLICY } from './bootstrap-policy.js';

export interface PolicyOptions {
  /** Add kube-apiserver's bootstrap discovery roles (a file object of the same kind and name wins). */
  bootstrapRoles?: boolean;
}

const RBAC_API = 'rbac.authorization.k8s.io/v1';
const KINDS = new Set(['Role', 'ClusterRole', 'RoleBinding', 'ClusterRoleBinding']);
const SUBJECT_KINDS = new Set(['User', 'Group', 'ServiceAccount']);
/** Logical cluster names as request paths accept them (apiserver/request-info.ts). */
const CLUSTER_NAME = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

function isStringList(v: unknown): v is string[] {
  return Array.isArray(v) && v.every((x) => typeof x === 'string');
}

function validate(o: unknown, where: string): RBACObject {
  if (!o || typeof o !== 'object') throw new Error(`${where}: not an object`);
  const obj = o as Record<string, unknown>;
  const kind = obj.kind;
  if (typeof kind !== 'string' || !KINDS.has(kind)) throw new Error(`${where}: kind ${JSON.stringify(kind)} is not one of ${[...KINDS].join(', ')}`);
  if (obj.apiVersion !== RBAC_API) throw new Error(`${where}: ${kind} must have apiVersion ${RBAC_API}`);
  const md = obj.metadata as Record<string, unknown> | undefined;
  const name = md?.name;
  if (typeof name !== 'string' || !name) throw new Error(`${where}: ${kind} has no metadata.name`);
  const id = `${where}: ${kind} ${JSON.stringify(name)}`;
  const annotations = md?.annotations as Record<string, unknown> | undefined;
  const cluster = annotations?.[CLUSTER_ANNOTATION];
  if (cluster !== undefined) {
    if (cluster === '*') throw new Error(`${id}: annotation ${CLUSTER_ANNOTATION}: a grant cannot belong to the wildcard cluster "*" (use --wildcard-cluster-groups)`);
    if (typeof cluster !== 'string' || !CLUSTER_NAME.test(cluster)) {
      throw new Error(`${id}: annotation ${CLUSTER_ANNOTATION}: ${JSON.stringify(cluster)} is not a logical cluster name (lower-case alphanumerics and dashes)`);
    }
  }
  const namespaced = kind === 'Role' || kind === 'RoleBinding';
  if (namespaced && (typeof md?.namespace !== 'string' || !md.namespace)) throw new Error(`${id} needs metadata.namespace`);
  if (!namespaced && md?.namespace) throw new Error(`${id} is cluster-scoped and must not have metadata.namespace`);
  if (kind === 'Role' || kind === 'ClusterRole') {
    const rules = obj.rules ?? [];
    if (!Array.isArray(rules)) throw new Error(`${id}: rules must be a list`);
    rules.forEach((r: unknown, i) => {
      const rule = r as Record<string, unknown>;
      if (!rule || typeof rule !== 'object') throw new Error(`${id}: rules[${i}] is not an object`);
      if (!isStringList(rule.verbs) || rule.verbs.length === 0) throw new Error(`${id}: rules[${i}].verbs must be a non-empty list of strings`);
      for (const f of ['apiGroups', 'resources', 'resourceNames', 'nonResourceURLs']) {
        if (rule[f] !== undefined && rule[f] !== null && !isStringList(rule[f])) throw new Error(`${id}: rules[${i}].${f} must be a list of strings`);
      }
      const hasRes = Array.isArray(rule.resources) && rule.resources.length > 0;
      const hasURLs = Array.isArray(rule.nonResourceURLs) && rule.nonResourceURLs.length > 0;
      if (hasURLs && (hasRes || kind === 'Role')) throw new Error(`${id}: rules[${i}]: nonResourceURLs cannot be combined with resources and are only valid in a ClusterRole`);
      if (hasRes && !Array.isArray(rule.apiGroups)) throw new Error(`${id}: rules[${i}]: resource rules need apiGroups ("" is the core group)`);
    });
  } else {
    const ref = obj.roleRef as Record<string, unknown> | undefined;
    if (!ref || typeof ref.name !== 'string' || (ref.kind !== 'Role' && ref.kind !== 'ClusterRole')) {
      throw new Error(`${id}: roleRef needs kind Role or ClusterRole and a name`);
    }
    if (kind === 'ClusterRoleBinding' && ref.kind !== 'ClusterRole') throw new Error(`${id}: a ClusterRoleBinding can only refer to a ClusterRole`);
    const subjects = obj.subjects ?? [];
    if (!Array.isArray(subjects)) throw new Error(`${id}: subjects must be a list`);
    subjects.forEach((s: unknown, i) => {
      const sub = s as Record<string, unknown>;
      if (!sub || typeof sub.name !== 'string' || typeof sub.kind !== 'string' || !SUBJECT_KINDS.has(sub.kind)) {
        throw new Error(`${id}: subjects[${i}] needs kind User, Group or ServiceAccount and a name`);
      }
      if (sub.kind === 'ServiceAccount' && kind === 'ClusterRoleBinding' && !sub.namespace) {
        throw new Error(`${id}: subjects[${i}]: a ServiceAccount subject needs a namespace`);
      }
    });
  }
  return obj as unknown as RBACObject;
}

/** Parses and validates a policy; errors name the document and object. */
export function parsePolicy(text: string, source = 'policy', opts: PolicyOptions = {}): RBACPolicy {
  const objects: RBACObject[] = [];
  parseAllDocuments(text).forEach((doc, i) => {
    if (doc.errors.length > 0) throw new Error(`${source}: document ${i + 1}: ${doc.errors[0]!.message}`);
    const v: unknown = doc.toJS();
    if (v === null || v === undefined) return;
    const where = `${source}: document ${i + 1}`;
    const list = v as { kind?: unknown; items?: unknown };
    if (typeof list.kind === 'string' && list.kind.endsWith('List')) {
      if (!Array.isArray(list.items)) throw new Error(`${where}: ${list.kind} without items`);
      list.items.forEach((it, j) => objects.push(validate(it, `${where} item ${j + 1}`)));
    } else {
      objects.push(validate(v, where));
    }
  });
  let everyCluster: RBACObject[] = [];
  if (opts.bootstrapRoles) {
    const own = new Set(objects.map((o) => `${o.kind}/${o.metadata.name}`));
    everyCluster = BOOTSTRAP_POLICY.filter((o) => !own.has(`${o.kind}/${o.metadata.name}`));
  }
  return new RBACPolicy(objects, everyCluster);
}

export class RBACFileAuthorizer extends RBACAuthorizer {
  private stop: () => void = () => {};
  /** Incremented on each successful reload (tests wait on it). */
  loads = 0;

  static async start(path: string, pollMs: number, logger: AuthLogger, opts: PolicyOptions = {}): Promise<RBACFileAuthorizer> {
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (e) {
      throw new Error(`--authorization-policy-file: cannot read ${path}: ${(e as Error).message}`);
    }
    let policy: RBACPolicy;
    try {
      policy = parsePolicy(text, path, opts);
    } catch (e) {
      throw new Error(`--authorization-policy-file: ${(e as Error).message}`);
    }
    const a = new RBACFileAuthorizer(policy);
    a.loads = 1;
    a.stop = watchFileContent(path, pollMs, (t) => {
      try {
        a.setPolicy(parsePolicy(t, path, opts));
        a.loads++;
        logger.info(`authorization: reloaded RBAC policy ${path}`);
      } catch (e) {
        logger.error(`authorization: RBAC policy ${path} changed but is invalid, keeping the previous policy: ${(e as Error).message}`);
      }
    }, (e) => logger.error(`authorization: re-reading RBAC policy ${path}: ${e.message}`));
    return a;
  }

  close(): void {
    this.stop();
  }
}
