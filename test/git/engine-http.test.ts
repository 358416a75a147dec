// The engine against a real Git server (git http-backend), checked with the git CLI.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GitEngine, GitEngineError } from '../../src/git/index.js';
import { startGitServer, type GitServer } from '../support/git-server.js';
import { cloneAndCheck, configMap, git } from './git-cli.js';

const alice = { name: 'Alice Doe', email: 'alice@example.com' };
const COMMITTER = 'reverser-apiserver <reverser-apiserver@localhost>';

async function setup(t: import('node:test').TestContext, engineOpts: Partial<ConstructorParameters<typeof GitEngine>[0]> = {}) {
  const server = await startGitServer();
  const dataDir = mkdtempSync(join(tmpdir(), 'git-engine-'));
  t.after(async () => {
    await server.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const engine = new GitEngine({ allowInsecureCredentials: true,  dataDir, retryTimeoutMs: 5_000, ...engineOpts });
  const creds = { username: server.username, password: server.password };
  return { server, dataDir, engine, creds };
}

function repoOf(server: GitServer, name: string, creds: { username: string; password: string }) {
  return { url: server.url(name), credentials: creds };
}

test('first commit into an empty repository', async (t) => {
  const { server, engine, creds } = await setup(t);
  server.createBareRepo('empty');
  const r = await engine.commit({
    repository: repoOf(server, 'empty', creds),
    branch: 'main',
    folder: 'clusters/a',
    changes: [
      { op: 'write', object: configMap('app', 'team-a', { k: 'v' }), resource: 'configmaps' },
      { op: 'write', object: { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'viewer' }, rules: [] }, resource: 'clusterroles' },
    ],
    author: alice,
    message: 'First snapshot',
  });
  assert.equal(r.outcome, 'Committed');
  const c = await cloneAndCheck(server.authURL('empty'), 'main');
  t.after(c.cleanup);
  assert.deepEqual(c.files, ['clusters/a/_cluster/rbac.authorization.k8s.io/clusterroles/viewer.yaml', 'clusters/a/team-a/configmaps/app.yaml']);
  assert.deepEqual(c.log, [`Alice Doe <alice@example.com>|${COMMITTER}|First snapshot`]);
  assert.equal(await c.read('clusters/a/team-a/configmaps/app.yaml'), 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: team-a\ndata:\n  k: v\n');
  assert.equal((await git(c.dir, 'rev-parse', 'HEAD')).trim(), r.outcome === 'Committed' ? r.sha : '');

  // The same change again is not a commit.
  const again = await engine.commit({
    repository: repoOf(server, 'empty', creds),
    branch: 'main',
    folder: 'clusters/a',
    changes: [{ op: 'write', object: configMap('app', 'team-a', { k: 'v' }), resource: 'configmaps' }],
    author: alice,
    message: 'noop',
  });
  assert.equal(again.outcome, 'AlreadyPresent');
});

test('a missing branch is created from the default branch', async (t) => {
  const { server, engine, creds } = await setup(t);
  server.createBareRepo('r');
  const base = await engine.commit({
    repository: repoOf(server, 'r', creds), branch: 'main', folder: '.',
    changes: [{ op: 'write', object: configMap('one', 'ns', { a: '1' }) }], author: alice, message: 'on main',
  });
  assert.equal(base.outcome, 'Committed');
  const r = await engine.commit({
    repository: repoOf(server, 'r', creds), branch: 'feature/x', folder: '.',
    changes: [{ op: 'write', object: configMap('two', 'ns', { b: '2' }) }], author: alice, message: 'on feature',
    committer: { name: 'Bot', email: 'bot@example.com' },
  });
  assert.equal(r.outcome, 'Committed');
  const c = await cloneAndCheck(server.authURL('r'), 'feature/x');
  t.after(c.cleanup);
  assert.deepEqual(c.files, ['ns/configmaps/one.yaml', 'ns/configmaps/two.yaml']);
  assert.deepEqual(c.log, [`Alice Doe <alice@example.com>|Bot <bot@example.com>|on feature`, `Alice Doe <alice@example.com>|${COMMITTER}|on main`]);
});

test('edit in place keeps comments, key order and the other document', async (t) => {
  const { server, engine, creds } = await setup(t);
  const bare = server.createBareRepo('edit');
  // A human-written file: comments, an unusual key order, two documents.
  const work = mkdtempSync(join(tmpdir(), 'git-work-'));
  t.after(() => rmSync(work, { recursive: true, force: true }));
  await git(work, 'clone', '--quiet', bare, 'w');
  const w = join(work, 'w');
  const original = [
    '# Settings for the app, owned by team A',
    'apiVersion: v1',
    'kind: ConfigMap',
    'metadata:',
    '  namespace: team-a # namespace first, on purpose',
    '  name: app',
    'data:',
    '  # replicas are tuned by hand',
    '  replicas: "3"',
    '  mode: fast',
    '---',
    '# the second document',
    'apiVersion: v1',
    'kind: ConfigMap',
    'metadata:',
    '  name: other',
    '  namespace: team-a',
    'data:',
    '  x: "1"',
    '',
  ].join('\n');
  writeFileSync(join(w, 'bundle.yaml'), original);
  await git(w, 'add', '.');
  await git(w, '-c', 'user.name=Human', '-c', 'user.email=human@example.com', 'commit', '--quiet', '-m', 'hand-written');
  await git(w, 'push', '--quiet', 'origin', 'HEAD:main');

  const r = await engine.commit({
    repository: repoOf(server, 'edit', creds), branch: 'main', folder: '.',
    changes: [{ op: 'write', object: configMap('app', 'team-a', { replicas: '5', mode: 'fast' }) }],
    author: alice, message: 'Raise replicas',
  });
  assert.equal(r.outcome, 'Committed');
  const c = await cloneAndCheck(server.authURL('edit'), 'main');
  t.after(c.cleanup);
  assert.deepEqual(c.files, ['bundle.yaml']);
  const diff = (await git(c.dir, 'diff', '--unified=0', 'HEAD~1', 'HEAD')).split('\n').filter((l) => /^[-+][^-+]/.test(l));
  assert.deepEqual(diff, ['-  replicas: "3"', '+  replicas: "5"']);

  // Deleting one document keeps the other; deleting the last one removes the file.
  await engine.commit({
    repository: repoOf(server, 'edit', creds), branch: 'main', folder: '.',
    changes: [{ op: 'delete', ref: { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'team-a', name: 'app' } }],
    author: alice, message: 'Delete app',
  });
  const c2 = await cloneAndCheck(server.authURL('edit'), 'main');
  t.after(c2.cleanup);
  assert.match(await c2.read('bundle.yaml'), /name: other/);
  assert.doesNotMatch(await c2.read('bundle.yaml'), /name: app/);
  await engine.commit({
    repository: repoOf(server, 'edit', creds), branch: 'main', folder: '.',
    changes: [{ op: 'delete', ref: { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'team-a', name: 'other' } }],
    author: alice, message: 'Delete other',
  });
  const c3 = await cloneAndCheck(server.authURL('edit'), 'main');
  t.after(c3.cleanup);
  assert.deepEqual(c3.files, []);
  assert.deepEqual(c3.log.map((l) => l.split('|')[2]), ['Delete other', 'Delete app', 'Raise replicas', 'hand-written']);
});

test('a foreign push between two of our commits is preserved below ours', async (t) => {
  const { server, engine, creds } = await setup(t);
  server.createBareRepo('race');
  const repository = repoOf(server, 'race', creds);
  await engine.commit({ repository, branch: 'main', folder: 'f', changes: [{ op: 'write', object: configMap('a', 'ns', { v: '1' }) }], author: alice, message: 'ours 1' });
  const work = mkdtempSync(join(tmpdir(), 'git-work-'));
  t.after(() => rmSync(work, { recursive: true, force: true }));
  await git(work, 'clone', '--quiet', server.authURL('race'), 'w');
  const w = join(work, 'w');
  writeFileSync(join(w, 'README.md'), 'hello\n');
  await git(w, 'add', '.');
  await git(w, '-c', 'user.name=Human', '-c', 'user.email=human@example.com', 'commit', '--quiet', '-m', 'foreign');
  await git(w, 'push', '--quiet', 'origin', 'HEAD:main');
  const r = await engine.commit({ repository, branch: 'main', folder: 'f', changes: [{ op: 'write', object: configMap('a', 'ns', { v: '2' }) }], author: alice, message: 'ours 2' });
  assert.equal(r.outcome, 'Committed');
  const c = await cloneAndCheck(server.authURL('race'), 'main');
  t.after(c.cleanup);
  assert.deepEqual(c.files, ['README.md', 'f/ns/configmaps/a.yaml']);
  assert.deepEqual(c.log.map((l) => l.split('|')[2]), ['ours 2', 'foreign', 'ours 1']);
  assert.equal(c.log[1], `Human <human@example.com>|Human <human@example.com>|foreign`);
});

test('a wrong password is a clear AuthFailed error without a retry storm', async (t) => {
  const { server, engine } = await setup(t);
  server.createBareRepo('locked');
  const before = server.requests.length;
  await assert.rejects(
    engine.commit({
      repository: { url: server.url('locked'), credentials: { username: server.username, password: 'wrong' } },
      branch: 'main', folder: '.', changes: [{ op: 'write', object: configMap('a', 'ns', { v: '1' }) }], author: alice, message: 'm',
    }),
    (e: unknown) => e instanceof GitEngineError && e.reason === 'AuthFailed' && /authentication .* failed \(HTTP 401\)/.test(e.message),
  );
  assert.equal(server.requests.length - before, 1);
  assert.equal((await git(join(server.root, 'locked.git'), 'for-each-ref')).trim(), '', 'nothing pushed');
});

test('server down: bounded retries, a clear Unreachable error, and the write lands once it is back', async (t) => {
  const { server, engine, creds } = await setup(t, { retryTimeoutMs: 1_500, retryInitialDelayMs: 100 });
  server.createBareRepo('down');
  const repository = repoOf(server, 'down', creds);
  await engine.commit({ repository, branch: 'main', folder: '.', changes: [{ op: 'write', object: configMap('a', 'ns', { v: '1' }) }], author: alice, message: 'before' });
  await server.stop();
  const pending = { repository, branch: 'main', folder: '.', changes: [{ op: 'write' as const, object: configMap('a', 'ns', { v: '2' }) }], author: alice, message: 'while down' };
  const started = Date.now();
  await assert.rejects(engine.commit(pending), (e: unknown) => {
    assert.ok(e instanceof GitEngineError);
    assert.equal(e.reason, 'Unreachable');
    assert.match(e.message, /unreachable \(ECONNREFUSED\).*gave up after \d+ attempts/);
    return true;
  });
  const took = Date.now() - started;
  assert.ok(took >= 1_500 && took < 5_000, `gave up after ${took} ms`); // the budget, plus one last attempt
  await server.start();
  const r = await engine.commit(pending);
  assert.equal(r.outcome, 'Committed');
  const c = await cloneAndCheck(server.authURL('down'), 'main');
  t.after(c.cleanup);
  assert.match(await c.read('ns/configmaps/a.yaml'), /v: "2"/);
  assert.deepEqual(c.log.map((l) => l.split('|')[2]), ['while down', 'before']);
});

test('an SSH URL is refused at validation', async (t) => {
  const { engine } = await setup(t);
  await assert.rejects(
    engine.commit({ repository: { url: 'git@github.com:org/repo.git' }, branch: 'main', folder: '.', changes: [], author: alice, message: 'm' }),
    (e: unknown) => e instanceof GitEngineError && e.reason === 'Invalid' && /SSH .* not supported/.test(e.message),
  );
});
