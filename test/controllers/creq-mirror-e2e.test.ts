// A CommitRequest through the real mirror (no writes into the Store by
// hand): one server with --sandbox and every controller on mirrors its sandbox into a
// `git http-backend` remote. alice edits two ConfigMaps with kubectl under an OnRequest GitTarget,
// nothing is committed until her CommitRequest arrives; then exactly one commit holds both edits,
// authored by alice (derived identity), committed by the server identity, with her message
// verbatim, and the CommitRequest reaches Committed with the pushed sha.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { startServer, type StartedServer } from '../support/server.js';
import { Kubectl, kubectlBinary } from '../support/kubectl.js';
import { startGitServer, type GitServer } from '../support/git-server.js';
import { until } from '../support/deadline.js';
import { cloneAndCheck, git } from '../git/git-cli.js';
import { commits, ok } from '../mirror/harness.js';

let server: StartedServer;
let kubectl: Kubectl;
let remote: GitServer;

const SERVER = 'reverser-apiserver <reverser-apiserver@localhost>';
const ALICE = 'alice <alice@noreply.cluster.local>';
const MESSAGE = 'Alice: raise both limits (ticket #42)';
// Were OnRequest ignored, the idle timer would close the window after 1 s.
const IDLE = 1;

const cmYAML = (name: string, value: string) => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n  namespace: team-a\ndata:\n  key: ${value}\n`;

before(async () => {
  remote = await startGitServer();
  remote.createBareRepo('team-a');
  server = await startServer(['--sandbox', '--controllers=all']);
  kubectl = new Kubectl(kubectlBinary(), server.kubeconfig);
});

after(async () => {
  kubectl?.cleanup();
  await server?.stop();
  await remote?.close();
});

test('OnRequest through the mirror: alice edits two ConfigMaps, her CommitRequest makes exactly one commit', { timeout: 120_000 }, async () => {
  const asAlice = (args: string[], stdin?: string) => ok(kubectl, ['--as', 'alice', ...args], stdin);
  await ok(kubectl, ['create', 'namespace', 'team-a']);
  for (const n of ['one', 'two', 'three']) await ok(kubectl, ['create', 'configmap', n, '-n', 'team-a', `--from-literal=key=${n}`]);
  await ok(kubectl, ['create', 'secret', 'generic', 'git-creds', '-n', 'team-a', `--from-literal=username=${remote.username}`, `--from-literal=password=${remote.password}`]);
  await ok(kubectl, ['apply', '-f', '-'], JSON.stringify({
    apiVersion: 'configbutler.ai/v1alpha1',
    kind: 'GitTarget',
    metadata: { name: 'team-a', namespace: 'team-a' },
    spec: {
      repository: { url: remote.url('team-a'), secretRef: { name: 'git-creds' } },
      branch: 'main',
      path: 'live',
      commit: { mode: 'OnRequest', idleSeconds: IDLE, maxAgeSeconds: 600 },
      resources: [{ group: '', resource: 'configmaps', namespaces: ['team-a'] }],
    },
  }));
  await ok(kubectl, ['wait', '--for=condition=Ready', '-n', 'team-a', 'gittarget/team-a', '--timeout=40s']);
  await ok(kubectl, ['wait', '--for=condition=Synced', '-n', 'team-a', 'gittarget/team-a', '--timeout=20s']);
  const bare = join(remote.root, 'team-a.git');
  await until(async () => (await commits(bare)).length === 1, 'the snapshot commit pushed', 20_000, 100);
  assert.deepEqual(await commits(bare), ['Snapshot of team-a/team-a: 3 objects']);
  const snapshot = (await git(bare, 'rev-parse', 'main')).trim();

  // alice's two edits: pending in the window, not committed, for well past idleSeconds.
  await asAlice(['patch', 'configmap', 'one', '-n', 'team-a', '-p', '{"data":{"key":"one-edited"}}']);
  await asAlice(['patch', 'configmap', 'two', '-n', 'team-a', '-p', '{"data":{"key":"two-edited"}}']);
  await new Promise((r) => setTimeout(r, (IDLE + 3) * 1000));
  assert.deepEqual(await commits(bare), ['Snapshot of team-a/team-a: 3 objects'], 'OnRequest commits nothing before a CommitRequest');

  await asAlice(['create', '-f', '-'], JSON.stringify({
    apiVersion: 'configbutler.ai/v1alpha1',
    kind: 'CommitRequest',
    metadata: { name: 'alice-save', namespace: 'team-a' },
    spec: { targetRef: { name: 'team-a' }, message: MESSAGE },
  }));
  const waited = await kubectl.run(['wait', '--for=condition=Ready', '-n', 'team-a', 'creq/alice-save', '--timeout=30s']);
  assert.equal(waited.stdout, 'commitrequest.configbutler.ai/alice-save condition met\n', waited.stderr);
  await until(async () => (await commits(bare)).length === 2, 'the requested commit pushed', 10_000, 50);

  const c = await cloneAndCheck(remote.authURL('team-a'), 'main');
  try {
    assert.equal((await git(c.dir, 'log', '-1', '--format=%an <%ae>|%cn <%ce>|%s')).trim(), `${ALICE}|${SERVER}|${MESSAGE}`);
    assert.equal(c.log.length, 2, c.log.join('\n'));
    assert.equal((await git(c.dir, 'rev-parse', 'HEAD~1')).trim(), snapshot);
    assert.equal(await git(c.dir, 'diff', '--name-status', 'HEAD~1', 'HEAD'), 'M\tlive/team-a/configmaps/one.yaml\nM\tlive/team-a/configmaps/two.yaml\n');
    assert.equal(await c.read('live/team-a/configmaps/one.yaml'), cmYAML('one', 'one-edited'));
    assert.equal(await c.read('live/team-a/configmaps/two.yaml'), cmYAML('two', 'two-edited'));
    assert.equal(await c.read('live/team-a/configmaps/three.yaml'), cmYAML('three', 'three'));

    const creq = JSON.parse(await ok(kubectl, ['get', 'creq', 'alice-save', '-n', 'team-a', '-o', 'json']));
    const ready = creq.status.conditions.find((x: { type: string }) => x.type === 'Ready');
    assert.deepEqual([ready.status, ready.reason], ['True', 'Committed']);
    const pushed = (await git(c.dir, 'rev-parse', 'HEAD')).trim();
    assert.equal(creq.status.sha, pushed);
    assert.equal((await git(bare, 'rev-parse', 'main')).trim(), pushed);
  } finally {
    c.cleanup();
  }
});
