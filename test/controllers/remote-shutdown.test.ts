// What a hostile or dead remote may cost a server process (embedded store, real processes):
// an endless response stays within the size cap's memory and ends as a condition; SIGTERM while a
// push hangs ends the process within its bound (10 s, cli/main.ts) without losing the change,
// which the next process commits exactly once; after a SIGKILL mid-push the next process commits
// within the lease time (~12 s: 10 s TTL of the GitTarget and branch leases, 2 s retry); SIGINT
// and SIGTERM together make one complete shutdown that releases the data directory's lock.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createStore } from '../../src/storage/index.js';
import { WindowRecords } from '../../src/controllers/windows/record.js';
import { StoreWindowSink } from '../../src/controllers/windows/sink.js';
import { ns, startServer, type StartedServer } from '../support/server.js';
import { startHostileRemote, type HostileMode, type HostileRemote } from '../support/hostile-remote.js';
import { cloneAndCheck } from '../git/git-cli.js';
import { waitMs } from '../support/deadline.js';
import { configMap, createGitSecret, createGitTarget, gitServer, waitFor } from './harness.js';
import type { GitServer } from '../support/git-server.js';
import { targetLeaseName } from '../../src/controllers/runtime/leases.js';
import { branchLeaseName } from '../../src/git/lease.js';
import { LOCK_FILE } from '../../src/storage/data-dir-lock.js';

/** Which of `names` another holder could take now (the embedded store opened while no server runs). */
async function freeLeases(dataDir: string, names: string[]): Promise<string[]> {
  const store = await createStore({ storage: 'embedded', dataDir });
  try {
    const free: string[] = [];
    for (const n of names) {
      const l = await store.acquireLease(n, 'probe', 1_000);
      if (l) {
        free.push(n);
        await store.releaseLease(n, 'probe', l.token);
      }
    }
    return free;
  } finally {
    await store.close();
  }
}

const ARGS = ['--controllers=all', '--committer-name=Reverser Bot', '--committer-email=bot@reverser.example'];
const BOT = 'Reverser Bot <bot@reverser.example>';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Setup {
  upstream: GitServer;
  remote: HostileRemote;
  dataDir: string;
  /** The GitTarget's lease and its branch's lease. */
  leases: string[];
}

/** A data dir holding a GitTarget on the hostile remote (Auto, idleSeconds 0) and one pending window of two changes. */
async function seeded(t: TestContext, mode: HostileMode): Promise<Setup> {
  const upstream = await gitServer(t);
  const remote = await startHostileRemote(upstream.port, mode);
  t.after(() => remote.close());
  const dataDir = mkdtempSync(join(tmpdir(), 'remote-shutdown-'));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  const store = await createStore({ storage: 'embedded', dataDir });
  await createGitSecret(store, upstream);
  const { key } = await createGitTarget(store, 'tenants', remote.url('config'), { idleSeconds: 0 });
  await new StoreWindowSink(new WindowRecords(store), () => undefined).add(key, [configMap('a', { v: '1' }), configMap('b', { v: '2' })]);
  await store.close();
  return { upstream, remote, dataDir, leases: [targetLeaseName(key), branchLeaseName(remote.url('config'), 'main')] };
}

function rssMiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : 0;
}

async function status(s: StartedServer): Promise<{ pendingChanges?: number; lastCommit?: { sha: string }; conditions?: Array<{ type: string; status: string; reason: string; message: string }> }> {
  return (await s.get(`${ns('team-a')}/tenants`)).body?.status ?? {};
}

/** SIGTERM; resolves with the ms until the process was gone. */
async function sigterm(s: StartedServer): Promise<number> {
  const at = Date.now();
  process.kill(s.pid, 'SIGTERM');
  await waitFor('the process to exit after SIGTERM', () => !s.alive() || undefined, waitMs(30_000), 20);
  return Date.now() - at;
}

async function pushStarted(remote: HostileRemote): Promise<void> {
  await waitFor('the push to reach the remote', () => remote.requests.some((r) => r.method === 'POST' && r.path.endsWith('/git-receive-pack')) || undefined, 20_000, 20);
}

async function assertCommittedOnce(t: TestContext, upstream: GitServer): Promise<void> {
  const c = await cloneAndCheck(upstream.authURL('config'), 'main');
  t.after(c.cleanup);
  assert.deepEqual(c.log, [`${BOT}|${BOT}|Update 2 objects in team-a/tenants`]);
  assert.deepEqual(c.files, ['clusters/dev/team-a/configmaps/a.yaml', 'clusters/dev/team-a/configmaps/b.yaml']);
}

test('a remote streaming without end: RSS stays within the cap, RemoteResponseTooLarge, deletion ends the retries, SIGTERM is prompt', { timeout: 120_000 }, async (t) => {
  const { remote, dataDir } = await seeded(t, 'endless');
  const s = await startServer(ARGS, { dataDir });
  t.after(() => s.stop());
  const baseline = rssMiB(s.pid);
  let peak = baseline;
  const sampler = setInterval(() => {
    if (s.alive()) peak = Math.max(peak, rssMiB(s.pid));
  }, 20);
  t.after(() => clearInterval(sampler));
  const failed = await waitFor('RepositoryReady False', async () => {
    const st = await status(s);
    return st.conditions?.find((c) => c.type === 'RepositoryReady' && c.status === 'False');
  }, 30_000);
  const where = `http://127.0.0.1:${remote.port}/config.git`;
  assert.deepEqual(
    { reason: failed.reason, message: failed.message },
    { reason: 'RemoteResponseTooLarge', message: `${where} sent a response larger than 134217728 bytes (--git-max-response-bytes); the transfer was stopped` },
  );
  assert.equal((await status(s)).pendingChanges, 2);
  // The retry-proof backoff: the next attempt only after 10 s (±10 %); watch through it.
  await sleep(12_000);
  clearInterval(sampler);
  const streamedMiB = remote.bytesStreamed() / 1048576;
  t.diagnostic(`RSS ${baseline.toFixed(0)} MiB at start, peak ${peak.toFixed(0)} MiB; remote streamed ${streamedMiB.toFixed(0)} MiB in ${remote.requestCount()} requests`);
  assert.ok(remote.requestCount() >= 1 && remote.requestCount() <= 2, `${remote.requestCount()} requests`);
  // The bound: one response's cap (128 MiB) held while it is read, plus the worker's copies and slack.
  assert.ok(peak - baseline < 128 + 160, `RSS grew by ${(peak - baseline).toFixed(0)} MiB`);

  const del = await s.request('DELETE', `${ns('team-a')}/tenants`);
  assert.equal(del.status, 200, del.text);
  const n = remote.requestCount();
  await sleep(2_000);
  assert.equal(remote.requestCount(), n, 'requests after the GitTarget was deleted');
  assert.equal(remote.openRequests(), 0);
  // What is left is within the same bound (the allocator keeps some of it; nothing grows).
  const after = rssMiB(s.pid);
  t.diagnostic(`RSS 2 s after the deletion: ${after.toFixed(0)} MiB`);
  assert.ok(after - baseline < 128 + 160, `RSS still ${(after - baseline).toFixed(0)} MiB above the start`);
  const took = await sigterm(s);
  t.diagnostic(`SIGTERM to exit: ${took} ms`);
  assert.ok(took < 10_000, `exit took ${took} ms`);
});

test('SIGTERM while a push hangs: exit within 10 s; the next process commits the change exactly once', { timeout: 120_000 }, async (t) => {
  const { upstream, remote, dataDir, leases } = await seeded(t, 'hang-push');
  const a = await startServer(ARGS, { dataDir });
  t.after(() => a.stop());
  await pushStarted(remote);
  const took = await sigterm(a);
  t.diagnostic(`SIGTERM to exit during a hanging push: ${took} ms`);
  assert.ok(took < 10_000, `exit took ${took} ms`);
  // The abandoned push is neither a failure to report nor a reason to wait.
  assert.doesNotMatch(a.stderr(), /shutdown did not finish in time|reconcile failed/);
  // Both leases were handed back: the next process (or replica) waits for no TTL.
  assert.deepEqual(await freeLeases(dataDir, leases), leases);

  remote.mode = 'pass';
  const restartAt = Date.now();
  const b = await startServer(ARGS, { dataDir });
  t.after(() => b.stop());
  const servingAt = Date.now();
  await waitFor('the change committed by the next process', async () => ((await status(b)).lastCommit ? true : undefined), 30_000, 100);
  const commitAfter = Date.now() - servingAt;
  t.diagnostic(`next process: serving ${servingAt - restartAt} ms after its start, committed ${commitAfter} ms after that`);
  assert.ok(commitAfter < waitMs(8_000), `commit took ${commitAfter} ms after the restart`);
  await assertCommittedOnce(t, upstream);
  // Absent reads as 0 (no status write was ever needed for it).
  assert.equal((await status(b)).pendingChanges ?? 0, 0);
});

test('SIGKILL while a push hangs: the next process commits within the lease time, exactly once', { timeout: 120_000 }, async (t) => {
  const { upstream, remote, dataDir } = await seeded(t, 'hang-push');
  const a = await startServer(ARGS, { dataDir });
  t.after(() => a.stop());
  await pushStarted(remote);
  const killedAt = Date.now();
  await a.kill();
  remote.mode = 'pass';
  const b = await startServer(ARGS, { dataDir });
  t.after(() => b.stop());
  await waitFor('the change committed by the next process', async () => ((await status(b)).lastCommit ? true : undefined), 45_000, 100);
  const took = Date.now() - killedAt;
  t.diagnostic(`SIGKILL to the next process's commit: ${took} ms`);
  // Both leases (GitTarget and branch) have a 10 s TTL; the controller retries a held lease every 2 s.
  assert.ok(took < 10_000 + 2_000 + 4_000, `takeover and commit took ${took} ms`);
  await assertCommittedOnce(t, upstream);
});

test('SIGINT then SIGTERM (Ctrl-C of npm start): one shutdown, completed; the data directory lock is released', { timeout: 60_000 }, async (t) => {
  const { dataDir } = await seeded(t, 'hang-push');
  const s = await startServer(ARGS, { dataDir });
  t.after(() => s.stop());
  const lock = join(dataDir, LOCK_FILE);
  assert.ok(existsSync(lock));
  process.kill(s.pid, 'SIGINT');
  process.kill(s.pid, 'SIGTERM');
  await waitFor('the process to exit', () => !s.alive() || undefined, waitMs(30_000), 20);
  // The second signal waited for the first shutdown instead of exiting before the lock was released.
  assert.equal(existsSync(lock), false, 'the lock file was left behind');
  // The next start finds no stale lock to take over.
  const next = await startServer(ARGS, { dataDir });
  t.after(() => next.stop());
  assert.doesNotMatch(next.stderr(), /took over a stale data directory lock/);
});

test('a dead remote at creation: RepositoryReady and Ready say why within seconds, with the real pendingChanges', { timeout: 90_000 }, async (t) => {
  const remote = await startHostileRemote(1, 'status503');
  t.after(() => remote.close());
  const s = await startServer(['--sandbox', ...ARGS]);
  t.after(() => s.stop());
  const created = async (path: string, body: object) => {
    const r = await s.request('POST', path, { body });
    assert.equal(r.status, 201, r.text);
  };
  await created('/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'team-a' } });
  for (const n of ['one', 'two']) await created('/api/v1/namespaces/team-a/configmaps', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: n }, data: { k: n } });
  const createdAt = Date.now();
  await created(ns('team-a'), {
    apiVersion: 'configbutler.ai/v1alpha1',
    kind: 'GitTarget',
    metadata: { name: 'tenants' },
    spec: { repository: { url: remote.url('config') }, branch: 'main', path: 'live', resources: [{ group: '', resource: 'configmaps', namespaces: ['team-a'] }] },
  });
  const where = `http://127.0.0.1:${remote.port}/config.git`;
  const st = await waitFor('RepositoryReady False', async () => {
    const x = await status(s);
    return x.conditions?.some((c) => c.type === 'RepositoryReady' && c.status === 'False') ? x : undefined;
  }, 30_000, 100);
  const took = Date.now() - createdAt;
  t.diagnostic(`RepositoryReady False ${took} ms after the GitTarget was created`);
  assert.ok(took < waitMs(10_000), `took ${took} ms`);
  const pick = (type: string) => {
    const c = st.conditions!.find((x) => x.type === type)!;
    return { status: c.status, reason: c.reason, message: c.message };
  };
  assert.deepEqual(pick('RepositoryReady'), { status: 'False', reason: 'Unreachable', message: `${where} answered HTTP 503` });
  assert.deepEqual(pick('Ready'), { status: 'False', reason: 'Unreachable', message: `RepositoryReady: ${where} answered HTTP 503` });
  // The first snapshot: the two ConfigMaps (kube-root-ca.crt is cluster noise, left out).
  assert.equal(st.pendingChanges, 2);
  assert.equal(remote.requestCount(), 1);
});
