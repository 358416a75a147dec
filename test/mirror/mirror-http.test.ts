// The development loop with a real remote: one server with --sandbox (its own sandbox is the
// default source and holds the Git credentials Secret), mirroring into a `git http-backend`
// repository behind basic auth; the git CLI clones and fscks what was pushed.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, type StartedServer } from '../support/server.js';
import { Kubectl, kubectlBinary } from '../support/kubectl.js';
import { startGitServer, type GitServer } from '../support/git-server.js';
import { until } from '../support/deadline.js';
import { cloneAndCheck } from '../git/git-cli.js';
import { join } from 'node:path';
import { commits, ok } from './harness.js';

let server: StartedServer;
let kubectl: Kubectl;
let remote: GitServer;
const IDLE = 2;

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

const yaml = (name: string, value: string) => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n  namespace: team-a\ndata:\n  key: ${value}\n`;

test('the sandbox mirrored into a git http-backend remote: snapshot, edit, delete', { timeout: 120_000 }, async () => {
  await ok(kubectl, ['create', 'namespace', 'team-a']);
  for (const n of ['one', 'two', 'three']) await ok(kubectl, ['create', 'configmap', n, '-n', 'team-a', `--from-literal=key=${n}`]);
  await ok(kubectl, ['create', 'secret', 'generic', 'git-creds', '-n', 'default', `--from-literal=username=${remote.username}`, `--from-literal=password=${remote.password}`]);
  await ok(kubectl, ['apply', '-f', '-'], JSON.stringify({
    apiVersion: 'configbutler.ai/v1alpha1',
    kind: 'GitTarget',
    metadata: { name: 'team-a', namespace: 'default' },
    spec: {
      repository: { url: remote.url('team-a'), secretRef: { name: 'git-creds' } },
      branch: 'main',
      path: 'live',
      commit: { idleSeconds: IDLE },
      resources: [{ group: '', resource: 'configmaps', namespaces: ['team-a'] }],
    },
  }));
  await ok(kubectl, ['wait', '--for=condition=Ready', 'gittarget/team-a', '--timeout=40s']);
  let c = await cloneAndCheck(remote.authURL('team-a'), 'main');
  try {
    assert.deepEqual(c.files, ['live/team-a/configmaps/one.yaml', 'live/team-a/configmaps/three.yaml', 'live/team-a/configmaps/two.yaml']);
    assert.deepEqual(c.log, ['reverser-apiserver <reverser-apiserver@localhost>|reverser-apiserver <reverser-apiserver@localhost>|Snapshot of default/team-a: 3 objects']);
    assert.equal(await c.read('live/team-a/configmaps/two.yaml'), yaml('two', 'two'));
  } finally {
    c.cleanup();
  }

  const t0 = Date.now();
  await ok(kubectl, ['patch', 'configmap', 'two', '-n', 'team-a', '-p', '{"data":{"key":"two-edited"}}']);
  // The bare repository behind http-backend is read directly: a cheap probe, so the clock measures the push.
  const bare = join(remote.root, 'team-a.git');
  await until(async () => (await commits(bare)).length === 2, 'the edit pushed', (IDLE + 2) * 1000, 50);
  assert.ok(Date.now() - t0 <= (IDLE + 2) * 1000);
  await ok(kubectl, ['delete', 'configmap', 'one', '-n', 'team-a']);
  await until(async () => (await commits(bare)).length === 3, 'the delete pushed', (IDLE + 5) * 1000, 100);
  c = await cloneAndCheck(remote.authURL('team-a'), 'main');
  try {
    assert.deepEqual(c.files, ['live/team-a/configmaps/three.yaml', 'live/team-a/configmaps/two.yaml']);
    assert.equal(c.log.length, 3, c.log.join('\n'));
    assert.equal(await c.read('live/team-a/configmaps/two.yaml'), yaml('two', 'two-edited'));
  } finally {
    c.cleanup();
  }
});
