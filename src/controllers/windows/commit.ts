// Committing a GitTarget's first closed window: the executor of decisions.ts for one commit. It
// counts the attempt durably, checks the lease, asks the git engine worker to commit and push,
// and records the outcome (or the failure) in the window record, the status, Events and metrics.
// Every record write is one compare-and-swap (record.ts WindowRecords.mutate), so a crash between
// any two steps leaves a state the next holder continues from (controller.ts says how).
import type { CommitEngine, Change, GitCredentials, Person } from '../../git/index.js';
import { GitEngineError } from '../../git/errors.js';
import type { Logger } from '../../metrics/logger.js';
import type { KubeObject } from '../../storage/types.js';
import { clusterOf, type Clock } from '../runtime/index.js';
import type { ControllerMetrics } from '../metrics.js';
import { committed, pushFailed, type EventRecorder } from '../events/index.js';
import type { TargetStatus } from './target-status.js';
import { authorshipOf, countAttempt, failRequest, failureOf, hasLanded, iso, recordLanded, specOf } from './decisions.js';
import { noteFailedAttempt, pendingCount, recordSnapshot, type Window, type WindowRecords } from './record.js';
import type { StoreWindowSink } from './sink.js';
import type { TargetKey, WindowOutcome } from './types.js';

export interface WindowCommitsDeps {
  records: WindowRecords;
  sink: StoreWindowSink;
  engine: CommitEngine;
  committer: Person;
  log: Logger;
  clock: Clock;
  metrics?: ControllerMetrics;
  events?: EventRecorder;
  credentials?(gitTarget: KubeObject): Promise<GitCredentials | undefined>;
  writeTargetStatus(gt: KubeObject, s: TargetStatus): Promise<void>;
}

export class WindowCommits {
  /** The remote work of the commit in progress per GitTarget, cancelled when the GitTarget is deleted or its spec changes. */
  private readonly inflight = new Map<string, AbortController>();
  /** GitTargets whose last commit attempt failed: their pendingChanges follow the record (controller.ts). */
  readonly failing = new Set<string>();
  /**
   * The status a landed commit could not write (a 503 under load, a conflict), by GitTarget key:
   * the record no longer has the window, so nothing else would ever write its lastCommit and
   * RepositoryReady. The controller's next reconcile writes it (controller.ts payOwedStatus).
   */
  readonly owedStatus = new Map<string, TargetStatus>();

  constructor(private readonly deps: WindowCommitsDeps) {}

  /** Cancels the commit in progress of `key` (cluster/namespace/name), if any. */
  cancel(key: string): void {
    this.inflight.get(key)?.abort();
  }

  /** Commits the first window; `counted` is that window when closing it already counted this attempt. */
  async commitFirst(gt: KubeObject, target: TargetKey, fence: () => Promise<boolean>, counted?: Window): Promise<void> {
    const { records, sink, engine, clock } = this.deps;
    const started = performance.now();
    const startedAt = Date.now();
    const small = counted ?? (await records.mutate(target, countAttempt));
    if (!small) return;
    if (!(await fence())) throw new Error(`lost the lease of GitTarget ${target.namespace}/${target.name}; stopped before committing`);
    // A chunked snapshot's changes, read a chunk per event-loop turn (all of them, or no commit).
    const w = small.chunks ? { ...small, changes: await sink.chunks.read(target, small) } : small;
    const spec = specOf(gt);
    const committer: Person = { name: this.deps.committer.name, email: this.deps.committer.email };
    const { author, authorKind, message } = authorshipOf(w, committer, `${target.namespace}/${target.name}`);
    let result;
    const key = `${target.cluster}/${target.namespace}/${target.name}`;
    const cancel = new AbortController();
    this.inflight.set(key, cancel);
    const engineAt = Date.now();
    try {
      result = await engine.commit(
        {
          // The tenant partitions local: repositories (src/git/repository-url.ts localGitdir).
          repository: { url: spec.repository.url, credentials: await this.deps.credentials?.(gt), tenant: { cluster: clusterOf(gt), namespace: gt.metadata.namespace ?? '' } },
          branch: spec.branch,
          folder: spec.path,
          changes: w.changes.map((c) => stripSource(c.change) as Change),
          author,
          committer,
          message,
        },
        // An edit's commit keeps its worker warm for the next edits (src/git/worker.ts
        // WORKER_KEEP_WARM_AFTER_EDIT_MS); a snapshot alone does not.
        { signal: cancel.signal, edit: !w.snapshotId },
      );
    } catch (e) {
      // Cancelled: the GitTarget was deleted or changed (the queue runs it again at once) or the
      // process stops. Not a failure: no status, no backoff, no log line.
      if (e instanceof GitEngineError && e.reason === 'Cancelled') return;
      await this.failed(gt, target, w, e);
      throw e;
    } finally {
      if (this.inflight.get(key) === cancel) this.inflight.delete(key);
    }
    const engineDoneAt = Date.now();
    this.failing.delete(key);
    const now = clock.now();
    const landed = hasLanded(result, w.closing!.attempts);
    const sha = result.sha;
    // The mirror hears of a snapshot's landing from notifySnapshot below, after the status write.
    if (w.snapshotId) sink.holdObserved(target.uid);
    await records.mutate(target, (r) => recordLanded(r, w.seq, { landed, sha, branch: spec.branch, author, authorKind, now }));
    const recordedAt = Date.now();
    // The outcome is recorded: nothing refers to the chunks any more (a crash before this leaves them to the sweep).
    if (w.chunks) await sink.chunks.remove(target, w.snapshotId!, w.chunks).catch((e) => this.deps.log.warn('could not delete the chunks of a committed snapshot', { gitTarget: `${target.namespace}/${target.name}`, error: (e as Error).message }));
    const m = this.deps.metrics;
    if (landed && sha && this.deps.events) committed(this.deps.events, gt, sha, spec.branch, message);
    if (landed) m?.commits.inc({ author_kind: authorKind });
    m?.windowChanges.observe(w.changes.length);
    m?.windowAge.observe(Math.max(0, (w.closing!.at - w.openedAt) / 1000));
    const rec = await records.get(target);
    const time = iso(now);
    const status: TargetStatus = { pending: rec ? pendingCount(rec) : 0, lastCommit: landed && sha ? { sha, time } : undefined, repoOK: true };
    this.owedStatus.delete(key);
    // The landing is logged whether or not its status is written: the record holds it either way,
    // and a status the store refused is owed, written by the next reconcile (controller.ts
    // payOwedStatus). Without the line, a landed commit was missing from the log (bench/scale
    // counted 999 of 1,000 commits from it once).
    const logLanded = (statusError?: string) =>
      this.deps.log.info(landed ? 'window committed' : 'window already present', {
        gitTarget: `${target.namespace}/${target.name}`,
        sha,
        changes: w.changes.length,
        reason: w.closing!.reason,
        commitRequest: w.request?.name,
        authorKind,
        ...(statusError ? { statusOwed: statusError } : {}),
        // Where the time went: the whole commit as the controller saw it, and the engine's phases.
        ms: Math.round(performance.now() - started),
        ...(result.outcome === 'Committed' && result.timings ? { engineMs: result.timings } : {}),
        // Wall-clock milestones (epoch ms) of the path from the window's first change to the status
        // naming the commit: bench/scale joins them with its edits to say where the seconds go.
        at: { opened: w.openedAt, lastChange: w.lastChangeAt, closed: w.closing!.at, started: startedAt, engine: engineAt, engineDone: engineDoneAt, recorded: recordedAt, ...(statusError ? {} : { status: Date.now() }) },
      });
    try {
      await this.deps.writeTargetStatus(gt, status);
    } catch (e) {
      this.owedStatus.set(key, status);
      logLanded((e as Error).message);
      // The landing is recorded: the mirror need not wait for the hold (sink.ts HOLD_MS) to learn it.
      if (w.snapshotId) sink.notifySnapshot(target, w.snapshotId, { outcome: landed ? 'Committed' : 'AlreadyPresent', sha, time });
      throw e;
    }
    logLanded();
    if (w.snapshotId) sink.notifySnapshot(target, w.snapshotId, { outcome: landed ? 'Committed' : 'AlreadyPresent', sha, time });
  }

  private async failed(gt: KubeObject, target: TargetKey, w: Window, e: unknown): Promise<void> {
    const { records, clock } = this.deps;
    const f = failureOf(e);
    // Durably: the windows queued behind this one coalesce from now on (record.ts, coalesceBacklog).
    await records.mutate(target, (r) => noteFailedAttempt(r, w.seq, clock.now())).catch(() => undefined);
    // The queue logs the failure once per change of error (runtime/queue.ts); the status says it
    // from the first failed attempt on, with the pending count as it is now.
    this.failing.add(`${target.cluster}/${target.namespace}/${target.name}`);
    const rec = await records.get(target).catch(() => undefined);
    await this.deps.writeTargetStatus(gt, { repoError: { reason: f.reason, message: f.message }, ...(rec ? { pending: pendingCount(rec) } : {}) }).catch(() => undefined);
    if (this.deps.events && f.event) pushFailed(this.deps.events, gt, f.reason, f.message);
    if (f.permanent && w.request) {
      const uid = w.request.uid;
      await records.mutate(target, (r) => failRequest(r, w.seq, uid, f, clock.now()));
    }
    if (w.snapshotId && f.permanent) {
      const o: WindowOutcome = { outcome: 'Failed', message: f.message, time: iso(clock.now()) };
      await records.mutate(target, (r) => recordSnapshot(r, w.snapshotId!, o));
      this.deps.sink.notifySnapshot(target, w.snapshotId, o);
    }
  }
}

function stripSource<T extends { source?: unknown }>(c: T): Omit<T, 'source'> {
  const { source: _s, ...rest } = c;
  return rest;
}
