// The record transitions of changes and snapshots joining windows (pure functions of the record;
// every caller runs them inside one compare-and-swap, WindowRecords.mutate).
import type { StagedAttribution, Window, WindowRecord } from './record.js';
import { mergeChanges, recordSnapshot } from './record.js';
import { dropLeaving, isResync, reconcile, type Leaving } from './reconcile.js';
import { closeDue, commitsEachChange, mayClaim, openWindow, type CommitPolicy } from './policy.js';
import type { PendingChange, SnapshotInput } from './types.js';

/** Whose changes: unattributed (no audit route) unless the join named someone. */
export type WindowAuthor = Pick<StagedAttribution, 'authorKey' | 'author' | 'kind'>;
export const UNATTRIBUTED: WindowAuthor | undefined = undefined;

/** Changes joining the open window of their author (opening one, closing another author's). */
export function addChanges(r: WindowRecord, changes: PendingChange[], policy: CommitPolicy, now: number, who?: WindowAuthor): void {
  const authorKey = who?.authorKey ?? '';
  let open = openWindow(r);
  // A window whose close time already passed takes nothing more: it is due, the controller closes it next.
  // (Due exactly now is not past: changes moved in the same transition — a drained staging list
  // whose first change opened the window a request with closeDelaySeconds 0 claimed — stay together.)
  if (open && closeDue(open, policy).at < now) {
    open.closing = { reason: closeDue(open, policy).reason, at: now, attempts: 0 };
    open = undefined;
  }
  // Windows never mix authors: another author's change closes the open window.
  if (open && open.authorKey !== authorKey) {
    open.closing = { reason: 'author-changed', at: now, attempts: 0 };
    open = undefined;
  }
  const newWindow = (): Window => {
    const w: Window = { seq: r.nextSeq++, kind: 'changes', authorKey, openedAt: now, lastChangeAt: now, changes: [] };
    if (who) {
      w.author = { name: who.author.name, email: who.author.email };
      w.authorKind = who.kind;
    }
    // The oldest waiting CommitRequest that may claim it claims a window the moment it opens.
    const i = r.waiting.findIndex((x) => mayClaim(w, x.claims));
    if (i >= 0) {
      const [{ closeDelayMs, deadline: _d, ...req }] = r.waiting.splice(i, 1);
      w.request = { ...req, attachedAt: now, closeAt: now + closeDelayMs };
    }
    r.windows.push(w);
    return w;
  };
  if (commitsEachChange(policy) && !open?.request) {
    for (const c of changes) {
      if (open?.request) {
        mergeChanges(open, [c]);
        continue;
      }
      const w = newWindow();
      mergeChanges(w, [c]);
      if (w.request) open = w;
      else w.closing = { reason: 'idle-zero', at: now, attempts: 0 };
    }
    return;
  }
  const w = open ?? newWindow();
  mergeChanges(w, changes);
  w.lastChangeAt = now;
}

/**
 * A snapshot: one closed window of its own, committed before the open window (reconcile.ts). The
 * open window stays open with its author and CommitRequest; what it already holds leaves the
 * snapshot, and an object that changed again while nobody watched leaves the window for it. A
 * re-list of a selection that already landed is a resync (its message says so). When the open
 * window already said everything, nothing is queued and the snapshot is recorded AlreadyPresent.
 * `reconciled` is given by a chunked snapshot, compared before its chunks were written.
 */
export function applySnapshot(
  r: WindowRecord,
  input: Pick<SnapshotInput, 'id'> & { changes: PendingChange[]; chunked?: { chunks: number; changes: number }; reconciled?: Leaving[] },
  now: number,
): void {
  const open = openWindow(r);
  let changes = input.changes;
  let leaving = input.reconciled ?? [];
  if (!input.chunked) {
    const rec = reconcile(r, changes);
    changes = rec.changes;
    leaving = rec.leaving;
    if (changes.length === 0 && rec.kept > 0) {
      recordSnapshot(r, input.id, { outcome: 'AlreadyPresent', message: 'every re-listed object is pending in the open window', time: iso(now) });
      return;
    }
  }
  dropLeaving(open, leaving);
  // A window the re-list emptied holds nothing of anyone's any more (a request attached to it stays, and ends AlreadyPresent).
  if (open && open.changes.length === 0 && !open.request) r.windows.splice(r.windows.indexOf(open), 1);
  const before = open && r.windows.includes(open) ? open : undefined;
  const w: Window = { seq: r.nextSeq++, kind: 'snapshot', snapshotId: input.id, authorKey: '', openedAt: now, lastChangeAt: now, changes: [] };
  if (isResync(r, input.id)) w.resync = true;
  mergeChanges(w, changes);
  if (input.chunked) {
    w.chunks = input.chunked.chunks;
    w.chunkedChanges = input.chunked.changes;
  }
  w.closing = { reason: w.resync ? 'resync' : 'snapshot', at: now, attempts: 0 };
  // Before the open window: it keeps collecting (and stays the one a CommitRequest claims).
  if (before) r.windows.splice(r.windows.indexOf(before), 0, w);
  else r.windows.push(w);
}

function iso(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

export function snapshotChanges(input: SnapshotInput): PendingChange[] {
  return [...input.writes, ...(input.deletes ?? []).map((ref) => ({ op: 'delete' as const, ref }))];
}
