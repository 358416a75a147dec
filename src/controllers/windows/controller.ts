// The windows controller: for every GitTarget this replica holds the lease of, close its commit
// windows when they are due (idle, max age, a CommitRequest's close time) and commit them, oldest
// first, through the git engine worker. Every step is a compare-and-swap of the target's window
// record, so a crash at any point leaves a state the next holder continues from:
// - before the commit: the window is still there (closing), and is committed by the next holder;
// - after the push, before the record was updated: the next attempt finds its changes already in
//   the branch (the engine answers AlreadyPresent), and because the window records that an attempt
//   had started, that is reported as the commit it is — nothing is lost, nothing committed twice.
// This file is the executor: it reads the record, asks decisions.ts (pure functions of the record,
// the policy and the clock's now) what to do next, and performs it; commit.ts performs a commit.
import type { CommitEngine, GitCredentials } from '../../git/index.js';
import type { Logger } from '../../metrics/logger.js';
import type { KubeObject, Store } from '../../storage/types.js';
import { Informer, Permits, clusterOf, keyOf, movedKeys, realClock, WorkQueue, type Clock, type LeaseKeeper, targetLeaseName, type QueueResult, type RunSlot } from '../runtime/index.js';
import type { ControllerMetrics } from '../metrics.js';
import { routeOf, type AttributionConfig, type JoinTier } from '../../attribution/join.js';
import { updateStatus } from '../status.js';
import { CoalescedWrites, applyTargetStatus, type TargetStatus } from './target-status.js';
import { commitBackoff } from './backoff.js';
import { SystemClient } from '../client.js';
import type { EventRecorder } from '../events/index.js';
import { AuditConditionWriter, drainTarget } from './attribution.js';
import { policyOf } from './policy.js';
import { WINDOWS_RESOURCE, WindowRecords, hasWork, pendingCount, type WindowRecord } from './record.js';
import { StoreWindowSink } from './sink.js';
import { flushStaging } from './staging.js';
import { WindowCommits } from './commit.js';
import { LEASE_RETRY_MS, PENDING_STATUS_INTERVAL_MS, UNSYNCED_RETRY_MS, closeFirst, expireWaiting, isSuspended, nextStep, repositoryOf, stagingWakeAt, sweepDue, waitedInVain, withRecheck } from './decisions.js';
import type { TargetKey } from './types.js';
import { PendingResync } from './resync.js';

export const GITTARGETS = { group: 'configbutler.ai', resource: 'gittargets' };

/**
 * GitTargets reconciled at once, not counting their commits (below). A reconcile mostly waits
 * (store round trips), so with a handful of slots every tenant queued behind the few in progress.
 * One key still runs once at a time (runtime/queue.ts), so a GitTarget's windows stay in order,
 * and commits to one repository are serialized by the git worker that owns it.
 */
export const WINDOWS_CONCURRENCY = 64;

/**
 * Commits in flight at once. A commit leaves the queue's slot once its window is closed
 * (runtime/queue.ts detach): when commits held the slots, 50 edits a second over 1,000 tenants kept
 * ~70 commits in flight (a second or more each in the git engine) and a window whose idle time was
 * up waited p50 4.9 s for a slot (bench/scale, "idle timer → window closed"). With 4 slots for
 * everything, eight GitTargets on a remote that never answers held a ninth tenant's commit for 14 s
 * (test/controllers/windows-parallel.test.ts).
 */
export const WINDOWS_COMMITS_IN_FLIGHT = 256;
export { LEASE_RETRY_MS };

export interface WindowsControllerDeps {
  store: Store;
  /** Status writes go through the registry as the system identity; default: a client over `store`. */
  client?: SystemClient;
  engine: CommitEngine;
  keeper: LeaseKeeper;
  committer: { name: string; email: string };
  gitTargets: Informer;
  log: Logger;
  metrics?: ControllerMetrics;
  /** Git credentials of a GitTarget (spec.repository.secretRef); none by default. */
  credentials?(gitTarget: KubeObject): Promise<GitCredentials | undefined>;
  /** Per-edit attribution from audit facts; without it every window is unattributed. */
  attribution?: AttributionConfig;
  /** Kubernetes Events (Committed, PushFailed); none when absent. */
  events?: EventRecorder;
  /** The time windows open, close and requeue by (default: the wall clock). */
  clock?: Clock;
  /** How often records with pending changes are checked for a lost wake-up (resync.ts; default RESYNC_INTERVAL_MS). */
  resyncMs?: number;
}

export function targetKeyOf(gt: KubeObject): TargetKey {
  return { cluster: clusterOf(gt), namespace: gt.metadata.namespace ?? '', name: gt.metadata.name ?? '', uid: gt.metadata.uid ?? '' };
}

export class WindowsController {
  readonly records: WindowRecords;
  readonly sink: StoreWindowSink;
  private readonly windows: Informer;
  private readonly queue: WorkQueue;
  private readonly pendingWrittenAt = new Map<string, number>();
  private readonly clock: Clock;
  private readonly commits: WindowCommits;
  private readonly pendingWrites: CoalescedWrites;
  private readonly sweptAt = new Map<string, number>();
  private readonly audit: AuditConditionWriter;
  private readonly unsubscribeFacts?: () => void;
  /** Keys whose window record (as cached) has changes waiting for their author: the ones a fact may move. */
  private readonly staged = new Set<string>();
  readonly resync: PendingResync;
  private readonly commitPermits = new Permits(WINDOWS_COMMITS_IN_FLIGHT);

  constructor(private readonly deps: WindowsControllerDeps) {
    this.clock = deps.clock ?? realClock;
    this.pendingWrites = new CoalescedWrites(PENDING_STATUS_INTERVAL_MS, (key) => this.writePendingWhileFailing(key), this.clock);
    this.records = new WindowRecords(deps.store);
    this.audit = new AuditConditionWriter(this.records, deps.attribution, deps.log, () => this.clock.now());
    const gitTarget = (t: TargetKey) => {
      const gt = deps.gitTargets.get(`${t.cluster}/${t.namespace}/${t.name}`);
      return gt?.metadata.uid === t.uid ? gt : undefined;
    };
    this.sink = new StoreWindowSink(
      this.records,
      gitTarget,
      deps.log,
      () => this.clock.now(),
      deps.attribution,
      (tiers) => this.joined(tiers),
      (t) => {
        const gt = gitTarget(t);
        deps.engine.warm?.(gt ? repositoryOf(gt) : undefined);
        // Changes are being recorded here: a record with work exists even if its event never comes.
        this.resync.noteActivity();
      },
    );
    this.commits = new WindowCommits({ ...deps, records: this.records, sink: this.sink, clock: this.clock, writeTargetStatus: (gt, s) => this.writeTargetStatus(gt, s) });
    this.windows = new Informer(deps.store, WINDOWS_RESOURCE, { log: deps.log });
    // A failed commit's backoff holds against our own status and record writes (backoff.ts).
    this.queue = new WorkQueue((k, slot) => this.reconcile(k, slot), { name: 'windows', concurrency: WINDOWS_CONCURRENCY, log: deps.log, holdBackoff: true, backoff: commitBackoff, clock: this.clock });
    deps.gitTargets.on({
      upsert: (o, old) => {
        const key = keyOf(o, clusterOf(o));
        // A user's spec change may fix what failed: it ends the backoff and the stale attempt.
        // Status writes (ours, the mirror's) do not change the generation.
        if (old && (old.metadata.generation !== o.metadata.generation || old.metadata.uid !== o.metadata.uid)) {
          this.commits.cancel(key);
          this.queue.reset(key);
        } else this.queue.add(key);
      },
      delete: (o) => {
        const key = keyOf(o, clusterOf(o));
        this.commits.cancel(key);
        this.queue.reset(key);
      },
    });
    this.resync = new PendingResync({
      store: deps.store,
      log: deps.log,
      scheduled: (key) => this.queue.has(key),
      ours: (key, rec) => {
        const gt = deps.gitTargets.get(key);
        return gt !== undefined && gt.metadata.uid === rec.target.uid && !isSuspended(gt) && deps.keeper.owns(targetLeaseName(rec.target));
      },
      reconcile: (key) => this.queue.add(key),
      intervalMs: deps.resyncMs,
    });
    this.windows.on({
      upsert: (o) => {
        const key = keyOf(o, clusterOf(o));
        this.resync.noteActivity();
        if ((o as WindowRecord).staging?.length) this.staged.add(key);
        else this.staged.delete(key);
        // A snapshot outcome recorded (here or by another replica) reaches the mirror waiting for it.
        this.sink.observeRecord(o as WindowRecord);
        this.queue.add(key);
        // While a GitTarget's commits fail, reconciles wait out the backoff: pendingChanges follows the record from here.
        if (this.commits.failing.has(key)) this.pendingWrites.note(key);
      },
      delete: (o) => void this.staged.delete(keyOf(o, clusterOf(o))),
    });
    // Facts arrived on a route (posted to this replica): the targets with changes waiting for their
    // author on it look again now. Only those: every GitTarget mirroring the sandbox shares one route,
    // and waking all of them on every sandbox write (1,000 reconciles per edit at 1,000 tenants)
    // swamped the queue. A record whose staged change reaches the cache after the fact is reconciled
    // on its own event, and facts posted to another replica are polled (decisions.ts stagingWakeAt).
    this.unsubscribeFacts = deps.attribution?.facts.onFacts((route) => {
      for (const key of this.staged) {
        const gt = deps.gitTargets.get(key);
        if (gt && this.routeOf(gt) === route) this.queue.add(key);
      }
    });
    deps.keeper.onRebalance((ownedBefore) => {
      for (const key of movedKeys(deps.gitTargets.list(), ownedBefore, (n) => deps.keeper.owns(n))) this.queue.add(key);
    });
    deps.keeper.onLost((name) => {
      if (name.startsWith('gittarget/')) {
        const [, cluster, ns, n] = name.split('/');
        this.queue.addAfter(`${cluster}/${ns}/${n}`, LEASE_RETRY_MS);
      }
    });
  }

  async start(): Promise<void> {
    await this.windows.start();
  }

  async stop(): Promise<void> {
    this.unsubscribeFacts?.();
    this.resync.stop();
    this.pendingWrites.stop();
    this.windows.stop();
    await this.queue.stop();
  }

  private async reconcile(key: string, slot: RunSlot): Promise<QueueResult | void> {
    this.deps.metrics?.reconciles.inc({ controller: 'windows' });
    if (!this.deps.gitTargets.hasSynced || !this.windows.hasSynced) return { requeueAfterMs: UNSYNCED_RETRY_MS };
    const gt = this.deps.gitTargets.get(key);
    if (!gt) return this.targetGone(key);
    const target = targetKeyOf(gt);
    if (isSuspended(gt)) return;
    const route = this.routeOf(gt);
    const result = await this.work(key, gt, target, route, slot);
    const recheckAt = await this.audit.write(key, gt, target, route, (fn) => this.patchConditions(gt, fn));
    return withRecheck(result, recheckAt, this.clock.now());
  }

  private routeOf(gt: KubeObject): string | undefined {
    return routeOf(gt, this.deps.attribution);
  }

  private joined(tiers: JoinTier[]): void {
    for (const tier of tiers) this.deps.metrics?.joins.inc({ tier });
  }

  /** Performs nextStep (decisions.ts) for one GitTarget: lease, staging, expired requests, close, commit, requeue. */
  private async work(key: string, gt: KubeObject, target: TargetKey, route: string | undefined, slot: RunSlot): Promise<QueueResult | void> {
    const leaseName = targetLeaseName(target);
    // The lease is taken only while there is work: an idle GitTarget costs no lease writes.
    let rec = (this.windows.get(key) as WindowRecord | undefined) ?? (await this.records.get(target));
    if (rec?.target.uid !== target.uid) rec = undefined;
    await this.payOwedStatus(key, gt, target, leaseName);
    if (!rec || !hasWork(rec)) {
      // A landed commit the status does not name: its status write failed and the lease moved
      // before a retry (payOwedStatus pays only under the lease), or the process stopped between
      // the record and the status. The record says what landed; the lease holder writes it (at
      // 10,000 tenants 3 GitTargets stayed RepositoryNotChecked this way, bench/scale).
      const behind = rec?.lastCommit !== undefined && rec.lastCommit.sha !== (gt.status as { lastCommit?: { sha?: string } } | undefined)?.lastCommit?.sha;
      if (behind && !this.deps.keeper.holds(leaseName) && !(await this.deps.keeper.acquire(leaseName, 'windows'))) {
        return this.deps.keeper.owns(leaseName) ? { requeueAfterMs: LEASE_RETRY_MS } : undefined;
      }
      if (this.deps.keeper.holds(leaseName)) {
        await this.sweepChunks(key, target, rec);
        await this.writeTargetStatus(gt, { pending: 0, ...(behind ? await this.recordedCommit(target) : {}) });
        await this.deps.keeper.release(leaseName, 'windows');
      }
      return;
    }
    const lease = await this.deps.keeper.acquire(leaseName, 'windows');
    if (!lease) {
      // No longer ours (runtime/leases.ts): let go, so the new owner can take over the window.
      await this.deps.keeper.release(leaseName, 'windows');
      return this.deps.keeper.owns(leaseName) ? { requeueAfterMs: LEASE_RETRY_MS } : undefined;
    }
    const policy = policyOf(gt);
    const now = this.clock.now();
    // Under the lease, read the record itself (the cache may lag what another replica did).
    rec = await this.records.get(target);
    if (!rec) return;
    let stagingWake: number | undefined;
    if (rec.staging?.length) {
      if (route && this.deps.attribution) this.joined(await drainTarget(this.records, this.deps.attribution, target, route, policy, now));
      else await this.records.mutate(target, (r) => flushStaging(r, policy, now));
      rec = await this.records.get(target);
      if (!rec) return;
      stagingWake = stagingWakeAt(rec, now);
    }
    const held = rec;
    if (held.waiting.some((w) => waitedInVain(held, w, now))) rec = await this.records.mutate(target, (r) => expireWaiting(r, now));
    const step = nextStep(rec, policy, now, stagingWake, this.pendingWrittenAt.get(key), pendingCount(rec));
    switch (step.kind) {
      case 'idle':
        await this.writeTargetStatus(gt, { pending: 0 });
        return step.requeueAfterMs !== undefined ? { requeueAfterMs: step.requeueAfterMs } : undefined;
      case 'wait':
        if (step.writePending !== undefined) {
          this.pendingWrittenAt.set(key, now);
          await this.writeTargetStatus(gt, { pending: step.writePending });
        }
        return { requeueAfterMs: step.requeueAfterMs };
      case 'close': {
        const closed = await this.records.mutate(target, (r) => closeFirst(r, step.seq, step.reason, now));
        await this.commitDetached(slot, () => this.commits.commitFirst(gt, target, lease.check, closed));
        break;
      }
      case 'commit':
        await this.commitDetached(slot, () => this.commits.commitFirst(gt, target, lease.check));
    }
    // More windows may be due: look again right away.
    this.queue.add(key);
  }

  /** A commit, outside the queue's slots (the key stays in progress) and within WINDOWS_COMMITS_IN_FLIGHT. */
  private async commitDetached(slot: RunSlot, commit: () => Promise<void>): Promise<void> {
    slot.detach();
    const release = await this.commitPermits.take();
    try {
      await commit();
    } finally {
      release();
    }
  }

  /**
   * The status of a commit that landed but could not be written (commit.ts owedStatus), written
   * now with the pending count as the record has it; a failure throws, and the queue's backoff retries it. Only
   * while this replica holds the lease: after a handover, the new holder's commits say what is true.
   */
  private async payOwedStatus(key: string, gt: KubeObject, target: TargetKey, leaseName: string): Promise<void> {
    const owed = this.commits.owedStatus.get(key);
    if (!owed) return;
    if (this.deps.keeper.holds(leaseName)) {
      // The record itself: the informer's copy may still show the window that landed.
      const rec = await this.records.get(target);
      await this.writeTargetStatus(gt, { ...owed, pending: rec && rec.target.uid === target.uid ? pendingCount(rec) : 0 });
    }
    this.commits.owedStatus.delete(key);
  }

  /**
   * The record's last landed commit, read from the store under the lease (the informer's copies
   * of the record and the GitTarget may lag this replica's own last commit and status write).
   */
  private async recordedCommit(target: TargetKey): Promise<TargetStatus> {
    const rec = await this.records.get(target);
    return rec?.target.uid === target.uid && rec.lastCommit ? { lastCommit: rec.lastCommit, repoOK: true } : {};
  }

  /**
   * A deleted GitTarget: its pending changes are dropped (its folder stays); its CommitRequests
   * fail in the CommitRequest controller, which finds the GitTarget gone.
   */
  private async targetGone(key: string): Promise<void> {
    this.audit.forget(key);
    this.pendingWrittenAt.delete(key);
    this.commits.failing.delete(key);
    this.commits.owedStatus.delete(key);
    this.pendingWrites.forget(key);
    const rec = this.windows.get(key) as WindowRecord | undefined;
    if (!rec) return;
    const target = rec.target;
    // Confirm with a consistent read: the cache may lag a re-created GitTarget.
    const live = await this.deps.store.get(GITTARGETS, { cluster: target.cluster, namespace: target.namespace, name: target.name });
    if (live?.metadata.uid === target.uid) return;
    const lease = await this.deps.keeper.acquire(targetLeaseName(target), 'windows');
    if (!lease) return;
    this.deps.log.info('GitTarget deleted: dropping its pending changes', { gitTarget: `${target.namespace}/${target.name}`, pending: pendingCount(rec) });
    // Chunks first: a failure here leaves the record, so the next attempt finds the target gone again.
    await this.sink.chunks.sweep(target, undefined);
    await this.records.remove(target);
    this.sweptAt.delete(key);
    await this.deps.keeper.release(targetLeaseName(target), 'windows');
  }

  /**
   * Chunks no window refers to (a crash between writing them and the record's CAS, or between an
   * outcome and their deletion): looked for when the target's work is done, at most every ORPHAN_AGE_MS.
   */
  private async sweepChunks(key: string, target: TargetKey, rec: WindowRecord | undefined): Promise<void> {
    const now = this.clock.now();
    if (!sweepDue(this.sweptAt.get(key), now)) return;
    this.sweptAt.set(key, now);
    const n = await this.sink.chunks.sweep(target, rec?.windows ?? [], now).catch(() => 0);
    if (n) this.deps.log.info('deleted snapshot chunks no window refers to', { gitTarget: `${target.namespace}/${target.name}`, chunks: n });
  }

  /** status.pendingChanges of a failing GitTarget, by the replica holding its lease. */
  private async writePendingWhileFailing(key: string): Promise<void> {
    const gt = this.deps.gitTargets.get(key);
    const rec = this.windows.get(key) as WindowRecord | undefined;
    if (!gt || !rec || rec.target.uid !== gt.metadata.uid || !this.commits.failing.has(key)) return;
    if (!this.deps.keeper.holds(targetLeaseName(rec.target))) return;
    await this.writeTargetStatus(gt, { pending: pendingCount(rec) }).catch((e) => this.deps.log.debug('pendingChanges not written', { gitTarget: key, error: (e as Error).message }));
  }

  private statusClient(): SystemClient {
    return this.deps.client ?? (this.deps.client = SystemClient.forStore(this.deps.store));
  }

  private async patchConditions(gt: KubeObject, fn: (status: Record<string, unknown>, obj: KubeObject) => boolean): Promise<void> {
    const key = { cluster: clusterOf(gt), namespace: gt.metadata.namespace ?? '', name: gt.metadata.name ?? '' };
    await updateStatus(this.statusClient(), GITTARGETS, key, gt.metadata.uid, fn);
  }

  private async writeTargetStatus(gt: KubeObject, s: TargetStatus): Promise<void> {
    const key = { cluster: clusterOf(gt), namespace: gt.metadata.namespace ?? '', name: gt.metadata.name ?? '' };
    // Compared with the informer's copy first, as the mirror's status writes are
    // (mirror/controller.ts writeStatusNow): a status that would not change (pendingChanges 0 on
    // every idle reconcile) costs no consistent read. A stale copy is safe: a newer version's
    // event reconciles the key again (the gitTargets handler above), and that compares with it.
    const cached = this.deps.gitTargets.get(keyOf(gt, key.cluster));
    if (cached && cached.metadata.uid === gt.metadata.uid && !applyTargetStatus({ ...((cached.status as Record<string, unknown> | undefined) ?? {}) }, cached, s)) return;
    await updateStatus(this.statusClient(), GITTARGETS, key, gt.metadata.uid, (status, obj) => applyTargetStatus(status, obj, s));
  }
}
