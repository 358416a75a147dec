// The windows controller's part of a GitTarget's status (controllers/status.ts says who owns what):
// pendingChanges, lastCommit and RepositoryReady — and Ready, recomputed in the same write when
// RepositoryReady changes, so a failing remote shows on Ready at once rather than at the mirror's
// next status write.
import type { KubeObject } from '../../storage/types.js';
import { inConditionOrder, readyCondition } from '../mirror/status.js';
import { setCondition, type Condition } from '../status.js';
import { realClock, type Clock, type ClockTimer } from '../runtime/clock.js';

export interface TargetStatus {
  pending?: number;
  lastCommit?: { sha: string; time: string };
  repoOK?: boolean;
  repoError?: { reason: string; message: string };
}

/** Edits `status` in place (updateStatus's callback); false when nothing changed (no write). */
export function applyTargetStatus(status: Record<string, unknown>, obj: KubeObject, s: TargetStatus): boolean {
  let changed = false;
  // A GitTarget that never had a pending change gets no status write (absent reads as 0). A
  // commit's write sets it even from absent: a window that closed within a second of opening was
  // never reported pending (decisions.ts nextStep), and clients wait for pendingChanges 0.
  if (s.pending !== undefined && ((status.pendingChanges ?? 0) !== s.pending || (s.lastCommit && status.pendingChanges === undefined))) {
    status.pendingChanges = s.pending;
    changed = true;
  }
  // The same commit again (a repaid or re-read status, controller.ts recordedCommit) is no change.
  const had = status.lastCommit as { sha?: string; time?: string } | undefined;
  if (s.lastCommit && (had?.sha !== s.lastCommit.sha || had?.time !== s.lastCommit.time)) {
    status.lastCommit = s.lastCommit;
    changed = true;
  }
  const gen = obj.metadata.generation;
  let repoChanged = false;
  if (s.repoOK) repoChanged = setCondition(status, { type: 'RepositoryReady', status: 'True', reason: 'Pushed', message: 'the last commit was pushed' }, gen);
  if (s.repoError) repoChanged = setCondition(status, { type: 'RepositoryReady', status: 'False', reason: s.repoError.reason, message: s.repoError.message }, gen);
  if (repoChanged) {
    refreshReady(status);
    status.conditions = inConditionOrder(status.conditions as Condition[]);
  }
  return changed || repoChanged;
}

const MIRROR_INPUTS = ['Validated', 'SourceReachable', 'Synced'];

/**
 * Ready as the mirror computes it (mirror/status.ts). Ready and the other inputs are the mirror's:
 * where it has not written Ready yet none is added, and an input it has not reported yet is left
 * for its own write to judge.
 */
function refreshReady(status: Record<string, unknown>): void {
  const conds = (Array.isArray(status.conditions) ? status.conditions : []) as Condition[];
  const ready = conds.find((c) => c.type === 'Ready');
  if (!ready || ready.reason === 'Suspended') return;
  const unreported = MIRROR_INPUTS.filter((t) => !conds.some((c) => c.type === t)).map((type): Condition => ({ type, status: 'True', reason: '', message: '' }));
  setCondition(status, { type: 'Ready', ...readyCondition([...conds, ...unreported], false) }, ready.observedGeneration);
}

/**
 * Writes coalesced per key: after note(key), `write(key)` runs once, at most once per `intervalMs`
 * however often the key is noted meanwhile (status.pendingChanges during an edit storm).
 */
export class CoalescedWrites {
  private readonly timers = new Map<string, ClockTimer>();
  private readonly lastAt = new Map<string, number>();

  constructor(
    private readonly intervalMs: number,
    private readonly write: (key: string) => Promise<void>,
    private readonly clock: Clock = realClock,
  ) {}

  note(key: string): void {
    if (this.timers.has(key)) return;
    const wait = Math.max(0, (this.lastAt.get(key) ?? 0) + this.intervalMs - this.clock.now());
    const timer = this.clock.setTimeout(() => {
      this.timers.delete(key);
      this.lastAt.set(key, this.clock.now());
      void this.write(key);
    }, wait);
    this.timers.set(key, timer);
  }

  forget(key: string): void {
    this.timers.get(key)?.cancel();
    this.timers.delete(key);
    this.lastAt.delete(key);
  }

  stop(): void {
    for (const t of this.timers.values()) t.cancel();
    this.timers.clear();
  }
}
