// Status writes of controllers: read the object, change only the fields this controller owns,
// compare-and-swap it back, retrying on conflict. Several controllers (and replicas) write parts
// of one status (GitTarget: mirror-source owns Validated/SourceReachable/Synced/streams/Ready, the
// windows controller lastCommit/pendingChanges/RepositoryReady), so none may write from a stale copy.
import { StorageError, type KubeObject, type ObjectKey, type ResourceRef, type Store } from '../storage/types.js';

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
 * CAS-updates the status of an object: `fn` edits the status in place and returns false when it
 * changed nothing (no write). Resolves with the stored object, or undefined when it is gone or
 * its uid is not `uid`.
 */
export async function updateStatus(
  store: Pick<Store, 'get' | 'update'>,
  res: ResourceRef,
  key: ObjectKey,
  uid: string | undefined,
  fn: (status: Record<string, unknown>, obj: KubeObject) => boolean,
): Promise<KubeObject | undefined> {
  for (let attempt = 0; ; attempt++) {
    const cur = await store.get(res, key);
    if (!cur || (uid !== undefined && cur.metadata.uid !== uid)) return undefined;
    const next = structuredClone(cur);
    const status = (next.status && typeof next.status === 'object' ? next.status : {}) as Record<string, unknown>;
    if (!fn(status, next)) return cur;
    next.status = status;
    try {
      return await store.update(res, key, next, Number(cur.metadata.resourceVersion));
    } catch (e) {
      if (e instanceof StorageError && e.code === 'Conflict' && attempt < 20) continue;
      throw e;
    }
  }
}
