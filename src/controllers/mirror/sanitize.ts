// What of a live source object is written to Git (docs/git-engine.md). It lives with the mirror,
// not in git/: the git engine writes whatever objects it is given and knows nothing of clusters.
// The sanitized object is built from an allowlist rather than stripped from a copy, so a field the
// server adds later never leaks.
import type { KubeObject } from '../../storage/types.js';

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

function cleanMap(m: unknown, prefixes: string[], exact?: Set<string>): Record<string, string> | undefined {
  if (!m || typeof m !== 'object') return undefined;
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(m as Record<string, string>)) {
    if (prefixes.some((p) => k.startsWith(p)) || exact?.has(k)) continue;
    out[k] = v;
  }
  return Object.keys(out).length ? out : undefined;
}

/**
 * A deep copy with what a JSON round trip would give (undefined members dropped, undefined array
 * items null, -0 as 0), sharing the strings: the mirror keeps this copy of every object it
 * selects, and a round trip made a second copy of every payload string beside the shared watch's
 * (docs/architecture.md "What one mirrored object holds"). Object.fromEntries defines `__proto__`
 * as an own key, as JSON.parse does.
 */
function clone<T>(v: T): T {
  if (Array.isArray(v)) return v.map((x) => (x === undefined ? null : clone(x))) as T;
  if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v).filter(([, x]) => x !== undefined).map(([k, x]) => [k, clone(x)])) as T;
  if (typeof v === 'number') return (Number.isFinite(v) ? v + 0 : null) as T;
  return v;
}

/** The object as it is written to Git; never mutates its input. */
export function sanitizeObject(obj: KubeObject): KubeObject {
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
