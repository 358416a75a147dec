// What the windows controller does next, as pure functions of what it knows: the target's window
// record, its commit policy (spec.commit), the clock's now and the last commit attempt's outcome.
// No Store, no git, no timers here: controller.ts reads, asks these functions, and performs what
// they answer (commit through the engine, compare-and-swap the record, patch the status, requeue).
// The record transitions (closeFirst, countAttempt, recordLanded, failRequest, expireWaiting) are
// run by the controller inside one WindowRecords.mutate (record.ts), like those of transitions.ts.
import { GitEngineError } from '../../git/errors.js';
import type { Person } from '../../git/index.js';
import type { RepositoryInput } from '../../git/engine-types.js';
import { clusterOf } from '../runtime/index.js';
import type { GitTargetSpec } from '../../api/gittarget.js';
import type { KubeObject } from '../../storage/types.js';
import { closeDue, type CommitPolicy } from './policy.js';
import { recordSnapshot, unchanged, type AuthorKind, type RequestOutcome, type Window, type WindowRecord } from './record.js';
import { generatedMessage } from './message.js';
import { nextStagingDeadline } from './staging.js';
import { STAGING_POLL_MS } from './attribution.js';
import { ORPHAN_AGE_MS } from './chunks.js';

/** status.pendingChanges is a gauge for people: at most one write per second per target. */
export const PENDING_STATUS_INTERVAL_MS = 1_000;
/** How often a replica that does not hold a target's lease tries to take it. */
export const LEASE_RETRY_MS = 2_000;
/** A reconcile before both caches listed looks again this soon (absent is not "deleted" yet). */
export const UNSYNCED_RETRY_MS = 100;

/** The spec fields the windows controller reads, typed by the API's schema (api/gittarget.ts). */
export function specOf(gt: KubeObject): GitTargetSpec {
  return gt.spec as GitTargetSpec;
}

/**
 * The repository a GitTarget commits to, as the git engine routes it (src/git/worker-pool.ts
 * routingKey: the URL and the tenant that partitions `local:` names); without credentials, which
 * only the commit itself reads.
 */
export function repositoryOf(gt: KubeObject): RepositoryInput {
  return { url: specOf(gt).repository.url, tenant: { cluster: clusterOf(gt), namespace: gt.metadata.namespace ?? '' } };
}

export function isSuspended(gt: KubeObject): boolean {
  return (gt.spec as Partial<GitTargetSpec> | undefined)?.suspend === true;
}

/**
 * The next step for a target whose record has work, once its staging list was drained:
 * - `idle`: no window; pendingChanges is 0, and waiting CommitRequests wake it at their deadline;
 * - `wait`: the first window is open and not due; write pendingChanges when `writePending` is set
 *   (throttled by `pendingWrittenAt`, the last such write), and look again after `requeueAfterMs`;
 * - `close`: the first window is due: close it (for `reason`) and commit it;
 * - `commit`: the first window is already closing (a retry, or closed by a change): commit it.
 * `stagingWake` is when the staging list wants another look (stagingWakeAt).
 */
export type Step =
  | { kind: 'idle'; requeueAfterMs?: number }
  | { kind: 'wait'; requeueAfterMs: number; writePending?: number }
  | { kind: 'close'; seq: number; reason: string }
  | { kind: 'commit' };

export function nextStep(rec: WindowRecord, policy: CommitPolicy, now: number, stagingWake: number | undefined, pendingWrittenAt: number | undefined, pending: number): Step {
  const first = rec.windows[0];
  // Requests held past their deadline by staged changes are looked at with the staging list.
  const nextWaiting = Math.min(stagingWake ?? Infinity, ...rec.waiting.map((w) => (w.deadline > now ? w.deadline : (stagingWake ?? now + STAGING_POLL_MS))));
  if (!first) return Number.isFinite(nextWaiting) ? { kind: 'idle', requeueAfterMs: nextWaiting - now } : { kind: 'idle' };
  if (first.closing) return { kind: 'commit' };
  const due = closeDue(first, policy);
  if (due.at <= now) return { kind: 'close', seq: first.seq, reason: due.reason };
  // Not one status write per change the mirror adds. A window younger than the interval that
  // closes within it is not reported at all: its commit writes pendingChanges with lastCommit
  // (commit.ts), and the write in between cost every edit a GitTarget status write and the
  // reconciles its event causes (a third of the status writes of an idleSeconds-1 edit, bench/scale).
  const last = pendingWrittenAt ?? 0;
  const closesSoon = due.at - now <= PENDING_STATUS_INTERVAL_MS && now - first.openedAt < PENDING_STATUS_INTERVAL_MS;
  const write = !closesSoon && now - last >= PENDING_STATUS_INTERVAL_MS;
  const wake = Math.min(due.at, nextWaiting, write || closesSoon ? Infinity : last + PENDING_STATUS_INTERVAL_MS);
  return { kind: 'wait', requeueAfterMs: Math.max(0, wake - now), ...(write ? { writePending: pending } : {}) };
}

/** When a staging list still waiting for facts wants another look: its head's deadline, and meanwhile for facts another replica stored. */
export function stagingWakeAt(rec: WindowRecord, now: number): number | undefined {
  const deadline = nextStagingDeadline(rec);
  return deadline === undefined ? undefined : Math.min(deadline, now + STAGING_POLL_MS);
}

/**
 * Whether the waiting CommitRequest `w` waited in vain: its deadline passed, and no change staged
 * before it still waits for its author (that change may be the request's).
 */
export function waitedInVain(r: WindowRecord, w: WindowRecord['waiting'][number], now: number): boolean {
  return w.deadline <= now && !(r.staging ?? []).some((e) => e.change && e.stagedAt <= w.deadline);
}

/** Record transition: CommitRequests that waited in vain for a window end NothingToCommit. */
export function expireWaiting(r: WindowRecord, now: number): WindowRecord {
  const expired = r.waiting.filter((w) => waitedInVain(r, w, now));
  r.waiting = r.waiting.filter((w) => !waitedInVain(r, w, now));
  for (const w of expired) {
    r.outcomes.push({ name: w.name, uid: w.uid, outcome: 'NothingToCommit', message: 'no pending change was collected for this request within its close delay; nothing to commit', time: iso(now) });
  }
  return r;
}

/**
 * Record transition: closes the first window `seq` for `reason`, counting the first attempt in the
 * same write (one durable write less between the idle timer and the push). Returns the closed
 * window, or leaves the record unchanged when another writer closed or replaced it meanwhile.
 */
export function closeFirst(r: WindowRecord, seq: number, reason: string, now: number): Window | { value: undefined; unchanged: true } {
  const w = r.windows[0];
  if (!w || w.seq !== seq || w.closing) return unchanged(undefined);
  w.closing = { reason, at: now, attempts: 1 };
  return structuredClone(w);
}

/** Record transition: counts an attempt at the closing first window before touching Git, so a retry after a crash knows a push may have happened. */
export function countAttempt(r: WindowRecord): Window | { value: undefined; unchanged: true } {
  const w = r.windows[0];
  if (!w?.closing) return unchanged(undefined);
  w.closing.attempts++;
  return structuredClone(w);
}

/** Who a window's commit names and what it says: a CommitRequest's author, else the audited (or unresolved) author of the window, else the committer. */
export function authorshipOf(w: Window, committer: Person, target: string): { author: Person; authorKind: AuthorKind; message: string } {
  return {
    author: w.request?.author ?? w.author ?? committer,
    authorKind: w.request?.authorKind ?? w.authorKind ?? 'committer',
    message: w.request?.message ?? generatedMessage(w, target),
  };
}

/** Whether a commit landed: Committed, or AlreadyPresent on a retry (the earlier attempt pushed before it could be recorded). */
export function hasLanded(result: { outcome: string; sha?: string }, attempts: number): boolean {
  return result.outcome === 'Committed' || (attempts > 1 && result.sha !== undefined);
}

export interface Landed {
  landed: boolean;
  sha?: string;
  branch: string;
  author: Person;
  authorKind: AuthorKind;
  now: number;
}

/** Record transition: the committed window `seq` leaves the record; its request and snapshot get their outcome, the record its lastCommit. */
export function recordLanded(r: WindowRecord, seq: number, o: Landed): { value: undefined; unchanged: true } | undefined {
  const i = r.windows.findIndex((x) => x.seq === seq);
  if (i < 0) return unchanged(undefined);
  const w = r.windows[i];
  // The request as the record holds it now (it may have timed out and left meanwhile).
  const req = w.request;
  r.windows.splice(i, 1);
  const time = iso(o.now);
  if (o.landed && o.sha) r.lastCommit = { sha: o.sha, time };
  if (req) {
    const out: RequestOutcome = o.landed
      ? { name: req.name, uid: req.uid, outcome: 'Committed', message: `committed ${o.sha} to ${o.branch}`, sha: o.sha, branch: o.branch, author: o.author, authorKind: o.authorKind, time }
      : { name: req.name, uid: req.uid, outcome: 'AlreadyPresent', message: 'the changes already match the branch, so no commit was made', sha: o.sha, branch: o.branch, time };
    r.outcomes.push(out);
  }
  if (w.snapshotId) recordSnapshot(r, w.snapshotId, { outcome: o.landed ? 'Committed' : 'AlreadyPresent', sha: o.sha, time });
  return undefined;
}

export interface Failure {
  reason: string;
  message: string;
  /** Retrying cannot fix it: the attached CommitRequest and snapshot end Failed now. */
  permanent: boolean;
  /** Worth a PushFailed Event on the GitTarget (a lost lease is this replica's business, not the GitTarget's). */
  event: boolean;
}

/** What a failed commit attempt means. Transient failures (network, a moving branch, a lost lease) keep the request attached. */
export function failureOf(e: unknown): Failure {
  const err = e instanceof GitEngineError ? e : undefined;
  const reason = err?.reason ?? 'CommitFailed';
  return {
    reason,
    message: (e as Error)?.message ?? String(e),
    permanent: err !== undefined && !err.retryable && reason !== 'LeaseLost' && reason !== 'Unreachable' && reason !== 'Conflict',
    event: reason !== 'LeaseLost' && reason !== 'Cancelled',
  };
}

/** Record transition: a permanent failure ends the request attached to window `seq` (the changes stay pending, retried and authored by the committer). */
export function failRequest(r: WindowRecord, seq: number, requestUid: string, f: Failure, now: number): { value: undefined; unchanged: true } | undefined {
  const x = r.windows.find((y) => y.seq === seq);
  if (!x?.request || x.request.uid !== requestUid) return unchanged(undefined);
  const req = x.request;
  delete x.request;
  r.outcomes.push({ name: req.name, uid: req.uid, outcome: 'Failed', message: `commit failed (${f.reason}): ${f.message}`, time: iso(now) });
  return undefined;
}

/** The requeue of a reconcile: the work's own, unless the AuditAttribution condition wants a look sooner (`recheckAt`). */
export function withRecheck<T extends { requeueAfterMs?: number }>(result: T | void, recheckAt: number | undefined, now: number): T | { requeueAfterMs: number } | void {
  if (recheckAt === undefined) return result;
  const after = Math.max(0, recheckAt - now);
  return result?.requeueAfterMs !== undefined && result.requeueAfterMs <= after ? result : { requeueAfterMs: after };
}

/** Whether to look for chunks no window refers to: at most every ORPHAN_AGE_MS per target. */
export function sweepDue(lastSweptAt: number | undefined, now: number): boolean {
  return now - (lastSweptAt ?? 0) >= ORPHAN_AGE_MS;
}

export function iso(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}
