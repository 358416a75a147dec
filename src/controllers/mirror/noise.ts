// Cluster noise (docs/git-engine.md): objects every cluster generates on its own. The mirror skips
// them unless a GitTarget sets `includeClusterNoise: true`.
import type { KubeObject } from '../../storage/types.js';

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
