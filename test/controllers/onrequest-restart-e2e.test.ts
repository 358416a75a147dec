// OnRequest keeps its meaning across crashes and takeovers (docs/git-engine.md, "Restarts and
// takeovers"). Real processes: a standalone sandbox as the source (it keeps running while the
// reverser is dead, so edits can happen while nobody watches), reverser-apiserver servers that are
// SIGKILLed and restarted (embedded store on one data dir; Redis with a second replica taking
// over), a `git http-backend` remote and the git CLI. alice's edits stay pending through every
// restart; the only commit before her CommitRequest is the resync of the one object edited while
// no replica watched; her CommitRequest then commits exactly her two edits with her message.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startRedis } from '../support/redis.js';
import { ns, startServer, type StartedServer } from '../support/server.js';
import { Kubectl, kubectlBinary } from '../support/kubectl.js';
import { until } from '../support/deadline.js';
import { gitServer } from './harness.js';
import { commits, git, ok, startSandbox, type Sandbox } from '../mirror/harness.js';
import type { GitServer } from '../support/git-server.js';

const IDLE = 1;
const BOT = 'Reverser Bot <bot@reverser.example>';
const ALICE = 'alice <alice@noreply.cluster.local>';
const MESSAGE = 'Alice: raise both limits (ticket #42)';
const SNAPSHOT = 'Snapshot of team-a/tenants: 3 objects';
const RESYNC = 'Resync: changes made while reverser-apiserver was not watching';
const DIR = 'live/team-a/configmaps';

function serverArgs(sandbox: Sandbox, extra: string[]): string[] {
  return ['--controllers=all', '--kubeconfig', sandbox.kubeconfig, '--authentication-tolerate-lookup-failure=true', '--log-level=info', '--committer-name=Reverser Bot', '--committer-email=bot@reverser.example', ...extra];
}

/** `author|committer|subject` of every commit on main, newest first. */
async function log(bare: string): Promise<string[]> {
  return (await git(bare, 'log', '--format=%an <%ae>|%cn <%ce>|%s', 'main')).split('\n').filter(Boolean);
}

async function pending(s: StartedServer): Promise<number | undefined> {
  return (await s.get(`${ns('team-a')}/tenants`)).body?.status?.pendingChanges;
}

async function sandboxWithMaps(t: TestContext): Promise<Sandbox> {
  const sandbox = await startSandbox();
  t.after(() => sandbox.destroy());
  await ok(sandbox.kubectl, ['create', 'namespace', 'team-a']);
  for (const n of ['one', 'two', 'three']) await ok(sandbox.kubectl, ['create', 'configmap', n, '-n', 'team-a', `--from-literal=key=${n}`]);
  return sandbox;
}

/** Git credentials live in the hosting cluster (here the standalone sandbox), next to the GitTarget's namespace. */
async function gitCreds(sandbox: Sandbox, remote: GitServer): Promise<void> {
  await ok(sandbox.kubectl, ['create', 'secret', 'generic', 'git-creds', '-n', 'team-a', `--from-literal=username=${remote.username}`, `--from-literal=password=${remote.password}`]);
}

/** The OnRequest GitTarget, its first snapshot, then alice's two edits pending (not committed). */
async function snapshotThenAliceEdits(s: StartedServer, sandbox: Sandbox, remote: GitServer, bare: string): Promise<void> {
  const created = await s.request('POST', ns('team-a'), {
    body: {
      apiVersion: 'configbutler.ai/v1alpha1',
      kind: 'GitTarget',
      metadata: { name: 'tenants' },
      spec: {
        repository: { url: remote.url('team-a'), secretRef: { name: 'git-creds' } },
        branch: 'main',
        path: 'live',
        commit: { mode: 'OnRequest', idleSeconds: IDLE, maxAgeSeconds: 600 },
        resources: [{ group: '', resource: 'configmaps', namespaces: ['team-a'] }],
      },
    },
  });
  assert.equal(created.status, 201, created.text);
  await until(async () => (await commits(bare)).length === 1, 'the first snapshot pushed', 40_000, 100);
  for (const n of ['one', 'two']) await ok(sandbox.kubectl, ['patch', 'configmap', n, '-n', 'team-a', '-p', `{"data":{"key":"${n}-by-alice"}}`]);
  await until(async () => (await pending(s)) === 2, "alice's two edits pending", 15_000, 100);
}

/** While no replica watches: an edit nobody will see as it happens. */
async function unseenEdit(sandbox: Sandbox): Promise<void> {
  await ok(sandbox.kubectl, ['patch', 'configmap', 'three', '-n', 'team-a', '-p', '{"data":{"key":"three-unseen"}}']);
}

/** The resync commit: the server's, with the resync subject, changing only the unseen edit. */
async function assertResync(bare: string): Promise<void> {
  await until(async () => (await commits(bare)).length === 2, 'the resync commit pushed', 40_000, 100);
  assert.deepEqual(await log(bare), [`${BOT}|${BOT}|${RESYNC}`, `${BOT}|${BOT}|${SNAPSHOT}`]);
  assert.equal(await git(bare, 'diff', '--name-status', 'main~1', 'main'), `M\t${DIR}/three.yaml\n`);
}

/** Nothing more is committed for well past idleSeconds: OnRequest waits for a request. */
async function assertStillPending(s: StartedServer, bare: string): Promise<void> {
  await until(async () => (await pending(s)) === 2, "alice's two edits still pending", 20_000, 100);
  await new Promise((r) => setTimeout(r, (IDLE + 3) * 1000));
  assert.deepEqual(await log(bare), [`${BOT}|${BOT}|${RESYNC}`, `${BOT}|${BOT}|${SNAPSHOT}`], 'no commit before the CommitRequest');
  assert.equal(await pending(s), 2);
}

/** alice's CommitRequest commits exactly her two edits, with her message, authored by her. */
async function aliceSaves(s: StartedServer, bare: string): Promise<void> {
  const kubectl = new Kubectl(kubectlBinary(), s.kubeconfig);
  try {
    await ok(kubectl, ['--as', 'alice', 'create', '-f', '-'], JSON.stringify({
      apiVersion: 'configbutler.ai/v1alpha1',
      kind: 'CommitRequest',
      metadata: { name: 'alice-save', namespace: 'team-a' },
      spec: { targetRef: { name: 'tenants' }, message: MESSAGE },
    }));
    const waited = await kubectl.run(['wait', '--for=condition=Ready', '-n', 'team-a', 'creq/alice-save', '--timeout=30s']);
    assert.equal(waited.stdout, 'commitrequest.configbutler.ai/alice-save condition met\n', waited.stderr);
    await until(async () => (await commits(bare)).length === 3, 'the requested commit pushed', 10_000, 50);
    assert.deepEqual(await log(bare), [`${ALICE}|${BOT}|${MESSAGE}`, `${BOT}|${BOT}|${RESYNC}`, `${BOT}|${BOT}|${SNAPSHOT}`]);
    assert.equal(await git(bare, 'diff', '--name-status', 'main~1', 'main'), `M\t${DIR}/one.yaml\nM\t${DIR}/two.yaml\n`);
    assert.equal(await git(bare, 'show', `main:${DIR}/one.yaml`), 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: one\n  namespace: team-a\ndata:\n  key: one-by-alice\n');
    assert.equal(await git(bare, 'show', `main:${DIR}/three.yaml`), 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: three\n  namespace: team-a\ndata:\n  key: three-unseen\n');
    const creq = JSON.parse(await ok(kubectl, ['get', 'creq', 'alice-save', '-n', 'team-a', '-o', 'json']));
    assert.equal(creq.status.sha, (await git(bare, 'rev-parse', 'main')).trim());
    await until(async () => (await pending(s)) === 0, 'nothing pending after the save', 10_000, 100);
  } finally {
    kubectl.cleanup();
  }
}

test('embedded store, OnRequest: two SIGKILLs and restarts keep alice\'s pending edits; only the unseen edit is a resync commit', { timeout: 180_000 }, async (t) => {
  const sandbox = await sandboxWithMaps(t);
  const remote = await gitServer(t, 'team-a');
  const bare = join(remote.root, 'team-a.git');
  const dataDir = mkdtempSync(join(tmpdir(), 'onrequest-restart-'));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  await gitCreds(sandbox, remote);
  const args = serverArgs(sandbox, []);

  const a = await startServer(args, { dataDir });
  t.after(() => a.stop());
  await snapshotThenAliceEdits(a, sandbox, remote, bare);
  await a.kill();
  await unseenEdit(sandbox);

  // Restart 1: the re-list finds alice's edits pending (they stay) and one object changed unseen.
  const b = await startServer(args, { dataDir });
  t.after(() => b.stop());
  await assertResync(bare);
  await assertStillPending(b, bare);
  await b.kill();

  // Restart 2: nothing changed unseen; the re-list adds nothing.
  const c = await startServer(args, { dataDir });
  t.after(() => c.stop());
  await until(() => c.stderr().includes('"msg":"snapshot queued","target":"team-a/tenants"'), 'the re-list submitted', 30_000, 100);
  await assertStillPending(c, bare);
  await aliceSaves(c, bare);
});

test('Redis, OnRequest: SIGKILL, restart, and a second replica taking over keep alice\'s pending edits until her CommitRequest', { timeout: 180_000 }, async (t) => {
  const redis = await startRedis();
  t.after(() => redis.stop());
  const sandbox = await sandboxWithMaps(t);
  const remote = await gitServer(t, 'team-a');
  const bare = join(remote.root, 'team-a.git');
  await gitCreds(sandbox, remote);
  const certDir = mkdtempSync(join(tmpdir(), 'onrequest-certs-'));
  t.after(() => rmSync(certDir, { recursive: true, force: true }));
  const args = serverArgs(sandbox, ['--storage=redis', `--redis-url=${redis.url}`, `--cert-dir=${certDir}`]);

  const a = await startServer(args);
  t.after(() => a.stop());
  await snapshotThenAliceEdits(a, sandbox, remote, bare);
  await a.kill();
  await unseenEdit(sandbox);

  // A restart (b) and a second replica (c): whichever takes the lease re-lists.
  const b = await startServer(args);
  t.after(() => b.stop());
  const c = await startServer(args);
  t.after(() => c.stop());
  await assertResync(bare);
  await assertStillPending(b, bare);

  // The replica holding the GitTarget is SIGKILLed; the other takes over and re-lists: nothing new.
  const holds = (s: StartedServer) => s.stderr().includes('"lease acquired","lease":"gittarget/_/team-a/tenants/');
  const holder = [b, c].find(holds);
  assert.ok(holder, 'one replica holds the lease');
  const other = holder === b ? c : b;
  const queued = () => other.stderr().split('"msg":"snapshot queued","target":"team-a/tenants"').length - 1;
  await holder.kill();
  await until(() => queued() >= 1 && holds(other), 'the other replica took over and re-listed', 40_000, 100);
  await assertStillPending(other, bare);
  await aliceSaves(other, bare);
});
