// What of a live object is written to Git (design §6, digest §2). The sanitized object is built
// from an allowlist rather than stripped from a copy, so a field the server adds later never leaks.
import type { KubeObject } from '../storage/types.js';

const PAYLOAD_KEYS = ['spec', 'data', 'binaryData'];
const EXTRA_TOP_LEVEL_KEYS = ['rules', 'subjects', 'roleRef', 'webhooks', 'template', 'involvedObject', 'reason', 'message', 'type', 'eventTime'];

const LABEL_PREFIXES = ['kustomize.toolkit.fluxcd.io/', 'kro.run/', 'applyset.kubernetes.io/'];
const ANNOTATION_PREFIXES = [
  'kubectl.kubernetes.io/',
  'control-plane.alpha.kubernetes.io/',
  'deployment.kubernetes.io/',
  'autoscaling.alpha.kubernetes.io/',
  'kustomize.toolkit.fluxcd.io/',
  'applyset.kubernetes.io/',
];
// Other argocd.argoproj.io/* and kcp.io/* keys are user intent (sync waves, options) and stay.
const ANNOTATION_KEYS = new Set(['argocd.argoproj.io/tracking-id', 'argocd.argoproj.io/installation-id', 'kcp.io/cluster']);

/** spec fields the cluster assigns, per kind; they differ per cluster and must not be committed. */
const KIND_SPEC_REMOVALS: Record<string, string[]> = {
  Service: ['clusterIP', 'clusterIPs', 'healthCheckNodePort', 'ipFamilies', 'ipFamilyPolicy', 'internalTrafficPolicy'],
  Pod: ['nodeName'],
  PersistentVolumeClaim: ['volumeName', 'volumeMode'],
};

export interface SanitizeOptions {
  /** Reserved for callers that mirror cluster noise; sanitizing itself does not depend on it. */
  includeClusterNoise?: boolean;
}

function cleanMap(m: unknown, prefixes: string[], exact?: Set<string>): Record<string, string> | undefined {
  if (!m || typeof m !== 'object') return undefined;
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(m as Record<string, string>)) {
    if (prefixes.some((p) => k.startsWith(p)) || exact?.has(k)) continue;
    out[k] = v;
  }
  return Object.keys(out).length ? out : undefined;
}

function clone<T>(v: T): T {
  return v === undefined ? v : (JSON.parse(JSON.stringify(v)) as T);
}

/** The object as it is written to Git; never mutates its input. */
export function sanitizeObject(obj: KubeObject, _opts: SanitizeOptions = {}): KubeObject {
  const meta = obj.metadata ?? {};
  const metadata: KubeObject['metadata'] = {};
  if (meta.name) metadata.name = meta.name;
  if (meta.namespace) metadata.namespace = meta.namespace;
  const labels = cleanMap(meta.labels, LABEL_PREFIXES);
  if (labels) metadata.labels = labels;
  const annotations = cleanMap(meta.annotations, ANNOTATION_PREFIXES, ANNOTATION_KEYS);
  if (annotations) metadata.annotations = annotations;

  const out: KubeObject = { apiVersion: obj.apiVersion, kind: obj.kind, metadata };
  for (const key of [...PAYLOAD_KEYS, ...EXTRA_TOP_LEVEL_KEYS]) {
    if (obj[key] !== undefined) out[key] = clone(obj[key]);
  }
  const removals = KIND_SPEC_REMOVALS[obj.kind];
  if (removals && out.spec && typeof out.spec === 'object' && (obj.apiVersion === 'v1')) {
    for (const f of removals) delete (out.spec as Record<string, unknown>)[f];
  }
  return out;
}

/** The resource (plural) an object belongs to, as named in a GitTarget rule. */
export interface NoiseResource {
  group: string;
  resource: string;
}

const LEADER_ELECTION_ANNOTATION = 'control-plane.alpha.kubernetes.io/leader';

/**
 * Objects every cluster generates on its own; they do not belong in a portable Git view and are
 * filtered unless a GitTarget sets `includeClusterNoise: true`.
 */
export function isClusterNoise(obj: KubeObject, resource: NoiseResource): boolean {
  const { group, resource: res } = resource;
  const meta = obj.metadata ?? {};
  if (group === '' && res === 'events') return true;
  if (group === 'events.k8s.io' && res === 'events') return true;
  if (group === '' && res === 'configmaps') {
    if (meta.name === 'kube-root-ca.crt') return true;
    // Old-style leader election stores its record in a ConfigMap annotation.
    if (meta.annotations && LEADER_ELECTION_ANNOTATION in meta.annotations) return true;
  }
  if (group === '' && res === 'secrets' && obj.type === 'kubernetes.io/service-account-token') return true;
  if (group === 'coordination.k8s.io' && res === 'leases') {
    // Node heartbeats and controller leader election; a user-made Lease without a holder is kept.
    if (meta.namespace === 'kube-node-lease') return true;
    const spec = obj.spec as Record<string, unknown> | undefined;
    if (spec && (spec.holderIdentity !== undefined || spec.leaseDurationSeconds !== undefined)) return true;
  }
  if (group === '' && res === 'endpoints' && meta.annotations && LEADER_ELECTION_ANNOTATION in meta.annotations) return true;
  return false;
}
