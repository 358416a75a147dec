// The git engine's worker pool (src/git/worker-pool.ts, --git-workers): every repository commits
// on one worker thread, so commits handed over together land in the order they were handed over;
// different repositories spread over the workers and commit in parallel.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { GitWorkerPool, routingKey } from '../../src/git/worker-pool.js';
import { parseServeFlags, FlagError } from '../../src/cli/options.js';
import { withDeadline } from '../support/deadline.js';

const git = (dir: string, ...args: string[]) => execFileSync('git', ['--git-dir', dir, ...args], { encoding: 'utf8', env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1', HOME: tmpdir() } });
const me = { name: 'T', email: 't@example.com' };
const tenant = { cluster: 'root', namespace: 'team-a' };
const cm = (name: string, v: string) => ({ op: 'write' as const, resource: 'configmaps', object: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'team-a' }, data: { v } } });

test('commits to one repository land in the order handed over; repositories spread over the workers', { timeout: 120_000 }, async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'git-pool-'));
  const pool = new GitWorkerPool({ dataDir }, 2);
  t.after(async () => {
    await pool.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  assert.equal(pool.size, 2);
  // Six repositories, each given 12 commits at once (none awaited before the next is handed over).
  const repos = Array.from({ length: 6 }, (_, i) => ({ url: `local:r${i}`, tenant }));
  const workers = new Set(repos.map((r) => pool.workerFor(r)));
  assert.equal(workers.size, 2, 'six repositories all routed to one of two workers');
  const PER_REPO = 12;
  const results = await withDeadline(
    Promise.all(repos.flatMap((repository, i) => Array.from({ length: PER_REPO }, (_, k) => pool.commit({ repository, branch: 'main', folder: 'f', changes: [cm(`cm-${k}`, `r${i}-${k}`)], author: me, message: `r${i}-${k}` })))),
    '72 commits over six repositories',
    90_000,
  );
  assert.deepEqual(new Set(results.map((r) => r.outcome)), new Set(['Committed']));
  for (const [i] of repos.entries()) {
    const dir = join(dataDir, 'git', '_clusters', 'root', 'team-a', `r${i}.git`);
    // Linear history, newest first, in the order handed over.
    assert.deepEqual(git(dir, 'log', '--format=%s', 'main').trim().split('\n'), Array.from({ length: PER_REPO }, (_, k) => `r${i}-${PER_REPO - 1 - k}`));
    assert.equal(git(dir, 'rev-list', '--merges', '--count', 'main').trim(), '0');
    assert.equal(git(dir, 'show', 'main:f/team-a/configmaps/cm-11.yaml'), `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-11\n  namespace: team-a\ndata:\n  v: r${i}-11\n`);
  }
  // A listing goes to the repository's own worker and sees its commits.
  assert.equal((await pool.listFolder({ repository: repos[3]!, branch: 'main', folder: 'f' })).length, PER_REPO);
});

test('routing: local: names per tenant, remote URLs whatever the credentials; a repository keeps its worker', () => {
  assert.equal(routingKey({ url: 'local:a', tenant: { cluster: 'c', namespace: 'n' } }), 'local:a\0c\0n');
  assert.notEqual(routingKey({ url: 'local:a', tenant: { cluster: 'c', namespace: 'n' } }), routingKey({ url: 'local:a', tenant: { cluster: 'c', namespace: 'm' } }));
  assert.equal(routingKey({ url: 'https://git.example.com/o/r.git', credentials: { username: 'a', password: 'x' } }), 'https://git.example.com/o/r.git');
  const a = new GitWorkerPool({ dataDir: '/nonexistent' }, 3);
  const b = new GitWorkerPool({ dataDir: '/nonexistent' }, 3);
  // Workers start on first use only: these never start a thread.
  for (let i = 0; i < 20; i++) {
    const r = { url: `https://git.example.com/o/r${i}.git` };
    assert.equal(a.workerFor(r), a.workerFor({ ...r, credentials: { username: 'u', password: 'p' } }));
    assert.equal([0, 1, 2].find((k) => (a as unknown as { workers: unknown[] }).workers[k] === a.workerFor(r)), [0, 1, 2].find((k) => (b as unknown as { workers: unknown[] }).workers[k] === b.workerFor(r)));
  }
  // Tenants as the scale bench makes them (local:<ns> in namespace <ns>) spread evenly: with FNV-1a
  // all 1,000 of them went to one of two workers.
  const two = new GitWorkerPool({ dataDir: '/nonexistent' }, 2);
  const first = (two as unknown as { workers: unknown[] }).workers[0];
  const onFirst = Array.from({ length: 1000 }, (_, i) => `t${String(i).padStart(5, '0')}`).filter((ns) => two.workerFor({ url: `local:${ns}`, tenant: { cluster: '_', namespace: ns } }) === first).length;
  assert.ok(onFirst > 400 && onFirst < 600, `${onFirst} of 1,000 tenants on the first of two workers`);
  assert.throws(() => new GitWorkerPool({ dataDir: '/nonexistent' }, 0), /at least one worker, got 0/);
});

test('--git-workers: defaults to the CPUs available (at most 8); 1..64 accepted, anything else refused naming the flag', () => {
  const base = ['--authorization-mode=AlwaysAllow'];
  assert.equal(parseServeFlags(base).git.workers, Math.min(availableParallelism(), 8));
  assert.equal(parseServeFlags([...base, '--git-workers=3']).git.workers, 3);
  for (const bad of ['0', '65', 'two', '-1']) {
    assert.throws(() => parseServeFlags([...base, `--git-workers=${bad}`]), (e: unknown) => e instanceof FlagError && e.message === `--git-workers: must be an integer between 1 and 64, got ${JSON.stringify(bad)}`);
  }
});
