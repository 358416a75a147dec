// The WindowSink the mirror writes to: every call is one compare-and-swap of the GitTarget's
// window record, so it is durable when it resolves (the Store acknowledged it).
import type { Logger } from '../../metrics/logger.js';
import type { KubeObject } from '../../storage/types.js';
import { closeDue, commitsEachChange, openWindow, policyOf, type CommitPolicy } from './policy.js';
import { mergeChanges, recordSnapshot, unchanged, type Window, type WindowRecord, type WindowRecords } from './record.js';
import type { PendingChange, SnapshotInput, TargetKey, WindowOutcome, WindowSink } from './types.js';

export type SnapshotListener = (target: TargetKey, id: string, outcome: WindowOutcome) => void;

export class StoreWindowSink implements WindowSink {
  private readonly listeners = new Set<SnapshotListener>();

  constructor(
    private readonly records: WindowRecords,
    /** The GitTarget as last seen (its spec.commit decides how windows close). */
    private readonly gitTarget: (t: TargetKey) => KubeObject | undefined,
    private readonly log?: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  async add(target: TargetKey, changes: PendingChange[]): Promise<void> {
    if (changes.length === 0) return;
    const policy = policyOf(this.gitTarget(target));
    await this.records.mutate(target, (r) => addChanges(r, changes, policy, this.now()));
  }

  async snapshot(target: TargetKey, input: SnapshotInput): Promise<void> {
    const now = this.now();
    await this.records.mutate(target, (r) => {
      if (r.snapshots.some((s) => s.id === input.id) || r.windows.some((w) => w.snapshotId === input.id)) return unchanged(undefined);
      // Changes already added are committed first, in their own window, so order is kept.
      const open = openWindow(r);
      if (open) open.closing = { reason: 'snapshot', at: now, attempts: 0 };
      const w: Window = { seq: r.nextSeq++, kind: 'snapshot', snapshotId: input.id, authorKey: '', openedAt: now, lastChangeAt: now, changes: [] };
      mergeChanges(w, [...input.writes, ...(input.deletes ?? []).map((ref) => ({ op: 'delete' as const, ref }))]);
      w.closing = { reason: 'snapshot', at: now, attempts: 0 };
      r.windows.push(w);
      return undefined;
    });
  }

  async snapshotOutcome(target: TargetKey, id: string): Promise<WindowOutcome | undefined> {
    const r = await this.records.get(target);
    const s = r?.snapshots.find((x) => x.id === id);
    if (!s) return undefined;
    const { id: _id, ...outcome } = s;
    return outcome;
  }

  onSnapshotLanded(listener: SnapshotListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Called by the windows controller when a snapshot window was committed. */
  notifySnapshot(target: TargetKey, id: string, outcome: WindowOutcome): void {
    for (const l of this.listeners) {
      try {
        l(target, id, outcome);
      } catch (e) {
        this.log?.error('snapshot listener threw', { error: (e as Error).message });
      }
    }
  }
}

/** The record transition of WindowSink.add (pure; exported for the controller's tests). */
export function addChanges(r: WindowRecord, changes: PendingChange[], policy: CommitPolicy, now: number): void {
  let open = openWindow(r);
  // A window whose close time already passed takes nothing more: it is due, the controller closes it next.
  if (open && closeDue(open, policy).at <= now) {
    open.closing = { reason: closeDue(open, policy).reason, at: now, attempts: 0 };
    open = undefined;
  }
  const newWindow = (): Window => {
    const w: Window = { seq: r.nextSeq++, kind: 'changes', authorKey: '', openedAt: now, lastChangeAt: now, changes: [] };
    // The oldest waiting CommitRequest claims a window the moment it opens.
    const waiting = r.waiting.shift();
    if (waiting) {
      const { closeDelayMs, deadline: _d, ...req } = waiting;
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
