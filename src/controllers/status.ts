// Status writes of controllers: read the object, change only the fields this controller owns,
// write it back through the registry (client.ts), retrying on conflict. Several controllers (and replicas) write parts
// of one status (GitTarget: mirror-source owns Validated/SourceReachable/Synced/streams/Ready, the
// windows controller lastCommit/pendingChanges/RepositoryReady), so none may write from a stale copy.
import type { KubeObject, ObjectKey, ResourceRef } from '../storage/types.js';
import type { SystemClient } from './client.js';

export interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
  lastTransitionTime?: string;
  observedGeneration?: number;
}

/** Sets a condition; lastTransitionTime moves only when the status changes. Returns whether anything changed. */
export function setCondition(status: Record<string, unknown>, c: Condition, generation?: number): boolean {
  const conds = (Array.isArray(status.conditions) ? status.conditions : []) as Condition[];
  const old = conds.find((x) => x.type === c.type);
  const next: Condition = {
    type: c.type,
    status: c.status,
    observedGeneration: generation,
    lastTransitionTime: old && old.status === c.status && old.lastTransitionTime ? old.lastTransitionTime : new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'),
    reason: c.reason,
    message: c.message,
  };
  if (generation === undefined) delete next.observedGeneration;
  if (old && old.status === next.status && old.reason === next.reason && old.message === next.message && old.observedGeneration === next.observedGeneration) return false;
  status.conditions = old ? conds.map((x) => (x.type === c.type ? next : x)) : [...conds, next];
  return true;
}

export function getCondition(obj: KubeObject | undefined, type: string): Condition | undefined {
  const conds = (obj?.status as { conditions?: Condition[] } | undefined)?.conditions;
  return Array.isArray(conds) ? conds.find((c) => c.type === type) : undefined;
}

/**
 * Updates the status of an object through the registry as the system identity (SystemClient):
 * `fn` edits the status in place and returns false when it changed nothing (no write). Resolves
 * with the stored object, or undefined when it is gone or its uid is not `uid`; retried on
 * conflict; a status the resource's validation refuses rejects with its 422 StatusError.
 */
export function updateStatus(
  client: SystemClient,
  res: ResourceRef,
  key: ObjectKey,
  uid: string | undefined,
  fn: (status: Record<string, unknown>, obj: KubeObject) => boolean,
): Promise<KubeObject | undefined> {
  return client.updateStatus(res, key, uid, fn);
}
