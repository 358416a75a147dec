// Local repositories per tenant, as an attacker: bob, in namespace team-b, names alice's
// `local:repo-a` with prune Always and path "." (the whole repository). Each namespace's `local:`
// names are its own (src/git/repository-url.ts localGitdir), so bob gets his own repo-a and alice's
// files and history are untouched. A tenant's file:// path (any directory the server can write) is
// refused unless the operator allows it.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { until } from '../support/deadline.js';
import { commits, files, git, ok, startMirroringServer, startSandbox, type Sandbox } from '../mirror/harness.js';
import type { StartedServer } from '../support/server.js';
import type { Kubectl } from '../support/kubectl.js';

let sandbox: Sandbox;
let server: StartedServer & { kubectl: Kubectl };

function gitTarget(name: string, namespace: string, url: string, path: string, prune: string): string {
  return JSON.stringify({
    apiVersion: 'configbutler.ai/v1alpha1',
    kind: 'GitTarget',
    metadata: { name, namespace },
    spec: { repository: { url }, branch: 'main', path, commit: { idleSeconds: 1 }, prune: { mode: prune }, resources: [{ group: '', resource: 'configmaps', namespaces: [namespace] }] },
  });
}

async function condition(name: string, namespace: string, type: string): Promise<{ status: string; reason: string; message: string }> {
  const obj = parse(await ok(server.kubectl, ['get', 'gittarget', name, '-n', namespace, '-o', 'yaml']));
  const c = (obj.status?.conditions ?? []).find((x: any) => x.type === type);
  return c ? { status: c.status, reason: c.reason, message: c.message } : { status: '', reason: '', message: '' };
}

before(async () => {
  sandbox = await startSandbox();
  server = await startMirroringServer(sandbox);
  for (const ns of ['team-a', 'team-b']) {
    await ok(sandbox.kubectl, ['create', 'namespace', ns]);
    await ok(sandbox.kubectl, ['create', 'configmap', `of-${ns}`, '-n', ns, `--from-literal=owner=${ns}`]);
  }
});

after(async () => {
  await server?.stop();
  await sandbox?.destroy();
});

test('bob names alice\'s local:repo-a with prune Always at "." and touches nothing of hers', { timeout: 150_000 }, async () => {
  await ok(server.kubectl, ['apply', '-f', '-'], gitTarget('alice', 'team-a', 'local:repo-a', 'alice', 'OnEvent'));
  await ok(server.kubectl, ['wait', '--for=condition=Ready', 'gittarget/alice', '-n', 'team-a', '--timeout=60s']);
  const alices = join(server.dataDir, 'git', 'team-a', 'repo-a.git');
  const before = await git(alices, 'rev-parse', 'main');

  await ok(server.kubectl, ['apply', '-f', '-'], gitTarget('bob', 'team-b', 'local:repo-a', '.', 'Always'));
  await ok(server.kubectl, ['wait', '--for=condition=Ready', 'gittarget/bob', '-n', 'team-b', '--timeout=60s']);
  const bobs = join(server.dataDir, 'git', 'team-b', 'repo-a.git');
  assert.deepEqual(await files(bobs), ['team-b/configmaps/of-team-b.yaml']);
  assert.deepEqual(await commits(bobs), ['Snapshot of team-b/bob: 1 object']);
  // A later edit in bob's namespace: a commit in his repository, none in alice's.
  await ok(sandbox.kubectl, ['create', 'configmap', 'more', '-n', 'team-b', '--from-literal=k=v']);
  await until(async () => (await commits(bobs)).length === 2, 'bob\'s second commit', 30_000, 250);

  assert.equal(await git(alices, 'rev-parse', 'main'), before, 'alice\'s branch did not move');
  assert.deepEqual(await files(alices), ['alice/team-a/configmaps/of-team-a.yaml']);
  assert.deepEqual(await commits(alices), ['Snapshot of team-a/alice: 1 object']);
  assert.equal(existsSync(join(server.dataDir, 'git', 'repo-a.git')), false, 'no shared, unpartitioned repository');
});

test('a tenant\'s file:// repository is refused unless the operator allows it', { timeout: 60_000 }, async () => {
  const path = join(server.dataDir, 'git', 'team-a', 'repo-a.git');
  await ok(server.kubectl, ['apply', '-f', '-'], gitTarget('by-path', 'team-b', `file://${path}`, '.', 'Always'));
  await until(async () => (await condition('by-path', 'team-b', 'Validated')).status === 'False', 'Validated=False on by-path', 30_000, 250);
  assert.deepEqual(await condition('by-path', 'team-b', 'Validated'), {
    status: 'False',
    reason: 'FileRepositoryNotAllowed',
    message:
      "file:// repositories are disabled on this server: a path on the server's disk is not partitioned per tenant (an operator may allow them with --allow-file-repositories); use local:<name>, kept per namespace, or an https:// URL",
  });
  assert.deepEqual(await commits(path), ['Snapshot of team-a/alice: 1 object']);
});
