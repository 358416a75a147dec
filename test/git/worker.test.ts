// The git engine worker thread (src/git/worker.ts): a large commit is handed over in slices of 500
// changes and committed as one commit holding every change; folders are listed through it too.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GitWorker } from '../../src/git/index.js';
import { until, withDeadline } from '../support/deadline.js';

const git = (dir: string, ...args: string[]) => execFileSync('git', ['--git-dir', dir, ...args], { encoding: 'utf8', env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1', HOME: tmpdir() } });

test('a commit of 1,234 changes reaches the worker in slices and lands as one commit with all of them', { timeout: 60_000 }, async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'git-worker-'));
  const worker = new GitWorker({ allowInsecureCredentials: true,  dataDir });
  t.after(async () => {
    await worker.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const N = 1234;
  const changes = Array.from({ length: N }, (_, i) => ({
    op: 'write' as const,
    resource: 'configmaps',
    object: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `cm-${String(i).padStart(4, '0')}`, namespace: 'team-a' }, data: { i: String(i) } },
  }));
  const me = { name: 'T', email: 't@example.com' };
  const r = await worker.commit({ repository: { url: 'local:big' }, branch: 'main', folder: 'f', changes, author: me, message: 'big' });
  assert.equal(r.outcome, 'Committed');
  const repo = join(dataDir, 'git', 'big.git');
  assert.equal(git(repo, 'rev-list', '--count', 'main').trim(), '1');
  const files = git(repo, 'ls-tree', '-r', '--name-only', 'main').split('\n').filter(Boolean);
  assert.equal(files.length, N);
  assert.equal(files[0], 'f/team-a/configmaps/cm-0000.yaml');
  assert.equal(files[N - 1], `f/team-a/configmaps/cm-${N - 1}.yaml`);
  assert.equal(git(repo, 'show', `main:f/team-a/configmaps/cm-0777.yaml`), 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-0777\n  namespace: team-a\ndata:\n  i: "777"\n');
  // A second, small commit right after goes the ordinary way; the listing sees all of them.
  const r2 = await worker.commit({ repository: { url: 'local:big' }, branch: 'main', folder: 'f', changes: [{ op: 'delete', ref: { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'team-a', name: 'cm-0000' } }], author: me, message: 'one' });
  assert.equal(r2.outcome, 'Committed');
  const listed = await worker.listFolder({ repository: { url: 'local:big' }, branch: 'main', folder: 'f' });
  assert.equal(listed.length, N - 1);
  assert.deepEqual(listed.find((x) => x.name === 'cm-1233'), { apiVersion: '', kind: 'ConfigMap', namespace: 'team-a', name: 'cm-1233' });
});

test('an idle worker thread ends after idleExitMs, not before, and the next commit starts a new one', { timeout: 60_000 }, async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'git-worker-idle-'));
  const IDLE = 2000;
  const worker = new GitWorker({ allowInsecureCredentials: true, dataDir, idleExitMs: IDLE });
  t.after(async () => {
    await worker.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const me = { name: 'T', email: 't@example.com' };
  const commit = (i: number) =>
    worker.commit({ repository: { url: 'local:idle' }, branch: 'main', folder: 'f', changes: [{ op: 'write', resource: 'configmaps', object: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `cm-${i}`, namespace: 'a' }, data: { i: String(i) } } }], author: me, message: `c${i}` });
  const untilStopped = async (deadlineMs: number) => {
    const t0 = performance.now();
    while (worker.running) {
      assert.ok(performance.now() - t0 < deadlineMs, `the idle worker still runs after ${deadlineMs} ms`);
      await new Promise((r) => setTimeout(r, 20));
    }
    return performance.now() - t0;
  };
  assert.equal((await commit(1)).outcome, 'Committed');
  const doneAt = performance.now();
  // Calls closer together than IDLE keep it (each one re-arms the idle exit), for longer than IDLE in all.
  for (let i = 2; i <= 7; i++) {
    await new Promise((r) => setTimeout(r, IDLE / 5));
    assert.ok(worker.running, `the worker ran on between calls ${IDLE / 5} ms apart (call ${i})`);
    assert.equal((await commit(i)).outcome, 'Committed');
  }
  const lastAt = performance.now();
  await untilStopped(15_000);
  // Never before IDLE after the last call (a loaded machine only makes it later).
  assert.ok(performance.now() - lastAt >= IDLE - 5, `ended ${Math.round(performance.now() - lastAt)} ms after the last call, before ${IDLE} ms`);
  assert.ok(performance.now() - doneAt > IDLE, 'the calls in between re-armed the idle exit');
  // A call after the exit starts a new worker and commits.
  assert.equal((await commit(8)).outcome, 'Committed');
  assert.ok(worker.running);
  assert.equal(git(join(dataDir, 'git', 'idle.git'), 'log', '--format=%s', 'main'), 'c8\nc7\nc6\nc5\nc4\nc3\nc2\nc1\n');
  await untilStopped(15_000);
});

// The exit protocol's ordering (src/git/worker.ts `idle`): the idle exit is armed once the worker
// is ready, so a start slower than idleExitMs (a loaded machine) does not end the worker a change
// just warmed; an edit's commit keeps the worker keepWarmMs, a commit that is not an edit does not.
test('a warmed worker is not ended before it is ready, even with an idle exit shorter than its start', { timeout: 60_000 }, async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'git-worker-ready-'));
  const worker = new GitWorker({ allowInsecureCredentials: true, dataDir, idleExitMs: 1 });
  t.after(async () => {
    await worker.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  worker.warm();
  assert.equal(worker.ready, false, 'the thread is starting, not ready yet');
  await withDeadline(worker.whenReady(), 'the warmed worker to say it is ready', 30_000);
  assert.equal(worker.ready, true);
  // Ready, then idle: now the 1 ms idle exit applies.
  await until(() => !worker.running, 'the ready, idle worker to end', 15_000);
  assert.equal(worker.ready, false);
});

test('an edit keeps its worker keepWarmMs after it; a commit that is not an edit only idleExitMs', { timeout: 60_000 }, async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'git-worker-keep-'));
  const IDLE = 200;
  const KEEP = 2500;
  const worker = new GitWorker({ allowInsecureCredentials: true, dataDir, idleExitMs: IDLE, keepWarmMs: KEEP });
  t.after(async () => {
    await worker.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const me = { name: 'T', email: 't@example.com' };
  const commit = (i: number, edit: boolean) =>
    worker.commit({ repository: { url: 'local:keep' }, branch: 'main', folder: 'f', changes: [{ op: 'write', resource: 'configmaps', object: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm', namespace: 'a' }, data: { i: String(i) } } }], author: me, message: `c${i}` }, { edit });
  const timeToEnd = async () => {
    const t0 = performance.now();
    await until(() => !worker.running, 'the worker to end', 20_000, 10);
    return performance.now() - t0;
  };

  // Not an edit (a snapshot's commit): ended after IDLE; the bound is the deadline's, the floor the timer's.
  const snapshotHandedAt = performance.now();
  assert.equal((await commit(1, false)).outcome, 'Committed');
  const afterSnapshot = await timeToEnd();
  assert.ok(afterSnapshot < KEEP, `a commit that is not an edit kept the worker ${Math.round(afterSnapshot)} ms (keep-warm is ${KEEP} ms)`);
  assert.ok(performance.now() - snapshotHandedAt >= IDLE - 5);

  // An edit: the worker runs on past IDLE, and ends no earlier than KEEP after the edit was handed over.
  const editHandedAt = performance.now();
  assert.equal((await commit(2, true)).outcome, 'Committed');
  await new Promise((r) => setTimeout(r, IDLE * 3));
  assert.equal(worker.running, true, `the worker ran on ${IDLE * 3} ms after an edit, past the idle exit`);
  await timeToEnd();
  const lived = performance.now() - editHandedAt;
  assert.ok(lived >= KEEP - 5, `the worker ended ${Math.round(lived)} ms after the edit, before keepWarmMs ${KEEP}`);
  assert.equal(git(join(dataDir, 'git', 'keep.git'), 'log', '--format=%s', 'main'), 'c2\nc1\n');
});
