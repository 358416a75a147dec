// The windows controller: for every GitTarget this replica holds the lease of, close its commit
// windows when they are due (idle, max age, a CommitRequest's close time) and commit them, oldest
// first, through the git engine worker. Every step is a compare-and-swap of the target's window
// record, so a crash at any point leaves a state the next holder continues from:
// - before the commit: the window is still there (closing), and is committed by the next holder;
// - after the push, before the record was updated: the next attempt finds its changes already in
//   the branch (the engine answers AlreadyPresent), and because the window records that an attempt
//   had started, that is reported as the commit it is — nothing is lost, nothing committed twice.
import type { Change, CommitEngine, GitCredentials, Person } from '../../git/index.js';
import { GitEngineError } from '../../git/errors.js';
import type { Logger } from '../../metrics/logger.js';
import type { KubeObject, Store } from '../../storage/types.js';
import { Informer, clusterOf, keyOf, movedKeys, WorkQueue, type LeaseKeeper, targetLeaseName, type QueueResult } from '../runtime/index.js';
import type { ControllerMetrics } from '../metrics.js';
import { routeOf, type AttributionConfig, type JoinTier } from '../../attribution/join.js';
import { updateStatus } from '../status.js';
import { CoalescedWrites, applyTargetStatus, type TargetStatus } from './target-status.js';
import { commitBackoff } from './backoff.js';
import { SystemClient } from '../client.js';
import { committed, pushFailed, type EventRecorder } from '../events/index.js';
import { AuditConditionWriter, STAGING_POLL_MS, drainTarget } from './attribution.js';
import { generatedMessage } from './message.js';
import { closeDue, policyOf } from './policy.js';
import { WINDOWS_RESOURCE, WindowRecords, hasWork, noteFailedAttempt, pendingCount, recordSnapshot, unchanged, type AuthorKind, type RequestOutcome, type Window, type WindowRecord } from './record.js';
import { StoreWindowSink } from './sink.js';
import { ORPHAN_AGE_MS } from './chunks.js';
import { flushStaging, nextStagingDeadline } from './staging.js';
import type { TargetKey, WindowOutcome } from './types.js';

export const GITTARGETS = { group: 'configbutler.ai', resource: 'gittargets' };
const PENDING_STATUS_INTERVAL_MS = 1_000;
/** How often a replica that does not hold a target's lease tries to take it. */
export const LEASE_RETRY_MS = 2_000;

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
  /** GitTargets whose last commit attempt failed: their pendingChanges follow the record (notePending). */
  private readonly failing = new Set<string>();
  private readonly pendingWrites = new CoalescedWrites(PENDING_STATUS_INTERVAL_MS, (key) => this.writePendingWhileFailing(key));
  /** The remote work of the commit in progress per GitTarget, cancelled when the GitTarget is deleted or its spec changes. */
  private readonly inflight = new Map<string, AbortController>();
  private readonly sweptAt = new Map<string, number>();
  private readonly audit: AuditConditionWriter;
  private readonly unsubscribeFacts?: () => void;

  constructor(private readonly deps: WindowsControllerDeps) {
    this.records = new WindowRecords(deps.store);
    this.audit = new AuditConditionWriter(this.records, deps.attribution, deps.log);
    this.sink = new StoreWindowSink(
      this.records,
      (t) => {
        const gt = deps.gitTargets.get(`${t.cluster}/${t.namespace}/${t.name}`);
        return gt?.metadata.uid === t.uid ? gt : undefined;
      },
      deps.log,
      Date.now,
      deps.attribution,
      (tiers) => this.joined(tiers),
    );
    this.windows = new Informer(deps.store, WINDOWS_RESOURCE, { log: deps.log });
    // A failed commit's backoff holds against our own status and record writes (backoff.ts).
    this.queue = new WorkQueue((k) => this.reconcile(k), { name: 'windows', concurrency: 4, log: deps.log, holdBackoff: true, backoff: commitBackoff });
    deps.gitTargets.on({
      upsert: (o, old) => {
        const key = keyOf(o, clusterOf(o));
        // A user's spec change may fix what failed: it ends the backoff and the stale attempt.
        // Status writes (ours, the mirror's) do not change the generation.
        if (old && (old.metadata.generation !== o.metadata.generation || old.metadata.uid !== o.metadata.uid)) {
          this.inflight.get(key)?.abort();
          this.queue.reset(key);
        } else this.queue.add(key);
      },
      delete: (o) => {
        const key = keyOf(o, clusterOf(o));
        this.inflight.get(key)?.abort();
        this.queue.reset(key);
      },
    });
    this.windows.on({
      upsert: (o) => {
        const key = keyOf(o, clusterOf(o));
        this.queue.add(key);
        // While a GitTarget's commits fail, reconciles wait out the backoff: pendingChanges follows the record from here.
        if (this.failing.has(key)) this.pendingWrites.note(key);
      },
      delete: () => undefined,
    });
    // Facts arrived on a route (posted to this replica): its targets look again now.
    this.unsubscribeFacts = deps.attribution?.facts.onFacts((route) => {
      for (const gt of deps.gitTargets.list()) if (this.routeOf(gt) === route) this.queue.add(keyOf(gt, clusterOf(gt)));
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
    this.pendingWrites.stop();
    this.windows.stop();
    await this.queue.stop();
  }

  private async reconcile(key: string): Promise<QueueResult | void> {
    // Absent from a cache that has not listed yet is not "deleted".
    if (!this.deps.gitTargets.hasSynced || !this.windows.hasSynced) return { requeueAfterMs: 100 };
    const gt = this.deps.gitTargets.get(key);
    if (!gt) return this.targetGone(key);
    const target = targetKeyOf(gt);
    if ((gt.spec as { suspend?: boolean } | undefined)?.suspend) return;
    const route = this.routeOf(gt);
    const result = await this.work(key, gt, target, route);
    const recheckAt = await this.audit.write(key, gt, target, route, (fn) => this.patchConditions(gt, fn));
    if (recheckAt === undefined) return result;
    const after = Math.max(0, recheckAt - Date.now());
    return result?.requeueAfterMs !== undefined && result.requeueAfterMs <= after ? result : { requeueAfterMs: after };
  }

  private routeOf(gt: KubeObject): string | undefined {
    return routeOf(gt, this.deps.attribution);
  }

  private joined(tiers: JoinTier[]): void {
    for (const tier of tiers) this.deps.metrics?.joins.inc({ tier });
  }

  private async work(key: string, gt: KubeObject, target: TargetKey, route: string | undefined): Promise<QueueResult | void> {
    const leaseName = targetLeaseName(target);
    // The lease is taken only while there is work: an idle GitTarget costs no lease writes.
    let rec = (this.windows.get(key) as WindowRecord | undefined) ?? (await this.records.get(target));
    if (rec?.target.uid !== target.uid) rec = undefined;
    if (!rec || !hasWork(rec)) {
      if (this.deps.keeper.holds(leaseName)) {
        await this.sweepChunks(key, target, rec);
        await this.writeTargetStatus(gt, { pending: 0 });
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
    const now = Date.now();
    // Under the lease, read the record itself (the cache may lag what another replica did).
    rec = await this.records.get(target);
    if (!rec) return;
    let stagingWake: number | undefined;
    if (rec.staging?.length) {
      if (route && this.deps.attribution) this.joined(await drainTarget(this.records, this.deps.attribution, target, route, policy, now));
      else await this.records.mutate(target, (r) => flushStaging(r, policy, now));
      rec = await this.records.get(target);
      if (!rec) return;
      // Still waiting: look again at the head's deadline, and meanwhile for facts another replica stored.
      const deadline = nextStagingDeadline(rec);
      if (deadline !== undefined) stagingWake = Math.min(deadline, now + STAGING_POLL_MS);
    }

    // CommitRequests that waited in vain for a window end NothingToCommit.
    // (Not while a change staged before its deadline still waits for its author: it may be the request's.)
    const expires = (r: WindowRecord, w: WindowRecord['waiting'][number]) => w.deadline <= now && !(r.staging ?? []).some((e) => e.change && e.stagedAt <= w.deadline);
    if (rec.waiting.some((w) => expires(rec!, w))) {
      rec = await this.records.mutate(target, (r) => {
        const expired = r.waiting.filter((w) => expires(r, w));
        r.waiting = r.waiting.filter((w) => !expires(r, w));
        for (const w of expired) {
          r.outcomes.push({ name: w.name, uid: w.uid, outcome: 'NothingToCommit', message: 'no pending change was collected for this request within its close delay; nothing to commit', time: iso(now) });
        }
        return r;
      });
    }
    const first = rec.windows[0];
    // Requests held past their deadline by staged changes are looked at with the staging list.
    const nextWaiting = Math.min(stagingWake ?? Infinity, ...rec.waiting.map((w) => (w.deadline > now ? w.deadline : (stagingWake ?? now + STAGING_POLL_MS))));
    if (!first) {
      await this.writeTargetStatus(gt, { pending: 0 });
      return Number.isFinite(nextWaiting) ? { requeueAfterMs: nextWaiting - now } : undefined;
    }
    if (!first.closing) {
      const due = closeDue(first, policy);
      if (due.at > now) {
        // status.pendingChanges is a gauge for people: at most one write per second per target,
        // not one per change the mirror adds.
        const last = this.pendingWrittenAt.get(key) ?? 0;
        let wake = Math.min(due.at, nextWaiting);
        if (now - last >= PENDING_STATUS_INTERVAL_MS) {
          this.pendingWrittenAt.set(key, now);
          await this.writeTargetStatus(gt, { pending: pendingCount(rec) });
        } else wake = Math.min(wake, last + PENDING_STATUS_INTERVAL_MS);
        return { requeueAfterMs: Math.max(0, wake - now) };
      }
      // Closing counts the first attempt in the same write: one durable write less between the
      // idle timer and the push (a single edit's latency).
      const closed = await this.records.mutate(target, (r) => {
        const w = r.windows[0];
        if (!w || w.seq !== first.seq || w.closing) return unchanged(undefined);
        w.closing = { reason: due.reason, at: now, attempts: 1 };
        return structuredClone(w);
      });
      if (closed) {
        await this.commitFirst(gt, target, lease.check, closed);
        this.queue.add(key);
        return;
      }
    }
    await this.commitFirst(gt, target, lease.check);
    // More windows may be due: look again right away.
    this.queue.add(key);
  }

  /** Commits the first window; `counted` is that window when closing it already counted this attempt. */
  private async commitFirst(gt: KubeObject, target: TargetKey, fence: () => Promise<boolean>, counted?: Window): Promise<void> {
    const started = performance.now();
    // Count the attempt durably before touching Git, so a retry after a crash knows a push may have happened.
    const small =
      counted ??
      (await this.records.mutate(target, (r) => {
        const x = r.windows[0];
        if (!x?.closing) return unchanged(undefined);
        x.closing.attempts++;
        return structuredClone(x);
      }));
    if (!small) return;
    if (!(await fence())) throw new Error(`lost the lease of GitTarget ${target.namespace}/${target.name}; stopped before committing`);
    // A chunked snapshot's changes, read a chunk per event-loop turn (all of them, or no commit).
    const w = small.chunks ? { ...small, changes: await this.sink.chunks.read(target, small) } : small;
    const spec = gt.spec as { repository: { url: string }; branch: string; path: string };
    const committer: Person = { name: this.deps.committer.name, email: this.deps.committer.email };
    // A CommitRequest's author, else the audited (or unresolved) author of the window, else the committer.
    const author = w.request?.author ?? w.author ?? committer;
    const authorKind: AuthorKind = w.request?.authorKind ?? w.authorKind ?? 'committer';
    const message = w.request?.message ?? generatedMessage(w, `${target.namespace}/${target.name}`);
    let result;
    const key = `${target.cluster}/${target.namespace}/${target.name}`;
    const cancel = new AbortController();
    this.inflight.set(key, cancel);
    try {
      result = await this.deps.engine.commit({
        // The tenant partitions local: repositories (src/git/repository-url.ts localGitdir).
        repository: { url: spec.repository.url, credentials: await this.deps.credentials?.(gt), tenant: { cluster: clusterOf(gt), namespace: gt.metadata.namespace ?? '' } },
        branch: spec.branch,
        folder: spec.path,
        changes: w.changes.map((c) => stripSource(c.change) as Change),
        author,
        committer,
        message,
      }, { signal: cancel.signal });
    } catch (e) {
      // Cancelled: the GitTarget was deleted or changed (the queue runs it again at once) or the
      // process stops. Not a failure: no status, no backoff, no log line.
      if (e instanceof GitEngineError && e.reason === 'Cancelled') return;
      await this.commitFailed(gt, target, w, e);
      throw e;
    } finally {
      if (this.inflight.get(key) === cancel) this.inflight.delete(key);
    }
    this.failing.delete(key);
    const now = Date.now();
    // AlreadyPresent on a retry means the earlier attempt pushed before we could record it.
    const landed = result.outcome === 'Committed' || (w.closing!.attempts > 1 && result.sha !== undefined);
    const sha = result.sha;
    const time = iso(now);
    await this.records.mutate(target, (r) => {
      const i = r.windows.findIndex((x) => x.seq === w.seq);
      if (i < 0) return unchanged(undefined);
      // The request as the record holds it now (it may have timed out and left meanwhile).
      const req = r.windows[i].request;
      r.windows.splice(i, 1);
      if (landed && sha) r.lastCommit = { sha, time };
      if (req) {
        const o: RequestOutcome = landed
          ? { name: req.name, uid: req.uid, outcome: 'Committed', message: `committed ${sha} to ${spec.branch}`, sha, branch: spec.branch, author, authorKind, time }
          : { name: req.name, uid: req.uid, outcome: 'AlreadyPresent', message: 'the changes already match the branch, so no commit was made', sha, branch: spec.branch, time };
        r.outcomes.push(o);
      }
      if (w.snapshotId) recordSnapshot(r, w.snapshotId, { outcome: landed ? 'Committed' : 'AlreadyPresent', sha, time });
      return undefined;
    });
    // The outcome is recorded: nothing refers to the chunks any more (a crash before this leaves them to sweep()).
    if (w.chunks) await this.sink.chunks.remove(target, w.snapshotId!, w.chunks).catch((e) => this.deps.log.warn('could not delete the chunks of a committed snapshot', { gitTarget: `${target.namespace}/${target.name}`, error: (e as Error).message }));
    const m = this.deps.metrics;
    if (landed && sha && this.deps.events) committed(this.deps.events, gt, sha, spec.branch, message);
    if (landed) m?.commits.inc({ author_kind: authorKind });
    m?.windowChanges.observe(w.changes.length);
    m?.windowAge.observe(Math.max(0, (w.closing!.at - w.openedAt) / 1000));
    this.deps.log.info(landed ? 'window committed' : 'window already present', {
      gitTarget: `${target.namespace}/${target.name}`,
      sha,
      changes: w.changes.length,
      reason: w.closing!.reason,
      commitRequest: w.request?.name,
      authorKind,
      // Where the time went: the whole commit as the controller saw it, and the engine's phases.
      ms: Math.round(performance.now() - started),
      ...(result.outcome === 'Committed' && result.timings ? { engineMs: result.timings } : {}),
    });
    const rec = await this.records.get(target);
    await this.writeTargetStatus(gt, { pending: rec ? pendingCount(rec) : 0, lastCommit: landed && sha ? { sha, time } : undefined, repoOK: true });
    if (w.snapshotId) {
      const o: WindowOutcome = { outcome: landed ? 'Committed' : 'AlreadyPresent', sha, time };
      this.sink.notifySnapshot(target, w.snapshotId, o);
    }
  }

  private async commitFailed(gt: KubeObject, target: TargetKey, w: Window, e: unknown): Promise<void> {
    const err = e instanceof GitEngineError ? e : undefined;
    const reason = err?.reason ?? 'CommitFailed';
    const msg = (e as Error)?.message ?? String(e);
    // Durably: the windows queued behind this one coalesce from now on (record.ts, coalesceBacklog).
    await this.records.mutate(target, (r) => noteFailedAttempt(r, w.seq, Date.now())).catch(() => undefined);
    // The queue logs the failure once per change of error (runtime/queue.ts); the status says it
    // from the first failed attempt on, with the pending count as it is now.
    this.failing.add(`${target.cluster}/${target.namespace}/${target.name}`);
    const rec = await this.records.get(target).catch(() => undefined);
    await this.writeTargetStatus(gt, { repoError: { reason, message: msg }, ...(rec ? { pending: pendingCount(rec) } : {}) }).catch(() => undefined);
    // A lost lease is this replica's business, not the GitTarget's: the next holder commits.
    if (this.deps.events && reason !== 'LeaseLost' && reason !== 'Cancelled') pushFailed(this.deps.events, gt, reason, msg);
    // A failure a retry cannot fix ends the attached CommitRequest now (the changes stay pending
    // and are retried, authored by the committer); transient ones keep it attached.
    const permanent = err !== undefined && !err.retryable && err.reason !== 'LeaseLost' && err.reason !== 'Unreachable' && err.reason !== 'Conflict';
    if (permanent && w.request) {
      const req = w.request;
      await this.records.mutate(target, (r) => {
        const x = r.windows.find((y) => y.seq === w.seq);
        if (!x?.request || x.request.uid !== req.uid) return unchanged(undefined);
        delete x.request;
        r.outcomes.push({ name: req.name, uid: req.uid, outcome: 'Failed', message: `commit failed (${reason}): ${msg}`, time: iso(Date.now()) });
        return undefined;
      });
    }
    if (w.snapshotId && permanent) {
      const o: WindowOutcome = { outcome: 'Failed', message: msg, time: iso(Date.now()) };
      await this.records.mutate(target, (r) => recordSnapshot(r, w.snapshotId!, o));
      this.sink.notifySnapshot(target, w.snapshotId, o);
    }
  }

  /**
   * A deleted GitTarget: its pending changes are dropped (its folder stays); its CommitRequests
   * fail in the CommitRequest controller, which finds the GitTarget gone.
   */
  private async targetGone(key: string): Promise<void> {
    this.audit.forget(key);
    this.pendingWrittenAt.delete(key);
    this.failing.delete(key);
    this.pendingWrites.forget(key);
    const rec = this.windows.get(key) as import('./record.js').WindowRecord | undefined;
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
    const now = Date.now();
    if (now - (this.sweptAt.get(key) ?? 0) < ORPHAN_AGE_MS) return;
    this.sweptAt.set(key, now);
    const n = await this.sink.chunks.sweep(target, rec?.windows ?? [], now).catch(() => 0);
    if (n) this.deps.log.info('deleted snapshot chunks no window refers to', { gitTarget: `${target.namespace}/${target.name}`, chunks: n });
  }

  /** status.pendingChanges of a failing GitTarget, by the replica holding its lease. */
  private async writePendingWhileFailing(key: string): Promise<void> {
    const gt = this.deps.gitTargets.get(key);
    const rec = this.windows.get(key) as WindowRecord | undefined;
    if (!gt || !rec || rec.target.uid !== gt.metadata.uid || !this.failing.has(key)) return;
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
    await updateStatus(this.statusClient(), GITTARGETS, key, gt.metadata.uid, (status, obj) => applyTargetStatus(status, obj, s));
  }
}

function stripSource<T extends { source?: unknown }>(c: T): Omit<T, 'source'> {
  const { source: _s, ...rest } = c;
  return rest;
}

function iso(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}
