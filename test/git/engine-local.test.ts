// local: and file:// repositories, and the packfile path for large batches, checked with git.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GitEngine, GitEngineError } from '../../src/git/index.js';
import { cloneAndCheck, configMap, git } from './git-cli.js';

const alice = { name: 'Alice Doe', email: 'alice@example.com', time: new Date('2026-01-02T03:04:05Z'), timezoneOffset: 60 };

function dataDir(t: import('node:test').TestContext): string {
  const d = mkdtempSync(join(tmpdir(), 'git-engine-'));
  t.after(() => rmSync(d, { recursive: true, force: true }));
  return d;
}

test('local:<name> is created on first use; a big batch is written as one valid pack', async (t) => {
  const dir = dataDir(t);
  const engine = new GitEngine({ dataDir: dir, committerName: 'Robot', committerEmail: 'robot@example.com' });
  const changes = Array.from({ length: 300 }, (_, i) => ({ op: 'write' as const, object: configMap(`cm-${i}`, `ns-${i % 3}`, { i: String(i) }), resource: 'configmaps' }));
  const r = await engine.commit({ repository: { url: 'local:tenants' }, branch: 'main', folder: 'env/prod', changes, author: alice, message: 'Snapshot\n\nwith a body' });
  assert.equal(r.outcome, 'Committed');
  const gitdir = join(dir, 'git', 'tenants.git');
  assert.ok(existsSync(join(gitdir, 'HEAD')));
  const packs = readdirSync(join(gitdir, 'objects', 'pack'));
  assert.equal(packs.filter((p) => p.endsWith('.pack')).length, 1);
  await git(gitdir, 'verify-pack', join(gitdir, 'objects', 'pack', packs.find((p) => p.endsWith('.idx'))!));
  const c = await cloneAndCheck(`file://${gitdir}`, 'main');
  t.after(c.cleanup);
  assert.equal(c.files.length, 300);
  assert.equal(c.files[0], 'env/prod/ns-0/configmaps/cm-0.yaml');
  assert.deepEqual(c.log, ['Alice Doe <alice@example.com>|Robot <robot@example.com>|Snapshot']);
  assert.equal((await git(c.dir, 'log', '-1', '--format=%ad|%B', '--date=iso')).trim(), '2026-01-02 04:04:05 +0100|Snapshot\n\nwith a body');

  // Then a one-object change: loose objects, the folder index finds the file.
  const r2 = await engine.commit({ repository: { url: 'local:tenants' }, branch: 'main', folder: 'env/prod', changes: [{ op: 'write', object: configMap('cm-7', 'ns-1', { i: 'changed' }) }], author: alice, message: 'one' });
  assert.equal(r2.outcome === 'Committed' && r2.objectsWritten, 7); // blob, 5 trees (root, env, prod, ns-1, configmaps), commit
  assert.equal((await git(gitdir, 'diff', '--stat', 'main~1', 'main')).trim().split('\n').length, 2);
  await git(gitdir, 'fsck', '--strict', '--no-dangling');
});

test('file:// needs an existing repository; a missing branch in an empty repository is an orphan', async (t) => {
  const dir = dataDir(t);
  const engine = new GitEngine({ dataDir: dir });
  await assert.rejects(
    engine.commit({ repository: { url: `file://${dir}/missing.git` }, branch: 'main', folder: '.', changes: [{ op: 'write', object: configMap('a', 'n', {}) }], author: alice, message: 'm' }),
    (e: unknown) => e instanceof GitEngineError && e.reason === 'NotFound',
  );
  const bare = join(dir, 'r.git');
  await git(dir, 'init', '--quiet', '--bare', '--initial-branch=main', bare);
  const r = await engine.commit({ repository: { url: `file://${bare}` }, branch: 'release', folder: '.', changes: [{ op: 'write', object: configMap('a', 'n', { x: 'y' }) }], author: alice, message: 'orphan' });
  assert.equal(r.outcome, 'Committed');
  assert.equal((await git(bare, 'rev-list', '--count', 'release')).trim(), '1');
  assert.equal((await git(bare, 'for-each-ref', '--format=%(refname)')).trim(), 'refs/heads/release');
});

test('invalid input is refused before anything is written', async (t) => {
  const engine = new GitEngine({ dataDir: dataDir(t) });
  const base = { repository: { url: 'local:x' }, branch: 'main', folder: '.', changes: [], author: alice, message: 'm' };
  for (const bad of [{ branch: 'a..b' }, { folder: '../up' }, { repository: { url: 'ssh://h/r.git' } }]) {
    await assert.rejects(engine.commit({ ...base, ...bad }), (e: unknown) => e instanceof GitEngineError && e.reason === 'Invalid');
  }
});

test('a branch that stays locked gives up after the retry budget with Conflict', async (t) => {
  const dir = dataDir(t);
  const engine = new GitEngine({ dataDir: dir, retryTimeoutMs: 600, retryInitialDelayMs: 50 });
  const commit = (v: string) =>
    engine.commit({ repository: { url: 'local:held' }, branch: 'main', folder: '.', changes: [{ op: 'write', object: configMap('a', 'n', { v }) }], author: alice, message: v });
  assert.equal((await commit('1')).outcome, 'Committed');
  // Another writer (a git CLI, say) holds the ref lock and never lets go.
  writeFileSync(join(dir, 'git', 'held.git', 'refs', 'heads', 'main.lock'), '');
  const started = Date.now();
  await assert.rejects(commit('2'), (e: unknown) => {
    assert.ok(e instanceof GitEngineError);
    assert.equal(e.reason, 'Conflict');
    assert.match(e.message, /locked by another writer.*gave up after \d+ attempts/);
    return true;
  });
  assert.ok(Date.now() - started >= 600);
  rmSync(join(dir, 'git', 'held.git', 'refs', 'heads', 'main.lock'));
  assert.equal((await commit('2')).outcome, 'Committed');
});

test('an object a human moved to another file is edited where it now lives', async (t) => {
  const dir = dataDir(t);
  const engine = new GitEngine({ dataDir: dir });
  const commit = (v: string) =>
    engine.commit({ repository: { url: 'local:moved' }, branch: 'main', folder: 'f', changes: [{ op: 'write', object: configMap('a', 'n', { v }), resource: 'configmaps' }], author: alice, message: v });
  await commit('1');
  const work = mkdtempSync(join(tmpdir(), 'git-work-'));
  t.after(() => rmSync(work, { recursive: true, force: true }));
  const bare = join(dir, 'git', 'moved.git');
  await git(work, 'clone', '--quiet', bare, 'w');
  const w = join(work, 'w');
  await git(w, 'mv', 'f/n/configmaps/a.yaml', 'f/everything.yaml');
  await git(w, '-c', 'user.name=Human', '-c', 'user.email=h@example.com', 'commit', '--quiet', '-m', 'move');
  await git(w, 'push', '--quiet', 'origin', 'HEAD:main');
  assert.equal((await commit('2')).outcome, 'Committed');
  assert.equal((await git(bare, 'ls-tree', '-r', '--name-only', 'main')).trim(), 'f/everything.yaml');
  assert.match(await git(bare, 'show', 'main:f/everything.yaml'), /v: "2"/);
});

test('a new repository gets only the loose-object directories its objects need, made again after git gc removed them', { timeout: 30_000 }, async (t) => {
  const dir = dataDir(t);
  const engine = new GitEngine({ dataDir: dir });
  const one = (v: string) => engine.commit({ repository: { url: 'local:one' }, branch: 'main', folder: '.', changes: [{ op: 'write', object: configMap('cm', 'ns', { v }) }], author: alice, message: v });
  const r = await one('a');
  assert.equal(r.outcome === 'Committed' && r.objectsWritten, 5); // blob, 3 trees (root, ns, configmaps), commit
  const gitdir = join(dir, 'git', 'one.git');
  const fanout = () => readdirSync(join(gitdir, 'objects')).filter((d) => /^[0-9a-f]{2}$/.test(d)).sort();
  const oids = (await git(gitdir, 'rev-list', '--objects', 'main')).trim().split('\n').map((l) => l.slice(0, 40));
  assert.equal(oids.length, 5);
  assert.deepEqual(fanout(), [...new Set(oids.map((o) => o.slice(0, 2)))].sort());
  // gc packs the loose objects and removes the emptied directories: the next commit makes its own.
  await git(gitdir, 'gc', '--quiet', '--prune=now');
  assert.deepEqual(fanout(), []);
  assert.equal((await one('b')).outcome, 'Committed');
  await git(gitdir, 'fsck', '--strict', '--no-dangling');
  assert.equal((await git(gitdir, 'log', '--format=%s', 'main')).trim(), 'b\na');
});

test('a branch under a new prefix gets its ref directory when its first push finds it missing; later pushes reuse it', { timeout: 30_000 }, async (t) => {
  const dir = dataDir(t);
  const engine = new GitEngine({ dataDir: dir });
  const push = (branch: string, v: string) => engine.commit({ repository: { url: 'local:prefixed' }, branch, folder: '.', changes: [{ op: 'write', object: configMap('cm', 'ns', { v }) }], author: alice, message: v });
  assert.equal((await push('main', 'a')).outcome, 'Committed');
  assert.equal((await push('team/feature/x', 'b')).outcome, 'Committed');
  assert.equal((await push('team/feature/x', 'c')).outcome, 'Committed');
  const gitdir = join(dir, 'git', 'prefixed.git');
  // pack-refs --prune removes the loose refs and their emptied directories: the next push makes them again.
  await git(gitdir, 'pack-refs', '--all', '--prune');
  assert.equal((await push('team/feature/x', 'd')).outcome, 'Committed');
  assert.equal((await git(gitdir, 'for-each-ref', '--format=%(refname) %(subject)')).trim(), 'refs/heads/main a\nrefs/heads/team/feature/x d');
  assert.equal((await git(gitdir, 'log', '--format=%s', 'team/feature/x')).trim(), 'd\nc\nb\na');
  await git(gitdir, 'fsck', '--strict', '--no-dangling');
});
