// The durable state of one GitTarget's commit windows: one internal object per GitTarget in the
// Store (group internal.configbutler.ai, resource commitwindows — never served over HTTP), changed
// only by compare-and-swap. One object per target makes every transition atomic: a change joining
// a window, a CommitRequest attaching to it, a window closing, and a commit's outcome replacing
// the window all happen in one write, on either backend, and survive crashes and replica changes.
import { identityKey, identityOf } from '../../git/manifest-yaml.js';
import type { Person } from '../../git/index.js';
import type { JoinTier } from '../../attribution/join.js';
import { DEFAULT_CLUSTER, StorageError, type KubeObject, type ObjectKey, type ResourceRef, type Store } from '../../storage/types.js';
import type { PendingChange, TargetKey, WindowOutcome } from './types.js';

export const WINDOWS_RESOURCE: ResourceRef = { group: 'internal.configbutler.ai', resource: 'commitwindows' };
export const WINDOWS_API_VERSION = 'internal.configbutler.ai/v1';

/** Who a commit names as its author (the author_kind label of reverser_commits_total). */
export type AuthorKind = 'asserted' | 'submitter' | 'committer' | 'audit' | 'unresolved';

/** A CommitRequest bound to a window: its message and author ride the window. */
export interface AttachedRequest {
  name: string;
  uid: string;
  message: string;
  author: Person;
  authorKind: AuthorKind;
  /** The authorKey of the attributed windows this request may claim (its submitter's); unattributed windows any request claims. */
  claims?: string;
  /** ms since epoch */
  attachedAt: number;
  closeAt: number;
}

/** A CommitRequest waiting for a window to open (none was open, or the open one had a request). */
export interface WaitingRequest extends Omit<AttachedRequest, 'attachedAt' | 'closeAt'> {
  closeDelayMs: number;
  /** Give up (NothingToCommit) when no window opened for it by then. */
  deadline: number;
}

export interface Window {
  seq: number;
  kind: 'changes' | 'snapshot';
  snapshotId?: string;
  /** A snapshot re-listing a selection that already landed (a restart, a takeover): commits only what changed unseen. */
  resync?: boolean;
  /**
   * Whose changes these are: '' = unattributed (no audit route; a snapshot), `user:<username>` =
   * the edits of one audited user, `unresolved` = edits no fact named in time. Windows are keyed
   * by (GitTarget, author): a change by another author closes the open window.
   */
  authorKey: string;
  /** The author of an attributed window (from its first fact); a CommitRequest's author overrides it. */
  author?: Person;
  authorKind?: Extract<AuthorKind, 'audit' | 'unresolved'>;
  openedAt: number;
  lastChangeAt: number;
  /** First-seen order; one entry per object (the latest change wins). Empty when chunked. */
  changes: Array<{ key: string; change: PendingChange }>;
  /** A large snapshot's changes are in this many chunk objects instead (chunks.ts)... */
  chunks?: number;
  /** ...holding this many changes. */
  chunkedChanges?: number;
  request?: AttachedRequest;
  /**
   * Set once the window is closed: nothing joins it any more and it is committed next.
   * `failedAt`: when an attempt to commit it last failed (only the first window is ever attempted).
   * `windows`: how many closed windows were coalesced into this one (coalesceBacklog), when more than one.
   */
  closing?: { reason: string; at: number; attempts: number; failedAt?: number; windows?: number };
}

export interface RequestOutcome {
  name: string;
  uid: string;
  outcome: 'Committed' | 'NothingToCommit' | 'AlreadyPresent' | 'Failed';
  message: string;
  sha?: string;
  branch?: string;
  author?: Person;
  authorKind?: AuthorKind;
  time: string;
}

/**
 * A change waiting for the audit fact that names its author (or a snapshot queued behind such
 * changes). Kept in order: the head leaves first, into its author's window, once a fact matches or
 * its grace ends; nothing overtakes it.
 */
export interface StagedEntry {
  seq: number;
  /** ms since epoch: staged at, and the end of its grace. */
  stagedAt: number;
  deadline: number;
  change?: PendingChange;
  /** Resolved at add time while older entries still waited. */
  resolved?: StagedAttribution;
  snapshot?: { id: string; changes: PendingChange[] };
}

export interface StagedAttribution {
  authorKey: string;
  author: Person;
  kind: 'audit' | 'unresolved';
  tier: JoinTier;
  factTime?: string;
}

export interface WindowRecord extends KubeObject {
  target: TargetKey;
  nextSeq: number;
  windows: Window[];
  /** Changes awaiting attribution (GitTargets with an audit route); absent in records of older versions. */
  staging?: StagedEntry[];
  /** Fact health of this target's own changes (the AuditAttribution condition). */
  attribution?: {
    /** ms: the oldest of this target's changes still waiting for its fact; cleared when a fact names one. */
    awaitingFactsSince?: number;
    /** Written by older versions (the route's last fact, any tenant's); no longer read. */
    lastFactSeen?: string;
    /** How many of this target's changes audit facts named. */
    named?: number;
    /** RFC 3339 of the newest fact that named one of this target's changes. */
    lastNamedFactTime?: string;
  };
  waiting: WaitingRequest[];
  /** CommitRequest outcomes not yet written to the requests' status. */
  outcomes: RequestOutcome[];
  /** The latest snapshot outcomes (newest last). */
  snapshots: Array<{ id: string } & WindowOutcome>;
  lastCommit?: { sha: string; time: string };
}

const KEEP_SNAPSHOTS = 10;

export function changeKey(c: PendingChange): string {
  return c.op === 'write' ? identityKey(identityOf(c.object)) : identityKey(c.ref);
}

export function recordKey(t: TargetKey): ObjectKey {
  return { cluster: t.cluster, namespace: t.namespace, name: t.name };
}

export function emptyRecord(t: TargetKey): WindowRecord {
  return {
    apiVersion: WINDOWS_API_VERSION,
    kind: 'CommitWindows',
    // Outside the default cluster the record carries its logical cluster like every stored object.
    metadata: { name: t.name, namespace: t.namespace, ...(t.cluster !== DEFAULT_CLUSTER ? { annotations: { 'kcp.io/cluster': t.cluster } } : {}) },
    target: t,
    nextSeq: 1,
    windows: [],
    waiting: [],
    outcomes: [],
    snapshots: [],
  };
}

export function pendingCount(r: WindowRecord): number {
  return r.windows.reduce((n, w) => n + w.changes.length + (w.chunkedChanges ?? 0), 0) + (r.staging ?? []).reduce((n, s) => n + (s.change ? 1 : (s.snapshot?.changes.length ?? 0)), 0);
}

/** Whether the record holds anything for the controller to do. */
export function hasWork(r: WindowRecord): boolean {
  return r.windows.length > 0 || r.waiting.length > 0 || (r.staging?.length ?? 0) > 0;
}

export function recordSnapshot(r: WindowRecord, id: string, o: WindowOutcome): void {
  r.snapshots = [...r.snapshots.filter((s) => s.id !== id), { id, ...o }].slice(-KEEP_SNAPSHOTS);
}

/** Appends changes to a window: latest per object wins, keeping the position it was first seen at. */
export function mergeChanges(w: Window, changes: PendingChange[]): void {
  mergeKeyed(w, changes.map((change) => ({ key: changeKey(change), change })));
}

function mergeKeyed(w: Window, changes: Window['changes']): void {
  const at = new Map(w.changes.map((c, i) => [c.key, i]));
  for (const c of changes) {
    const i = at.get(c.key);
    if (i !== undefined) w.changes[i] = c;
    else {
      at.set(c.key, w.changes.length);
      w.changes.push(c);
    }
  }
}

/** Closed windows waiting behind the first one past which they coalesce even while commits succeed. */
export const COALESCE_QUEUED_WINDOWS = 64;

/**
 * Bounds a backlog by the objects in it, not by the edits. While the first window's commit is
 * failing (a remote outage), or once more than COALESCE_QUEUED_WINDOWS closed windows wait behind
 * it (commits slower than edits), each closed window behind the first one joins the closed window
 * before it when both are the same author's plain changes: latest change per object wins, at the
 * position first seen. What stays apart: the first window (it is the one being committed; a
 * counted attempt may already have pushed it), another author's window (attribution is the
 * product: each author's edits stay their own commit), a window a CommitRequest claimed (its
 * message and outcome are the request's), a snapshot. With one author the record then holds at
 * most two windows whatever the number of edits; with authors alternating, one window per run
 * of one author's edits. The result is the same tree, committed in fewer commits.
 * Run by WindowRecords.mutate on every transition.
 */
export function coalesceBacklog(r: WindowRecord): void {
  const head = r.windows[0];
  if (!head?.closing || r.windows.length < 3) return;
  if (head.closing.failedAt === undefined && r.windows.length - 1 <= COALESCE_QUEUED_WINDOWS) return;
  const kept: Window[] = [head];
  for (let i = 1; i < r.windows.length; i++) {
    const w = r.windows[i];
    const prev = kept[kept.length - 1];
    if (kept.length > 1 && coalescible(prev) && coalescible(w) && prev.authorKey === w.authorKey) {
      mergeKeyed(prev, w.changes);
      prev.lastChangeAt = Math.max(prev.lastChangeAt, w.lastChangeAt);
      prev.closing!.windows = (prev.closing!.windows ?? 1) + (w.closing!.windows ?? 1);
      continue;
    }
    kept.push(w);
  }
  r.windows = kept;
}

function coalescible(w: Window): boolean {
  return w.closing !== undefined && w.kind === 'changes' && !w.request && !w.chunks;
}

/** The first window's commit attempt failed (coalesceBacklog starts coalescing behind it). */
export function noteFailedAttempt(r: WindowRecord, seq: number, at: number): void {
  const w = r.windows[0];
  if (w?.seq === seq && w.closing) w.closing.failedAt = at;
}

export class WindowRecords {
  /** `list` for the snapshot chunks beside the records (chunks.ts). */
  constructor(readonly store: Pick<Store, 'get' | 'list' | 'create' | 'update' | 'delete'>) {}

  async get(t: TargetKey): Promise<WindowRecord | undefined> {
    const r = (await this.store.get(WINDOWS_RESOURCE, recordKey(t))) as WindowRecord | undefined;
    return r && r.target.uid === t.uid ? r : undefined;
  }

  /**
   * Read-modify-write with compare-and-swap, retried on conflict. `fn` mutates a copy and returns
   * a value; returning `false` from `changed` (when given) skips the write.
   * A record of an older GitTarget with the same name (another uid) is replaced.
   */
  async mutate<T>(t: TargetKey, fn: (r: WindowRecord) => T | { value: T; unchanged: true }): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      // The first attempt starts from the cache: the compare-and-swap below refuses a stale record
      // (Conflict, AlreadyExists or NotFound), and the retry reads consistently. Most callers have
      // just read the record consistently (controller.ts work), so the cache is current and a
      // consistent read here was one more GET and XRANGE per transition, ~4 per edit.
      const consistency = attempt === 0 ? 'any' : 'consistent';
      const cur = (await this.store.get(WINDOWS_RESOURCE, recordKey(t), { consistency })) as WindowRecord | undefined;
      const stale = cur !== undefined && cur.target.uid !== t.uid;
      const next: WindowRecord = cur && !stale ? structuredClone(cur) : emptyRecord(t);
      const out = fn(next);
      if (out && typeof out === 'object' && (out as { unchanged?: boolean }).unchanged === true) return (out as { value: T }).value;
      coalesceBacklog(next);
      try {
        if (!cur) await this.store.create(WINDOWS_RESOURCE, recordKey(t), next);
        else await this.store.update(WINDOWS_RESOURCE, recordKey(t), next, Number(cur.metadata.resourceVersion));
        return out as T;
      } catch (e) {
        if (e instanceof StorageError && (e.code === 'Conflict' || e.code === 'AlreadyExists' || e.code === 'NotFound') && attempt < 50) continue;
        throw e;
      }
    }
  }

  /** Removes the record once nothing is left in it (a deleted GitTarget). */
  async remove(t: TargetKey): Promise<void> {
    const cur = await this.store.get(WINDOWS_RESOURCE, recordKey(t));
    if (cur) await this.store.delete(WINDOWS_RESOURCE, recordKey(t), Number(cur.metadata.resourceVersion)).catch(() => undefined);
  }
}

export function unchanged<T>(value: T): { value: T; unchanged: true } {
  return { value, unchanged: true };
}
