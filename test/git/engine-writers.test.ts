// Many commits, racing writers and the (repository, branch) lease, against a real Git server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { startRedis } from '../support/redis.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GitEngine, GitEngineError, type LeaseProvider } from '../../src/git/index.js';
import { createEmbeddedStore } from '../../src/storage/embedded.js';
import { startGitServer } from '../support/git-server.js';
import { cloneAndCheck, configMap, git } from './git-cli.js';

const alice = { name: 'Alice Doe', email: 'alice@example.com' };

async function setup(t: import('node:test').TestContext) {
  const server = await startGitServer();
  const dirs: string[] = [];
  const store = await createEmbeddedStore();
  t.after(async () => {
    await store.close();
    await server.close();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  const newDataDir = () => {
    const d = mkdtempSync(join(tmpdir(), 'git-engine-'));
    dirs.push(d);
    return d;
  };
  const creds = { username: server.username, password: server.password };
  return { server, store, newDataDir, creds };
}

test('200 commits in a row', async (t) => {
  const { server, newDataDir, creds } = await setup(t);
  server.createBareRepo('many');
  const engine = new GitEngine({ allowInsecureCredentials: true,  dataDir: newDataDir() });
  const repository = { url: server.url('many'), credentials: creds };
  for (let i = 0; i < 200; i++) {
    const r = await engine.commit({
      repository, branch: 'main', folder: 'apps',
      changes: [{ op: 'write', object: configMap(`cm-${i % 20}`, 'ns', { round: String(i) }), resource: 'configmaps' }],
      author: alice, message: `commit ${i}`,
    });
    assert.equal(r.outcome, 'Committed');
  }
  const c = await cloneAndCheck(server.authURL('many'), 'main');
  t.after(c.cleanup);
  assert.equal(c.log.length, 200);
  assert.equal(c.log[0], 'Alice Doe <alice@example.com>|reverser-apiserver <reverser-apiserver@localhost>|commit 199');
  assert.deepEqual(c.files, Array.from({ length: 20 }, (_, i) => `apps/ns/configmaps/cm-${i}.yaml`).sort());
  assert.match(await c.read('apps/ns/configmaps/cm-19.yaml'), /round: "199"/);
});

async function race(t: import('node:test').TestContext, withLease: boolean) {
  const { server, store, newDataDir, creds } = await setup(t);
  server.createBareRepo('race');
  const repository = { url: server.url('race'), credentials: creds };
  const lease: LeaseProvider | undefined = withLease ? store : undefined;
  // Two writers with their own caches and holder ids, as two replicas would be.
  const writers = ['p1', 'p2'].map((holder) => new GitEngine({ allowInsecureCredentials: true,  dataDir: newDataDir(), lease, holder, retryInitialDelayMs: 20, retryTimeoutMs: 30_000 }));
  let inFlight = 0;
  let maxInFlight = 0;
  const acquire = store.acquireLease.bind(store);
  const release = store.releaseLease.bind(store);
  if (withLease) {
    // Count writers inside the lease: at most one at any time.
    store.acquireLease = async (...a) => {
      const l = await acquire(...a);
      if (l) maxInFlight = Math.max(maxInFlight, ++inFlight);
      return l;
    };
    store.releaseLease = async (...a) => {
      inFlight--;
      return release(...a);
    };
  }
  const N = 8;
  await Promise.all(
    writers.map(async (engine, w) => {
      for (let i = 0; i < N; i++) {
        const r = await engine.commit({
          repository, branch: 'main', folder: '.',
          changes: [{ op: 'write', object: configMap(`w${w}-${i}`, 'ns', { i: String(i) }) }],
          author: { name: `Writer ${w}`, email: `w${w}@example.com` }, message: `w${w} ${i}`,
        });
        assert.equal(r.outcome, 'Committed');
      }
    }),
  );
  const c = await cloneAndCheck(server.authURL('race'), 'main');
  t.after(c.cleanup);
  assert.deepEqual(c.files, Array.from({ length: 2 * N }, (_, i) => `ns/configmaps/w${i % 2}-${Math.floor(i / 2)}.yaml`).sort(), 'no lost write');
  assert.equal(c.log.length, 2 * N);
  // Linear history: every commit has exactly one parent except the root.
  const lines = (await git(c.dir, 'log', '--format=%H %p')).trim().split('\n');
  assert.deepEqual(lines.map((l) => l.split(' ').length - 1).sort(), [0, ...Array(2 * N - 1).fill(1)]);
  if (withLease) assert.equal(maxInFlight, 1);
}

test('two writers racing for one branch with the lease: one at a time, no lost write', (t) => race(t, true));

test('two processes racing for one branch, lease in Redis: one writer at a time, no lost write', async (t) => {
  const { server, newDataDir, creds } = await setup(t);
  const redis = await startRedis();
  t.after(() => redis.stop());
  server.createBareRepo('procs');
  const N = 6;
  const writer = fileURLToPath(new URL('./fixtures/race-writer.js', import.meta.url));
  const run = (holder: string) =>
    new Promise<string>((resolve, reject) =>
      execFile(process.execPath, [writer], {
        env: { ...process.env, REDIS_URL: redis.url, REPO_URL: server.url('procs'), GIT_USER: creds.username, GIT_PASS: creds.password, HOLDER: holder, COMMITS: String(N), DATA_DIR: newDataDir() },
      }, (err, stdout, stderr) => (err ? reject(new Error(`${holder}: ${err.message}\n${stderr}`)) : resolve(stdout))),
    );
  const outputs = await Promise.all([run('proc-a'), run('proc-b')]);
  const holds = outputs.flatMap((o) => o.trim().split('\n').map((l) => JSON.parse(l) as { acquired?: number; released?: number; done?: number }));
  assert.deepEqual(holds.filter((h) => h.done !== undefined).map((h) => h.done), [N, N]);
  const intervals = holds.filter((h) => h.acquired !== undefined).sort((a, b) => a.acquired! - b.acquired!);
  assert.equal(intervals.length, 2 * N);
  for (let i = 1; i < intervals.length; i++) assert.ok(intervals[i].acquired! >= intervals[i - 1].released!, 'two processes held the lease at once');
  const c = await cloneAndCheck(server.authURL('procs'), 'main');
  t.after(c.cleanup);
  assert.deepEqual(c.files, Array.from({ length: 2 * N }, (_, i) => `ns/configmaps/proc-${i % 2 ? 'b' : 'a'}-${Math.floor(i / 2)}.yaml`).sort(), 'no lost write');
  assert.equal(c.log.length, 2 * N);
  assert.deepEqual(c.log.map((l) => l.split('|')[0]).sort(), [...Array(N).fill('proc-a <proc-a@example.com>'), ...Array(N).fill('proc-b <proc-b@example.com>')]);
});

test('two writers racing without a lease: the push compare-and-swap alone loses nothing', (t) => race(t, false));

test('a writer that lost its lease stops before pushing', async (t) => {
  const { server, store, newDataDir, creds } = await setup(t);
  server.createBareRepo('fenced');
  const repository = { url: server.url('fenced'), credentials: creds };
  const first = await new GitEngine({ allowInsecureCredentials: true,  dataDir: newDataDir() }).commit({
    repository, branch: 'main', folder: '.', changes: [{ op: 'write', object: configMap('a', 'ns', { v: '1' }) }], author: alice, message: 'base',
  });
  assert.equal(first.outcome, 'Committed');
  // The fencing check runs just before the push; by then another process has taken the lease over.
  const stalled: LeaseProvider = {
    acquireLease: (n, h, ttl) => store.acquireLease(n, h, ttl),
    renewLease: (n, h, tok, ttl) => store.renewLease(n, h, tok, ttl),
    releaseLease: (n, h, tok) => store.releaseLease(n, h, tok),
    checkLease: async (n, tok) => {
      await store.releaseLease(n, 'p1', tok);
      assert.ok(await store.acquireLease(n, 'p2', 60_000));
      return store.checkLease(n, tok);
    },
  };
  const engine = new GitEngine({ allowInsecureCredentials: true,  dataDir: newDataDir(), lease: stalled, holder: 'p1' });
  await assert.rejects(
    engine.commit({ repository, branch: 'main', folder: '.', changes: [{ op: 'write', object: configMap('a', 'ns', { v: '2' }) }], author: alice, message: 'fenced out' }),
    (e: unknown) => e instanceof GitEngineError && e.reason === 'LeaseLost' && /lost the write lease/.test(e.message),
  );
  const c = await cloneAndCheck(server.authURL('fenced'), 'main');
  t.after(c.cleanup);
  assert.deepEqual(c.log.map((l) => l.split('|')[2]), ['base']);
});
