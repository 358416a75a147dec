// The windows controller's decisions (src/controllers/windows/decisions.ts), table-driven: given
// the window record, the commit policy and the clock's now, what happens next (wait, close, commit,
// requeue after how long, write pendingChanges or not), and the record transitions a commit's
// outcome or failure makes. No Store, no git, no timers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { GitEngineError } from '../../src/git/errors.js';
import { emptyRecord, mergeChanges, type AttachedRequest, type Window, type WindowRecord } from '../../src/controllers/windows/record.js';
import type { CommitPolicy } from '../../src/controllers/windows/policy.js';
import { STAGING_POLL_MS } from '../../src/controllers/windows/attribution.js';
import {
  LEASE_RETRY_MS,
  authorshipOf,
  closeFirst,
  countAttempt,
  expireWaiting,
  failRequest,
  failureOf,
  hasLanded,
  nextStep,
  recordLanded,
  stagingWakeAt,
  sweepDue,
  withRecheck,
  type Step,
} from '../../src/controllers/windows/decisions.js';
import { ORPHAN_AGE_MS } from '../../src/controllers/windows/chunks.js';

const T = { cluster: '_', namespace: 'team-a', name: 'tenants', uid: 'u1' };
const NOW = 1_700_000_000_000;
const AUTO: CommitPolicy = { mode: 'Auto', idleMs: 5_000, maxAgeMs: 600_000 };
const ON_REQUEST: CommitPolicy = { mode: 'OnRequest', idleMs: 5_000, maxAgeMs: 600_000 };
const cm = (name: string) => ({ op: 'write' as const, resource: 'configmaps', object: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'team-a' }, data: { v: '1' } } });
const ALICE = { name: 'Alice Doe', email: 'alice@example.com' };
const BOT = { name: 'Reverser Bot', email: 'bot@reverser.example' };

function request(closeAt: number, extra: Partial<AttachedRequest> = {}): AttachedRequest {
  return { name: 'save', uid: 'cr-1', message: 'Raise the replica count', author: ALICE, authorKind: 'asserted', attachedAt: NOW - 1_000, closeAt, ...extra };
}

function record(windows: Array<Partial<Window>>, waiting: WindowRecord['waiting'] = []): WindowRecord {
  const r = emptyRecord(T);
  for (const w of windows) {
    const win: Window = { seq: r.nextSeq++, kind: 'changes', authorKey: '', openedAt: NOW - 10_000, lastChangeAt: NOW - 1_000, changes: [], ...w };
    if (win.changes.length === 0) mergeChanges(win, [cm(`cm-${win.seq}`)]);
    r.windows.push(win);
  }
  r.waiting = waiting;
  return r;
}

const waiting = (deadline: number) => ({ name: 'later', uid: 'cr-2', message: 'm', author: ALICE, authorKind: 'asserted' as const, closeDelayMs: 0, deadline });

test('nextStep: what the controller does next for each record, policy and time', () => {
  const cases: Array<{ name: string; rec: WindowRecord; policy?: CommitPolicy; stagingWake?: number; writtenAt?: number; want: Step }> = [
    { name: 'no window, nothing waiting: idle, no requeue', rec: record([]), want: { kind: 'idle' } },
    { name: 'no window, a request waiting until +3 s: idle until its deadline', rec: record([], [waiting(NOW + 3_000)]), want: { kind: 'idle', requeueAfterMs: 3_000 } },
    { name: 'no window, a request past its deadline held by staging: the staging wake', rec: record([], [waiting(NOW - 1)]), stagingWake: NOW + 700, want: { kind: 'idle', requeueAfterMs: 700 } },
    { name: 'no window, a request past its deadline without a staging wake: the staging poll', rec: record([], [waiting(NOW - 1)]), want: { kind: 'idle', requeueAfterMs: STAGING_POLL_MS } },
    { name: 'open window, idle for 1 of 5 s: wait 4 s and write pendingChanges', rec: record([{}]), want: { kind: 'wait', requeueAfterMs: 4_000, writePending: 1 } },
    { name: 'open window, pendingChanges written 300 ms ago: wake when the next write is allowed', rec: record([{}]), writtenAt: NOW - 300, want: { kind: 'wait', requeueAfterMs: 700 } },
    { name: 'open window, pendingChanges written exactly 1 s ago: write again', rec: record([{}]), writtenAt: NOW - 1_000, want: { kind: 'wait', requeueAfterMs: 4_000, writePending: 1 } },
    { name: 'open window idle exactly 5 s: close for idle', rec: record([{ lastChangeAt: NOW - 5_000 }]), want: { kind: 'close', seq: 1, reason: 'idle' } },
    { name: 'open window idle 4999 ms: not yet', rec: record([{ lastChangeAt: NOW - 4_999 }]), want: { kind: 'wait', requeueAfterMs: 1, writePending: 1 } },
    { name: 'a window opened 200 ms ago that closes in 800 ms: no pendingChanges write (its commit writes it), wake at the close', rec: record([{ openedAt: NOW - 200, lastChangeAt: NOW - 200 }]), policy: { ...AUTO, idleMs: 1_000 }, want: { kind: 'wait', requeueAfterMs: 800 } },
    { name: 'the same window with a request due sooner: wake for the request, still no write', rec: record([{ openedAt: NOW - 200, lastChangeAt: NOW - 200 }], [waiting(NOW + 300)]), policy: { ...AUTO, idleMs: 1_000 }, want: { kind: 'wait', requeueAfterMs: 300 } },
    { name: 'a window open 1 s that keeps closing in under 1 s (edits keep coming): written once a second', rec: record([{ openedAt: NOW - 1_000, lastChangeAt: NOW - 200 }]), policy: { ...AUTO, idleMs: 1_000 }, want: { kind: 'wait', requeueAfterMs: 800, writePending: 1 } },
    { name: 'busy window past its max age: close for max-age', rec: record([{ openedAt: NOW - 600_000, lastChangeAt: NOW }]), want: { kind: 'close', seq: 1, reason: 'max-age' } },
    { name: 'OnRequest never closes on idle: wait for the max age', rec: record([{ lastChangeAt: NOW - 60_000 }]), policy: ON_REQUEST, want: { kind: 'wait', requeueAfterMs: 590_000, writePending: 1 } },
    { name: 'a claimed window closes at the request close time, not on idle', rec: record([{ lastChangeAt: NOW - 60_000, request: request(NOW + 2_000) }]), want: { kind: 'wait', requeueAfterMs: 2_000, writePending: 1 } },
    { name: 'a claimed window at its close time: close for commit-request', rec: record([{ request: request(NOW) }]), want: { kind: 'close', seq: 1, reason: 'commit-request' } },
    { name: 'the first window is closing (a retry): commit it', rec: record([{ closing: { reason: 'idle', at: NOW - 2_000, attempts: 1 } }, {}]), want: { kind: 'commit' } },
    { name: 'a waiting request sooner than the idle close wakes the target first', rec: record([{}], [waiting(NOW + 1_500)]), want: { kind: 'wait', requeueAfterMs: 1_500, writePending: 1 } },
  ];
  for (const c of cases) {
    const rec = c.rec;
    const pending = rec.windows.reduce((n, w) => n + w.changes.length, 0);
    assert.deepEqual(nextStep(rec, c.policy ?? AUTO, NOW, c.stagingWake, c.writtenAt, pending), c.want, c.name);
  }
});

test('stagingWakeAt: the head deadline, at most one staging poll away; none without a waiting change', () => {
  const r = emptyRecord(T);
  assert.equal(stagingWakeAt(r, NOW), undefined);
  r.staging = [{ seq: 1, stagedAt: NOW, deadline: NOW + 200, change: cm('a') }];
  assert.equal(stagingWakeAt(r, NOW), NOW + 200);
  r.staging[0].deadline = NOW + 60_000;
  assert.equal(stagingWakeAt(r, NOW), NOW + STAGING_POLL_MS);
});

test('expireWaiting: a request past its deadline ends NothingToCommit, unless a change staged before its deadline still waits for its author', () => {
  const r = record([], [waiting(NOW), { ...waiting(NOW + 1), name: 'future', uid: 'cr-3' }]);
  expireWaiting(r, NOW);
  assert.deepEqual(r.waiting.map((w) => w.name), ['future']);
  assert.deepEqual(r.outcomes, [{ name: 'later', uid: 'cr-2', outcome: 'NothingToCommit', message: 'no pending change was collected for this request within its close delay; nothing to commit', time: '2023-11-14T22:13:20Z' }]);
  const held = record([], [waiting(NOW - 5)]);
  held.staging = [{ seq: 1, stagedAt: NOW - 10, deadline: NOW + 100, change: cm('a') }];
  expireWaiting(held, NOW);
  assert.equal(held.waiting.length, 1, 'held by a change staged before its deadline');
  assert.equal(held.outcomes.length, 0);
});

test('closeFirst and countAttempt: the first attempt is counted when closing; a window someone else closed or replaced is left alone', () => {
  const r = record([{}]);
  assert.deepEqual(closeFirst(r, 2, 'idle', NOW), { value: undefined, unchanged: true }, 'another seq');
  const closed = closeFirst(r, 1, 'idle', NOW) as Window;
  assert.deepEqual(closed.closing, { reason: 'idle', at: NOW, attempts: 1 });
  assert.deepEqual(r.windows[0].closing, { reason: 'idle', at: NOW, attempts: 1 });
  assert.deepEqual(closeFirst(r, 1, 'idle', NOW + 1), { value: undefined, unchanged: true }, 'already closing');
  assert.equal((countAttempt(r) as Window).closing!.attempts, 2);
  assert.deepEqual(countAttempt(record([{}])), { value: undefined, unchanged: true }, 'an open window is not attempted');
});

test('authorshipOf: the request author and message, else the audited author, else the committer', () => {
  const [plain] = record([{}]).windows;
  assert.deepEqual(authorshipOf(plain, BOT, 'team-a/tenants'), { author: BOT, authorKind: 'committer', message: 'Update configmaps team-a/cm-1' });
  const [audited] = record([{ author: { name: 'Bob', email: 'bob@x' }, authorKind: 'audit' }]).windows;
  assert.deepEqual(authorshipOf(audited, BOT, 'team-a/tenants'), { author: { name: 'Bob', email: 'bob@x' }, authorKind: 'audit', message: 'Update configmaps team-a/cm-1' });
  const [claimed] = record([{ author: { name: 'Bob', email: 'bob@x' }, authorKind: 'audit', request: request(NOW) }]).windows;
  assert.deepEqual(authorshipOf(claimed, BOT, 'team-a/tenants'), { author: ALICE, authorKind: 'asserted', message: 'Raise the replica count' });
});

test('hasLanded: Committed, or AlreadyPresent with a sha on a retry (the earlier attempt pushed)', () => {
  const cases: Array<[{ outcome: string; sha?: string }, number, boolean]> = [
    [{ outcome: 'Committed', sha: 'a' }, 1, true],
    [{ outcome: 'AlreadyPresent', sha: 'a' }, 1, false],
    [{ outcome: 'AlreadyPresent', sha: 'a' }, 2, true],
    [{ outcome: 'AlreadyPresent' }, 2, false],
  ];
  for (const [result, attempts, want] of cases) assert.equal(hasLanded(result, attempts), want, `${result.outcome} sha=${result.sha} attempts=${attempts}`);
});

test('recordLanded: the window leaves, its request and snapshot get the outcome, lastCommit is set only when it landed', () => {
  const r = record([{ closing: { reason: 'commit-request', at: NOW, attempts: 1 }, request: request(NOW) }, {}]);
  recordLanded(r, 1, { landed: true, sha: 'abc', branch: 'main', author: ALICE, authorKind: 'asserted', now: NOW });
  assert.deepEqual(r.windows.map((w) => w.seq), [2]);
  assert.deepEqual(r.lastCommit, { sha: 'abc', time: '2023-11-14T22:13:20Z' });
  assert.deepEqual(r.outcomes, [{ name: 'save', uid: 'cr-1', outcome: 'Committed', message: 'committed abc to main', sha: 'abc', branch: 'main', author: ALICE, authorKind: 'asserted', time: '2023-11-14T22:13:20Z' }]);
  const s = record([{ kind: 'snapshot', snapshotId: 'g1-x', closing: { reason: 'snapshot', at: NOW, attempts: 1 }, request: request(NOW) }]);
  recordLanded(s, 1, { landed: false, sha: 'def', branch: 'main', author: BOT, authorKind: 'committer', now: NOW });
  assert.equal(s.lastCommit, undefined);
  assert.deepEqual(s.outcomes.map((o) => [o.outcome, o.message]), [['AlreadyPresent', 'the changes already match the branch, so no commit was made']]);
  assert.deepEqual(s.snapshots, [{ id: 'g1-x', outcome: 'AlreadyPresent', sha: 'def', time: '2023-11-14T22:13:20Z' }]);
  assert.deepEqual(recordLanded(s, 1, { landed: true, branch: 'main', author: BOT, authorKind: 'committer', now: NOW }), { value: undefined, unchanged: true }, 'gone already');
});

test('failureOf: which failures end the request now, and which are worth an Event', () => {
  const cases: Array<[unknown, { reason: string; permanent: boolean; event: boolean }]> = [
    [new GitEngineError('AuthFailed', 'refused'), { reason: 'AuthFailed', permanent: true, event: true }],
    [new GitEngineError('NotFound', 'no such repository'), { reason: 'NotFound', permanent: true, event: true }],
    [new GitEngineError('Unreachable', 'connect ECONNREFUSED'), { reason: 'Unreachable', permanent: false, event: true }],
    [new GitEngineError('Conflict', 'moved'), { reason: 'Conflict', permanent: false, event: true }],
    [new GitEngineError('LeaseLost', 'lost'), { reason: 'LeaseLost', permanent: false, event: false }],
    [new GitEngineError('NotFound', 'flaky', true), { reason: 'NotFound', permanent: false, event: true }],
    [new Error('boom'), { reason: 'CommitFailed', permanent: false, event: true }],
  ];
  for (const [e, want] of cases) {
    const f = failureOf(e);
    assert.deepEqual({ reason: f.reason, permanent: f.permanent, event: f.event }, want, (e as Error).message);
    assert.equal(f.message, (e as Error).message);
  }
});

test('failRequest: the attached request ends Failed and leaves the window; another request is left alone', () => {
  const r = record([{ closing: { reason: 'idle', at: NOW, attempts: 1 }, request: request(NOW) }]);
  const f = failureOf(new GitEngineError('AuthFailed', 'authentication failed'));
  assert.deepEqual(failRequest(r, 1, 'someone-else', f, NOW), { value: undefined, unchanged: true });
  failRequest(r, 1, 'cr-1', f, NOW);
  assert.equal(r.windows[0].request, undefined);
  assert.equal(r.windows[0].changes.length, 1, 'the changes stay pending');
  assert.deepEqual(r.outcomes, [{ name: 'save', uid: 'cr-1', outcome: 'Failed', message: 'commit failed (AuthFailed): authentication failed', time: '2023-11-14T22:13:20Z' }]);
});

test('withRecheck and sweepDue: the sooner of the work requeue and the audit recheck; sweeps at most every ORPHAN_AGE_MS', () => {
  assert.equal(withRecheck(undefined, undefined, NOW), undefined);
  assert.deepEqual(withRecheck({ requeueAfterMs: LEASE_RETRY_MS }, undefined, NOW), { requeueAfterMs: LEASE_RETRY_MS });
  assert.deepEqual(withRecheck(undefined, NOW + 800, NOW), { requeueAfterMs: 800 });
  assert.deepEqual(withRecheck({ requeueAfterMs: 500 }, NOW + 800, NOW), { requeueAfterMs: 500 });
  assert.deepEqual(withRecheck({ requeueAfterMs: 900 }, NOW + 800, NOW), { requeueAfterMs: 800 });
  assert.deepEqual(withRecheck(undefined, NOW - 5, NOW), { requeueAfterMs: 0 });
  assert.equal(sweepDue(undefined, NOW), true);
  assert.equal(sweepDue(NOW - ORPHAN_AGE_MS + 1, NOW), false);
  assert.equal(sweepDue(NOW - ORPHAN_AGE_MS, NOW), true);
});
