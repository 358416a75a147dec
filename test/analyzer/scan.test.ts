// The acceptance gate's verdicts on the fixture repository (test/analyzer/fixture.ts), from the
// library and from `reverser-apiserver analyze`: exact folders, reasons, files and messages, the
// same JSON from both faces, and the CLI's exit statuses.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { scanFiles, scanFolder, scanRepository, SCHEMA_VERSION, type ScanReport } from '../../src/public/analyzer.js';
import { FIXTURE, GIT_ENV, fixtureRepository } from './fixture.js';
import { startGitServer, type GitServer } from '../support/git-server.js';

const run = promisify(execFile);
const CLI = join(process.cwd(), 'dist/src/cli/main.js');

let repo: { gitDir: string; cleanup(): void };
let gitServer: GitServer;

before(async () => {
  repo = await fixtureRepository();
  gitServer = await startGitServer();
  const remote = gitServer.createBareRepo('platform');
  await run('git', ['--git-dir', repo.gitDir, 'push', '--quiet', remote, 'main'], { env: GIT_ENV });
});
after(async () => {
  repo?.cleanup();
  await gitServer?.close();
});

async function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [CLI, 'analyze', ...args], { env: { ...process.env, REVERSER_GIT_USERNAME: gitServer.username, REVERSER_GIT_PASSWORD: gitServer.password }, timeout: 60_000 });
    return { code: 0, stdout, stderr };
  } catch (e) {
    const x = e as { code: number; stdout: string; stderr: string };
    return { code: x.code, stdout: x.stdout, stderr: x.stderr };
  }
}

/** folder → "Reason file" lines, the shape the verdicts are checked in. */
function verdicts(r: ScanReport): Record<string, string[]> {
  return Object.fromEntries(r.folders.map((f) => [f.path, f.acceptable ? [] : f.findings.map((x) => `${x.reason} ${x.file ?? ''}`.trim())]));
}

const EXPECTED: Record<string, string[]> = {
  anchors: ['AnchorsOrAliases anchors/cm.yaml'],
  broken: ['InvalidYAML broken/cm.yaml'],
  charts: ['Templated charts/web/Chart.yaml', 'Templated charts/web/templates/cm.yaml'],
  'charts/web': ['Templated charts/web/Chart.yaml', 'Templated charts/web/templates/cm.yaml'],
  'charts/web/templates': ['Templated charts/web/templates/cm.yaml'],
  dup: ['DuplicateIdentity dup/two.yaml'],
  misplaced: ['NamespaceMismatch misplaced/team-a/configmaps/c.yaml'],
  'misplaced/team-a': [],
  'misplaced/team-a/configmaps': [],
  multi: ['MultiOwnerFile multi/all.yaml'],
  notobj: ['NotAnObject notobj/values.yaml'],
  scripts: ['NonYAMLContent scripts/deploy.sh'],
  templated: ['Templated templated/cm.yaml'],
  tenants: [],
  'tenants/a': [],
  'tenants/a/team-a': [],
  'tenants/a/team-a/configmaps': [],
  'tenants/b': [],
  'tenants/b/team-b': [],
  'tenants/b/team-b/apps': [],
  'tenants/b/team-b/apps/deployments': [],
  'tenants/b/team-b/configmaps': [],
};

test('scanRepository: a verdict per folder, one reason code per refusal, the root refused with all of them', { timeout: 60_000 }, async () => {
  const r = await scanRepository({ repository: repo.gitDir });
  assert.equal(r.schemaVersion, SCHEMA_VERSION);
  assert.equal(r.branch, 'main');
  assert.equal(r.branchExists, true);
  assert.match(r.commit ?? '', /^[0-9a-f]{40}$/);
  const v = verdicts(r);
  // The root holds every refusal but the misplaced file's: from the root it is not at a layout position.
  assert.deepEqual(v['.'], [
    'AnchorsOrAliases anchors/cm.yaml',
    'InvalidYAML broken/cm.yaml',
    'Templated charts/web/Chart.yaml',
    'Templated charts/web/templates/cm.yaml',
    'DuplicateIdentity dup/two.yaml',
    'MultiOwnerFile multi/all.yaml',
    'NotAnObject notobj/values.yaml',
    'NonYAMLContent scripts/deploy.sh',
    'Templated templated/cm.yaml',
  ]);
  delete v['.'];
  assert.deepEqual(v, EXPECTED);
  // Every refusal is structural: permanent.
  assert.ok(r.folders.every((f) => f.findings.every((x) => x.permanent)));
});

test('scanFolder: exact messages and the objects each file holds', { timeout: 60_000 }, async () => {
  const ok = await scanFolder({ repository: repo.gitDir, path: 'tenants/a' });
  assert.deepEqual(ok.folders, [{ path: 'tenants/a', acceptable: true, findings: [] }]);
  assert.deepEqual(ok.files, [
    { path: 'tenants/a/team-a/configmaps/app.yaml', objects: [{ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'team-a', name: 'app' }] },
    { path: 'tenants/a/team-a/configmaps/db.yaml', objects: [{ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'team-a', name: 'db' }] },
  ]);
  const dup = await scanFolder({ repository: repo.gitDir, path: 'dup/' });
  assert.deepEqual(dup.folders, [
    {
      path: 'dup',
      acceptable: false,
      findings: [{ reason: 'DuplicateIdentity', message: 'holds ConfigMap team-a/shared, also in dup/one.yaml: one object, one file', file: 'dup/two.yaml', permanent: true }],
    },
  ]);
  const multi = await scanFolder({ repository: repo.gitDir, path: 'multi' });
  assert.equal(
    multi.folders[0].findings[0].message,
    'mixes objects of several owners (ConfigMap in namespace team-a, ConfigMap in namespace team-b): keep one kind and namespace per file',
  );
  // A branch that does not exist yet is judged as the default branch holds it, and says so.
  const fresh = await scanFolder({ repository: repo.gitDir, path: 'tenants/a', branch: 'not-yet' });
  assert.equal(fresh.branchExists, false);
  assert.deepEqual(fresh.folders, ok.folders);
});

test('scanFiles: the same rules over files in memory; PathConflict is the one transient finding', { timeout: 60_000 }, async () => {
  const inMemory = await scanFiles(
    Object.entries(FIXTURE).map(([path, content]) => ({ path, content })),
    { scope: 'repository' },
  );
  const fromGit = await scanRepository({ repository: repo.gitDir });
  assert.deepEqual(inMemory.folders, fromGit.folders);
  assert.deepEqual(inMemory.files, fromGit.files);
  const claimed = await scanFiles([{ path: 'tenants/a/x.yaml', content: FIXTURE['tenants/a/team-a/configmaps/app.yaml'] }], {
    path: 'tenants/a',
    claims: [{ path: 'tenants', description: 'GitTarget platform in this namespace' }],
  });
  assert.deepEqual(claimed.folders[0].findings, [
    { reason: 'PathConflict', message: 'folder tenants/a overlaps folder tenants of GitTarget platform in this namespace on the same repository and branch', permanent: false },
  ]);
});

test('analyze CLI: the library\'s JSON, exit 0/1/2, over a bare repository, a URL and a checkout', { timeout: 120_000 }, async () => {
  const lib = await scanRepository({ repository: repo.gitDir });
  const json = await cli(repo.gitDir, '--format', 'json');
  assert.equal(json.code, 1, json.stderr);
  assert.deepEqual(JSON.parse(json.stdout), lib);

  const good = await cli(repo.gitDir, '--path', 'tenants', '--format=json');
  assert.equal(good.code, 0, good.stderr);
  assert.deepEqual(JSON.parse(good.stdout), await scanFolder({ repository: repo.gitDir, path: 'tenants' }));

  const table = await cli(repo.gitDir, '--path', 'dup');
  assert.equal(table.code, 1);
  assert.deepEqual(table.stdout.split('\n').map((l) => l.trimEnd()), [
    'FOLDER   VERDICT   REASON              FILE           MESSAGE',
    'dup      Refused   DuplicateIdentity   dup/two.yaml   holds ConfigMap team-a/shared, also in dup/one.yaml: one object, one file',
    '',
  ]);

  // Over HTTP (git http-backend, credentials from the environment): the same verdicts.
  const url = gitServer.url('platform');
  const remote = await cli(url, '--format', 'json');
  assert.equal(remote.code, 1, remote.stderr);
  const fromUrl = JSON.parse(remote.stdout) as ScanReport;
  assert.equal(fromUrl.repository, url);
  assert.deepEqual({ ...fromUrl, repository: lib.repository }, lib);

  // A checkout's working tree (--worktree) after a local fix is acceptable.
  const work = mkdtempSync(join(tmpdir(), 'analyze-checkout-'));
  try {
    await run('git', ['clone', '--quiet', repo.gitDir, work], { env: GIT_ENV });
    rmSync(join(work, 'dup', 'two.yaml'));
    assert.equal((await cli(work, '--path', 'dup')).code, 1, 'the branch still holds both files');
    assert.equal((await cli(work, '--path', 'dup', '--worktree')).code, 0);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }

  // Usage and access errors: 2, with the reason on stderr.
  const usage = await cli(repo.gitDir, '--format', 'xml');
  assert.equal(usage.code, 2);
  assert.match(usage.stderr, /^error: --format must be json or table, got "xml"/);
  const missing = await cli('http://127.0.0.1:1/none.git');
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /^error: .*unreachable/);
  const denied = await run(process.execPath, [CLI, 'analyze', url], { env: { ...process.env, REVERSER_GIT_USERNAME: '', REVERSER_GIT_PASSWORD: '' } }).then(
    () => 0,
    (e: { code: number; stderr: string }) => (assert.match(e.stderr, /authentication to .* failed \(HTTP 401\)/), e.code),
  );
  assert.equal(denied, 2);
});
