// The writer enforces the acceptance gate: the git engine refuses every folder the analyzer
// refuses, with the same reasons, and commits nothing into it; a foreign commit that fixes the
// folder lifts the refusal. Through the server: a GitTarget on a refused folder says why in
// RepositoryReady (FolderRefused), and two GitTargets on nested folders of one repository and
// branch are one too many (PathConflict), until the first is deleted.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { GitEngine, GitEngineError } from '../../src/git/index.js';
import { refusalMessage } from '../../src/git/engine.js';
import { scanFolder, scanRepository } from '../../src/public/analyzer.js';
import { FIXTURE, GIT_ENV, fixtureRepository } from './fixture.js';
import { commits, files, ok, startMirroringServer, startSandbox, type Sandbox } from '../mirror/harness.js';
import type { StartedServer } from '../support/server.js';
import type { Kubectl } from '../support/kubectl.js';
import { startGitServer } from '../support/git-server.js';

const run = promisify(execFile);
const alice = { name: 'Alice Doe', email: 'alice@example.com' };
const object = (name: string) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'team-g' }, data: { k: 'v' } });

test('the engine refuses exactly the folders the analyzer refuses, with the same findings, and commits nothing', { timeout: 120_000 }, async (t) => {
  const repo = await fixtureRepository();
  const dataDir = mkdtempSync(join(tmpdir(), 'writer-gate-'));
  t.after(() => {
    repo.cleanup();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const engine = new GitEngine({ dataDir });
  const url = `file://${repo.gitDir}`;
  const report = await scanRepository({ repository: repo.gitDir });
  let refused = 0;
  for (const verdict of report.folders) {
    const folder = verdict.path;
    const attempt = engine.commit({ repository: { url }, branch: 'main', folder, changes: [{ op: 'write', object: object(`probe-${folder.replace(/[^a-z]/g, '')}`) }], author: alice, message: `probe ${folder}` });
    if (verdict.acceptable) {
      // An acceptable folder takes the write (the next probe builds on it).
      assert.equal((await attempt).outcome, 'Committed', folder);
      continue;
    }
    refused++;
    await assert.rejects(attempt, (e: unknown) => {
      assert.ok(e instanceof GitEngineError, String(e));
      assert.equal(e.reason, 'FolderRefused');
      assert.equal(e.message, refusalMessage(folder === '.' ? '' : folder, verdict.findings));
      return true;
    });
  }
  assert.equal(refused, 12);
  // Only acceptable folders were written: the refused ones hold exactly what the fixture put there.
  const log = (await run('git', ['--git-dir', repo.gitDir, 'log', '--format=%s', 'main'], { env: GIT_ENV })).stdout.trim().split('\n');
  assert.equal(log[log.length - 1], 'fixture');
  assert.ok(log.slice(0, -1).every((s) => s.startsWith('probe tenants') || s.startsWith('probe misplaced/team-a')), log.join('\n'));
  for (const path of Object.keys(FIXTURE).filter((p) => p.startsWith('dup/') || p.startsWith('broken/'))) {
    assert.equal((await run('git', ['--git-dir', repo.gitDir, 'show', `main:${path}`], { env: GIT_ENV })).stdout, FIXTURE[path]);
  }
  assert.equal((await run('git', ['--git-dir', repo.gitDir, 'ls-tree', '-r', '--name-only', 'main', 'dup'], { env: GIT_ENV })).stdout, 'dup/one.yaml\ndup/two.yaml\n');

  // A foreign commit removes the duplicate: the same folder is accepted now.
  const work = mkdtempSync(join(tmpdir(), 'writer-gate-fix-'));
  t.after(() => rmSync(work, { recursive: true, force: true }));
  await run('git', ['clone', '--quiet', repo.gitDir, work], { env: GIT_ENV });
  await run('git', ['-C', work, 'rm', '--quiet', 'dup/two.yaml'], { env: GIT_ENV });
  await run('git', ['-C', work, '-c', 'user.name=Bob', '-c', 'user.email=bob@example.com', 'commit', '--quiet', '-m', 'one file per object'], { env: GIT_ENV });
  await run('git', ['-C', work, 'push', '--quiet', 'origin', 'main'], { env: GIT_ENV });
  assert.equal((await scanFolder({ repository: repo.gitDir, path: 'dup' })).folders[0].acceptable, true);
  const r = await engine.commit({ repository: { url }, branch: 'main', folder: 'dup', changes: [{ op: 'write', object: object('after-fix') }], author: alice, message: 'after the fix' });
  assert.equal(r.outcome, 'Committed');
  assert.equal((await run('git', ['--git-dir', repo.gitDir, 'log', '-2', '--format=%s', 'main'], { env: GIT_ENV })).stdout, 'after the fix\none file per object\n');
});

let sandbox: Sandbox;
let server: StartedServer & { kubectl: Kubectl };

async function seed(gitDir: string): Promise<void> {
  const made = await fixtureRepository();
  try {
    await run('git', ['init', '--quiet', '--bare', '--initial-branch=main', gitDir], { env: GIT_ENV });
    await run('git', ['--git-dir', made.gitDir, 'push', '--quiet', gitDir, 'main'], { env: GIT_ENV });
  } finally {
    made.cleanup();
  }
}

function gitTarget(name: string, repo: string, path: string, namespace = 'default'): string {
  const url = repo.includes('://') ? repo : `local:${repo}`;
  return JSON.stringify({
    apiVersion: 'configbutler.ai/v1alpha1',
    kind: 'GitTarget',
    metadata: { name, namespace },
    spec: {
      repository: { url },
      branch: 'main',
      path,
      commit: { idleSeconds: 1 },
      resources: [{ group: '', resource: 'configmaps', namespaces: ['team-g'] }],
    },
  });
}

const condition = async (k: Kubectl, name: string, type: string) =>
  JSON.parse(await ok(k, ['get', 'gittarget', name, '-o', `jsonpath={.status.conditions[?(@.type=="${type}")]}`])) as { status: string; reason: string; message: string };

before(async () => {
  sandbox = await startSandbox();
  server = await startMirroringServer(sandbox);
  await ok(sandbox.kubectl, ['create', 'namespace', 'team-g']);
  await ok(sandbox.kubectl, ['create', 'configmap', 'settings', '-n', 'team-g', '--from-literal=key=value']);
});
after(async () => {
  await server?.stop();
  await sandbox?.destroy();
});

test('a GitTarget on a refused folder: RepositoryReady=False/FolderRefused with the analyzer\'s reasons; nothing committed', { timeout: 90_000 }, async () => {
  const repo = join(server.dataDir, 'git', 'default', 'gated.git');
  await seed(repo);
  await ok(server.kubectl, ['apply', '-f', '-'], gitTarget('gated', 'gated', 'dup'));
  await ok(server.kubectl, ['wait', '--for=jsonpath={.status.conditions[?(@.type=="RepositoryReady")].reason}=FolderRefused', 'gittarget/gated', '--timeout=60s']);
  const c = await condition(server.kubectl, 'gated', 'RepositoryReady');
  assert.equal(c.status, 'False');
  assert.equal(
    c.message,
    'folder dup fails the acceptance gate, nothing was committed: DuplicateIdentity dup/two.yaml: holds ConfigMap team-a/shared, also in dup/one.yaml: one object, one file',
  );
  assert.equal((await condition(server.kubectl, 'gated', 'Ready')).reason, 'FolderRefused');
  assert.deepEqual(await commits(repo), ['fixture']);
});

test('one folder, one GitTarget: the later claim on a nested folder is refused (PathConflict) until the first is deleted', { timeout: 120_000 }, async () => {
  const repo = join(server.dataDir, 'git', 'default', 'shared.git');
  await seed(repo);
  await ok(server.kubectl, ['apply', '-f', '-'], gitTarget('outer', 'shared', 'tenants'));
  await ok(server.kubectl, ['wait', '--for=condition=Ready', 'gittarget/outer', '--timeout=60s']);
  await ok(server.kubectl, ['apply', '-f', '-'], gitTarget('inner', 'shared', 'tenants/a/'));
  await ok(server.kubectl, ['wait', '--for=jsonpath={.status.conditions[?(@.type=="Validated")].reason}=PathConflict', 'gittarget/inner', '--timeout=60s']);
  const v = await condition(server.kubectl, 'inner', 'Validated');
  assert.equal(v.status, 'False');
  assert.equal(
    v.message,
    'folder tenants/a overlaps folder tenants of GitTarget outer (it has committed there) on the same repository and branch; delete one of them, or choose a folder that does not overlap',
  );
  assert.equal((await condition(server.kubectl, 'inner', 'Ready')).reason, 'PathConflict');
  // The winner keeps its folder; the loser wrote nothing.
  assert.deepEqual(await commits(repo), ['Snapshot of default/outer: 1 object', 'fixture']);
  assert.deepEqual(await files(repo, 'main', 'tenants/a'), ['tenants/a/README.md', 'tenants/a/team-a/configmaps/app.yaml', 'tenants/a/team-a/configmaps/db.yaml']);

  await ok(server.kubectl, ['delete', 'gittarget', 'outer', '--wait=true']);
  await ok(server.kubectl, ['wait', '--for=condition=Ready', 'gittarget/inner', '--timeout=60s']);
  assert.deepEqual(await commits(repo), ['Snapshot of default/inner: 1 object', 'Snapshot of default/outer: 1 object', 'fixture']);
  assert.ok((await files(repo, 'main', 'tenants/a')).includes('tenants/a/team-g/configmaps/settings.yaml'));
});

test('across namespaces the refused tenant learns that a claim exists, never whose', { timeout: 120_000 }, async (t) => {
  const remote = await startGitServer({ anonymous: true });
  t.after(() => remote.close());
  const made = await fixtureRepository();
  t.after(made.cleanup);
  remote.createBareRepo('platform');
  await run('git', ['--git-dir', made.gitDir, 'push', '--quiet', remote.authURL('platform'), 'main'], { env: GIT_ENV });
  await ok(sandbox.kubectl, ['create', 'namespace', 'team-other']); // namespace lifecycle: GitTargets live in existing namespaces
  // The same repository spelled differently (host case, ".git" and "/" suffixes) is the same repository.
  const url = remote.url('platform');
  await ok(server.kubectl, ['apply', '-f', '-'], gitTarget('platform-root', url, 'tenants/b'));
  await ok(server.kubectl, ['wait', '--for=condition=Ready', 'gittarget/platform-root', '--timeout=60s']);
  await ok(server.kubectl, ['apply', '-f', '-'], gitTarget('sneaky', url.replace(/\.git$/, '') + '/', 'tenants', 'team-other'));
  await ok(server.kubectl, ['wait', '-n', 'team-other', '--for=jsonpath={.status.conditions[?(@.type=="Validated")].reason}=PathConflict', 'gittarget/sneaky', '--timeout=60s']);
  const v = JSON.parse(await ok(server.kubectl, ['get', '-n', 'team-other', 'gittarget', 'sneaky', '-o', 'jsonpath={.status.conditions[?(@.type=="Validated")]}'])) as { message: string };
  assert.equal(
    v.message,
    'folder tenants overlaps folder tenants/b of a GitTarget in another namespace on the same repository and branch; delete one of them, or choose a folder that does not overlap',
  );
  assert.ok(!v.message.includes('platform-root') && !v.message.includes('default'));
});
