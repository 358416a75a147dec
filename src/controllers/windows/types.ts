// The contract between the mirror (which turns source objects into changes) and the commit
// windows (which turn pending changes into commits). The mirror only ever talks to a WindowSink;
// everything behind it (the durable window records in the Store, the lease per GitTarget, the git
// engine worker) belongs to the windows controller.
import type { Change, ObjectRef } from '../../git/index.js';

/**
 * One GitTarget, as the windows know it. `uid` is part of the key: a GitTarget deleted and
 * recreated under the same name starts with fresh windows, never inheriting the old one's.
 */
export interface TargetKey {
  /** Logical cluster of the GitTarget (storage DEFAULT_CLUSTER `_` for a plain deployment). */
  cluster: string;
  namespace: string;
  name: string;
  uid: string;
}

/** Where a change came from in the source cluster: the key a later audit fact joins on (#15). */
export interface ChangeSource {
  uid: string;
  resourceVersion: string;
  /** Plural resource in the source cluster (a delete's ObjectRef names only the kind). */
  resource?: string;
}

/**
 * A change waiting to be committed: the git engine's Change (`write` of an already sanitized
 * object with its resource plural, or `delete` of an object reference), plus its provenance.
 */
export type PendingChange = Change & { source?: ChangeSource };

/** The first materialization of a GitTarget: everything a complete listing selected. */
export interface SnapshotInput {
  /**
   * Caller-chosen id of this snapshot (e.g. `<generation>-<listRV>`). Recorded when the commit
   * lands; submitting the same id again while it is pending or after it landed is a no-op.
   */
  id: string;
  /** Every selected object of the complete listing, sanitized: `op: 'write'` changes. */
  writes: PendingChange[];
  /** prune: Always only — files whose objects are gone after the complete re-list. */
  deletes?: ObjectRef[];
}

/** How a snapshot (or any window) ended, as recorded in the target's window record. */
export interface WindowOutcome {
  outcome: 'Committed' | 'AlreadyPresent' | 'Failed';
  sha?: string;
  message?: string;
  /** RFC 3339. */
  time: string;
}

export interface WindowSink {
  /**
   * Adds changes to the GitTarget's open commit window (opening one when none is open). Resolves
   * once the changes are durable in the Store (acknowledged: they survive a crash of this process
   * and are seen by every replica); rejects when they are not, so the caller retries or re-lists.
   * Within a window the latest change per file wins and first-seen order is kept.
   */
  add(target: TargetKey, changes: PendingChange[]): Promise<void>;
  /**
   * Queues a snapshot to be committed as ONE commit, ordered after the changes already added.
   * Resolves once it is durable (not when it lands). Landing is observable with
   * snapshotOutcome(), and the windows controller sets status.lastCommit when it pushes.
   */
  snapshot(target: TargetKey, input: SnapshotInput): Promise<void>;
  /**
   * The recorded outcome of the snapshot `id`: undefined while it is pending (or unknown).
   * Outcomes of the most recent snapshots per target are kept (survive restarts).
   */
  snapshotOutcome(target: TargetKey, id: string): Promise<WindowOutcome | undefined>;
  /**
   * Calls `listener` whenever a snapshot of any target lands (on the replica that holds the
   * target's lease; other replicas see it through snapshotOutcome / the Store). With `uid`, only
   * that target's, and also as the replica sees its outcomes recorded in the Store, whoever landed
   * them (possibly more than once, and for earlier snapshots: filter by id). Returns an unsubscribe.
   */
  onSnapshotLanded(listener: (target: TargetKey, id: string, outcome: WindowOutcome) => void, uid?: string): () => void;
}
