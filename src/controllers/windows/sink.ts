// The WindowSink the mirror writes to: every call is one compare-and-swap of the GitTarget's
// window record (a large snapshot writes its chunks first, chunks.ts), so it is durable when it resolves (the Store acknowledged it). With an audit route
// the changes are looked up first (the join) and either join their author's window at once or wait
// in the record's staging list (staging.ts).
import { DEFAULT_ATTRIBUTION_GRACE_MS, resolvePrefix, routeOf, type AttributionConfig, type JoinTier } from '../../attribution/join.js';
import type { Logger } from '../../metrics/logger.js';
import type { KubeObject } from '../../storage/types.js';
import { policyOf } from './policy.js';
import { CHUNK_SIZE, WindowChunks } from './chunks.js';
import { unchanged, type WindowRecord, type WindowRecords } from './record.js';
import { flushStaging, stageChanges, stageSnapshot } from './staging.js';
import { addChanges, applySnapshot, snapshotChanges } from './transitions.js';
import { reconcile } from './reconcile.js';
import type { PendingChange, SnapshotInput, TargetKey, WindowOutcome, WindowSink } from './types.js';

/** The longest a landing being recorded keeps its record's event from the mirror (holdObserved). */
const HOLD_MS = 10_000;

export type SnapshotListener = (target: TargetKey, id: string, outcome: WindowOutcome) => void;

export class StoreWindowSink implements WindowSink {
  /** Listeners of every landing on this replica. */
  private readonly listeners = new Set<SnapshotListener>();
  /** Listeners of one target (by uid): found without looking at the others (a mirror each, thousands waiting at once). */
  private readonly byTarget = new Map<string, Set<SnapshotListener>>();
  /** Targets whose landing this replica is recording (holdObserved): the record it skipped meanwhile. */
  private readonly held = new Map<string, { timer: NodeJS.Timeout; skipped?: WindowRecord }>();
  readonly chunks: WindowChunks;

  constructor(
    private readonly records: WindowRecords,
    /** The GitTarget as last seen (its spec.commit decides how windows close). */
    private readonly gitTarget: (t: TargetKey) => KubeObject | undefined,
    private readonly log?: Logger,
    private readonly now: () => number = Date.now,
    private readonly attribution?: AttributionConfig,
    /** Called with the join tier of every change that joined a window at add time. */
    private readonly onJoined?: (tiers: JoinTier[]) => void,
    /**
     * Called when changes or a snapshot arrive, before they are recorded: the windows controller starts the git
     * worker of the target's repository then (CommitEngine.warm), so that a worker that ended for
     * being idle (src/git/worker.ts WORKER_IDLE_EXIT_MS) loads while the window waits out its idle
     * seconds, not after it closes (~0.7 s of the first commit's time otherwise).
     */
    private readonly onAdd?: (target: TargetKey) => void,
  ) {
    this.chunks = new WindowChunks(records.store, now);
  }

  async add(target: TargetKey, changes: PendingChange[]): Promise<void> {
    if (changes.length === 0) return;
    this.onAdd?.(target);
    const gt = this.gitTarget(target);
    const policy = policyOf(gt);
    const route = routeOf(gt, this.attribution);
    if (!route || !this.attribution) {
      await this.records.mutate(target, (r) => {
        // Changes staged while the target had a route go first.
        if (r.staging) flushStaging(r, policy, this.now());
        addChanges(r, changes, policy, this.now());
      });
      return;
    }
    // Facts already there resolve now (no latency); the first miss and all after it wait, in order.
    const resolved = await resolvePrefix(this.attribution.facts, route, changes);
    const grace = this.attribution.graceMs ?? DEFAULT_ATTRIBUTION_GRACE_MS;
    const moved = await this.records.mutate(target, (r) => stageChanges(r, changes, resolved, policy, this.now(), grace));
    if (moved.length) this.onJoined?.(moved);
  }

  async snapshot(target: TargetKey, input: SnapshotInput): Promise<void> {
    // A snapshot the record already knows (a restart's mirror sends its last one again) starts no worker.
    const entered = () => this.onAdd?.(target);
    const now = this.now();
    const known = (r: WindowRecord) => r.snapshots.some((s) => s.id === input.id) || r.windows.some((w) => w.snapshotId === input.id) || r.staging?.some((e) => e.snapshot?.id === input.id);
    const changes = snapshotChanges(input);
    if (changes.length > CHUNK_SIZE) {
      // Large: the changes go to chunks first, then a small window refers to them (chunks.ts).
      const cur = await this.records.get(target);
      if (cur && known(cur)) return;
      // Compared with the open window before the chunks are written (reconcile.ts); the window's
      // leaving keys are dropped in the CAS only if it still holds what was compared.
      const rec = cur ? reconcile(cur, changes) : undefined;
      const rest = rec?.changes ?? changes;
      if (!cur?.staging?.length && rest.length > CHUNK_SIZE) {
        const chunked = await this.chunks.write(target, input.id, rest);
        const kept = await this.records.mutate(target, (r) => {
          // Known meanwhile: a window pending with chunks keeps them (these are the same); otherwise they are orphans.
          if (known(r)) return unchanged(r.windows.some((w) => w.snapshotId === input.id && w.chunks));
          entered();
          if (r.staging?.length) {
            stageSnapshot(r, input.id, changes, now);
            return false;
          }
          applySnapshot(r, { id: input.id, changes: [], chunked, reconciled: rec?.leaving }, now);
          return true;
        });
        if (!kept) await this.chunks.remove(target, input.id, chunked.chunks);
        return;
      }
    }
    await this.records.mutate(target, (r) => {
      if (known(r)) return unchanged(undefined);
      // Changes already added are committed first, so order is kept: those still waiting for
      // their author hold the snapshot behind them (inline in the record).
      entered();
      if (r.staging?.length) stageSnapshot(r, input.id, changes, now);
      else applySnapshot(r, { id: input.id, changes }, now);
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

  onSnapshotLanded(listener: SnapshotListener, uid?: string): () => void {
    if (uid === undefined) {
      this.listeners.add(listener);
      return () => this.listeners.delete(listener);
    }
    let set = this.byTarget.get(uid);
    if (!set) this.byTarget.set(uid, (set = new Set()));
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0 && this.byTarget.get(uid) === set) this.byTarget.delete(uid);
    };
  }

  /**
   * The windows controller is recording a landing of this target and will notifySnapshot after
   * its status write: until then, observeRecord keeps the target's records from its listeners (the
   * mirror would write Synced beside that status write, and one of the two compare-and-swaps fail).
   * A hold that is not released within HOLD_MS (a step after the record failed) delivers the record it kept.
   */
  holdObserved(uid: string): void {
    const prev = this.held.get(uid);
    if (prev) clearTimeout(prev.timer);
    const h: { timer: NodeJS.Timeout; skipped?: WindowRecord } = {
      timer: setTimeout(() => {
        if (this.held.get(uid) !== h) return;
        this.held.delete(uid);
        if (h.skipped) this.observeRecord(h.skipped);
      }, HOLD_MS),
    };
    h.timer.unref();
    this.held.set(uid, h);
  }

  /** Called by the windows controller when a snapshot window was committed. */
  notifySnapshot(target: TargetKey, id: string, outcome: WindowOutcome): void {
    const h = this.held.get(target.uid);
    if (h) {
      clearTimeout(h.timer);
      this.held.delete(target.uid);
    }
    for (const l of [...this.listeners, ...(this.byTarget.get(target.uid) ?? [])]) this.call(l, target, id, outcome);
  }

  /**
   * A window record as the windows informer saw it (written by this replica or another): the
   * snapshot outcomes it holds reach the listeners of its target, so a mirror learns of a landing
   * without reading the record itself (controllers/mirror/target.ts).
   */
  observeRecord(rec: WindowRecord): void {
    const set = rec.target?.uid === undefined ? undefined : this.byTarget.get(rec.target.uid);
    if (!set || !Array.isArray(rec.snapshots)) return;
    const h = this.held.get(rec.target.uid);
    if (h) {
      h.skipped = rec;
      return;
    }
    for (const { id, ...outcome } of rec.snapshots) for (const l of [...set]) this.call(l, rec.target, id, outcome);
  }

  private call(l: SnapshotListener, target: TargetKey, id: string, outcome: WindowOutcome): void {
    try {
      l(target, id, outcome);
    } catch (e) {
      this.log?.error('snapshot listener threw', { error: (e as Error).message });
    }
  }
}
