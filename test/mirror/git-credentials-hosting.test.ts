// Git credentials from the hosting cluster: outside the sandbox and kcp, a GitTarget's
// `spec.repository.secretRef` is read from its namespace on the hosting cluster (--kubeconfig).
// Here the hosting cluster is a `reverser-apiserver sandbox` process (the control-plane binaries of
// test/cluster/ were not built when this was written); the git server is a real `git http-backend`
// behind basic auth. A missing Secret is named with where it was looked for.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { parse } from 'yaml';
import { until } from '../support/deadline.js';
import { startGitServer, type GitServer } from '../support/git-server.js';
import { git, ok, startMirroringServer, startSandbox, type Sandbox } from './harness.js';
import type { StartedServer } from '../support/server.js';
import type { Kubectl } from '../support/kubectl.js';

let hosting: Sandbox;
let server: StartedServer & { kubectl: Kubectl };
let remote: GitServer;

const target = (name: string, secret: string) =>
  JSON.stringify({
    apiVersion: 'configbutler.ai/v1alpha1',
    kind: 'GitTarget',
    metadata: { name, namespace: 'team-a' },
    spec: {
      repository: { url: remote.url(name), secretRef: { name: secret } },
      branch: 'main',
      path: 'mirror',
      commit: { idleSeconds: 1 },
      resources: [{ group: '', version: 'v1', resource: 'configmaps', namespaces: ['team-a'] }],
    },
  });

before(async () => {
  remote = await startGitServer();
  for (const r of ['with-creds', 'without']) remote.createBareRepo(r);
  hosting = await startSandbox();
  server = await startMirroringServer(hosting);
  await ok(hosting.kubectl, ['create', 'namespace', 'team-a']);
  await ok(hosting.kubectl, ['create', 'configmap', 'settings', '-n', 'team-a', '--from-literal=k=v']);
  await ok(hosting.kubectl, ['create', 'secret', 'generic', 'git-creds', '-n', 'team-a', `--from-literal=username=${remote.username}`, `--from-literal=password=${remote.password}`]);
});

after(async () => {
  await server?.stop();
  await hosting?.destroy();
  await remote?.close();
});

test('repository.secretRef is read from the hosting cluster; a missing one says where it was looked for', { timeout: 120_000 }, async () => {
  await ok(server.kubectl, ['apply', '-f', '-'], target('with-creds', 'git-creds'));
  await ok(server.kubectl, ['wait', '--for=condition=Ready', 'gittarget/with-creds', '-n', 'team-a', '--timeout=60s']);
  const bare = join(remote.root, 'with-creds.git');
  assert.equal(await git(bare, 'log', '--format=%s', 'main'), 'Snapshot of team-a/with-creds: 1 object\n');
  assert.equal(await git(bare, 'show', 'main:mirror/team-a/configmaps/settings.yaml'), 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: team-a\ndata:\n  k: v\n');

  await ok(server.kubectl, ['apply', '-f', '-'], target('without', 'nope'));
  const repoReady = async () => {
    const obj = parse(await ok(server.kubectl, ['get', 'gittarget', 'without', '-n', 'team-a', '-o', 'yaml']));
    const c = (obj.status?.conditions ?? []).find((x: any) => x.type === 'RepositoryReady');
    return c ? { status: c.status, reason: c.reason, message: c.message } : undefined;
  };
  await until(async () => (await repoReady())?.status === 'False', 'RepositoryReady=False on without', 60_000, 250);
  assert.deepEqual(await repoReady(), { status: 'False', reason: 'AuthFailed', message: 'the credentials Secret "nope" was not found in namespace "team-a" of the hosting cluster' });
  assert.ok(!server.stderr().includes(remote.password), 'the password is never logged');
});
