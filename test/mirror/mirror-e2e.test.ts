// The mirror end to end: kubectl against a standalone sandbox, the
// main server mirroring it into a `local:` repository, and git reading what landed.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { until } from '../support/deadline.js';
import { commits, files, git, ok, startMirroringServer, startSandbox, type Sandbox } from './harness.js';
import type { StartedServer } from '../support/server.js';
import type { Kubectl } from '../support/kubectl.js';

let sandbox: Sandbox;
let server: StartedServer & { kubectl: Kubectl };

const IDLE = 2;

function gitTarget(name: string, repo: string, extra: Record<string, unknown> = {}, namespaces = ['team-a']): string {
  return JSON.stringify({
    apiVersion: 'configbutler.ai/v1alpha1',
    kind: 'GitTarget',
    metadata: { name, namespace: 'default' },
    spec: {
      repository: { url: `local:${repo}` },
      branch: 'main',
      path: 'clusters/dev',
      commit: { idleSeconds: IDLE },
      resources: [{ group: '', resource: 'configmaps', namespaces }],
      ...extra,
    },
  });
}

const cmYAML = (name: string, value: string) => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n  namespace: team-a\ndata:\n  key: ${value}\n`;

before(async () => {
  sandbox = await startSandbox();
  server = await startMirroringServer(sandbox);
  const k = sandbox.kubectl;
  await ok(k, ['create', 'namespace', 'team-a']);
  await ok(k, ['create', 'namespace', 'team-b']);
  for (const n of ['alpha', 'beta']) await ok(k, ['create', 'configmap', n, '-n', 'team-a', `--from-literal=key=${n}-1`]);
  await ok(k, ['create', 'configmap', 'other', '-n', 'team-b', '--from-literal=key=b']);
  // kubectl apply adds kubectl.kubernetes.io/last-applied-configuration: it must not reach Git.
  await ok(k, ['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'gamma', namespace: 'team-a', labels: { app: 'x' } }, data: { key: 'gamma-1' } }));
});

after(async () => {
  await server?.stop();
  await sandbox?.destroy();
});

test('snapshot, edit, delete, namespaces, cluster noise', { timeout: 120_000 }, async () => {
  const repo = join(server.dataDir, 'git', 'default', 'team-a.git');
  await ok(server.kubectl, ['apply', '-f', '-'], gitTarget('team-a', 'team-a'));
  await ok(server.kubectl, ['wait', '--for=condition=Ready', 'gittarget/team-a', '--timeout=30s']);
  assert.deepEqual(await commits(repo), ['Snapshot of default/team-a: 3 objects']);
  assert.deepEqual(await files(repo), ['clusters/dev/team-a/configmaps/alpha.yaml', 'clusters/dev/team-a/configmaps/beta.yaml', 'clusters/dev/team-a/configmaps/gamma.yaml']);
  assert.equal(await git(repo, 'show', 'main:clusters/dev/team-a/configmaps/alpha.yaml'), cmYAML('alpha', 'alpha-1'));
  assert.equal(await git(repo, 'show', 'main:clusters/dev/team-a/configmaps/beta.yaml'), cmYAML('beta', 'beta-1'));
  assert.equal(
    await git(repo, 'show', 'main:clusters/dev/team-a/configmaps/gamma.yaml'),
    'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: gamma\n  namespace: team-a\n  labels:\n    app: x\ndata:\n  key: gamma-1\n',
  );

  // kubectl edit of one ConfigMap: one commit changing only that file, within idleSeconds + 2 s.
  const editor = join(tmpdir(), `editor-${process.pid}.sh`);
  writeFileSync(editor, '#!/bin/sh\nsed -i "s/alpha-1/alpha-2/" "$1"\n', { mode: 0o755 });
  const t0 = Date.now();
  const r = await sandbox.kubectl.run(['edit', 'configmap', 'alpha', '-n', 'team-a'], { env: { KUBE_EDITOR: editor } });
  assert.equal(r.code, 0, r.stderr);
  await until(async () => (await commits(repo)).length === 2, 'the edit commit', (IDLE + 2) * 1000, 50);
  const took = Date.now() - t0;
  assert.ok(took <= (IDLE + 2) * 1000, `edit committed after ${took} ms`);
  assert.equal(await git(repo, 'diff', '--name-status', 'main~1', 'main'), 'M\tclusters/dev/team-a/configmaps/alpha.yaml\n');
  assert.equal(await git(repo, 'show', 'main:clusters/dev/team-a/configmaps/alpha.yaml'), cmYAML('alpha', 'alpha-2'));

  // A change in another namespace reaches nothing.
  await ok(sandbox.kubectl, ['label', 'configmap', 'other', '-n', 'team-b', 'x=y']);
  // Delete: the file goes.
  await ok(sandbox.kubectl, ['delete', 'configmap', 'beta', '-n', 'team-a']);
  await until(async () => (await commits(repo)).length === 3, 'the delete commit', (IDLE + 5) * 1000, 50);
  assert.equal(await git(repo, 'diff', '--name-status', 'main~1', 'main'), 'D\tclusters/dev/team-a/configmaps/beta.yaml\n');
  await new Promise((res) => setTimeout(res, (IDLE + 1) * 1000));
  assert.equal((await commits(repo)).length, 3, 'team-b never reaches the repository');
  assert.ok(!(await files(repo)).some((f) => f.includes('team-b') || f.includes('kube-root-ca.crt')));

  // includeClusterNoise: kube-root-ca.crt comes along.
  const noisy = join(server.dataDir, 'git', 'default', 'noisy.git');
  await ok(server.kubectl, ['apply', '-f', '-'], gitTarget('noisy', 'noisy', { includeClusterNoise: true }));
  await ok(server.kubectl, ['wait', '--for=condition=Ready', 'gittarget/noisy', '--timeout=30s']);
  assert.ok((await files(noisy)).includes('clusters/dev/team-a/configmaps/kube-root-ca.crt.yaml'), (await files(noisy)).join('\n'));

  const row = await ok(server.kubectl, ['get', 'gittarget', 'team-a', '-o', 'wide', '--no-headers']);
  assert.match(row, /^team-a\s+True\s+Ready\s+main\s+clusters\/dev\s+[0-9a-f]{7}\s+\S+\s+local:team-a\s+0\s+1\/1\s+the source is mirrored into the repository\n$/);
});

test('the sandbox stops while mirrored; edits during the gap all land, once', { timeout: 180_000 }, async () => {
  const repo = join(server.dataDir, 'git', 'default', 'gap.git');
  await ok(sandbox.kubectl, ['create', 'namespace', 'gap']);
  for (const n of ['one', 'two', 'three']) await ok(sandbox.kubectl, ['create', 'configmap', n, '-n', 'gap', `--from-literal=key=${n}`]);
  await ok(server.kubectl, ['apply', '-f', '-'], gitTarget('gap', 'gap', {}, ['gap']));
  await ok(server.kubectl, ['wait', '--for=condition=Ready', 'gittarget/gap', '--timeout=30s']);
  assert.equal((await commits(repo)).length, 1);

  await sandbox.stop();
  await ok(server.kubectl, ['wait', '--for=condition=SourceReachable=false', 'gittarget/gap', '--timeout=30s']);
  const reason = await ok(server.kubectl, ['get', 'gittarget', 'gap', '-o', 'jsonpath={.status.conditions[?(@.type=="SourceReachable")].reason}']);
  assert.equal(reason, 'Unreachable');
  await sandbox.start();
  await ok(sandbox.kubectl, ['create', 'configmap', 'four', '-n', 'gap', '--from-literal=key=four']);
  await ok(sandbox.kubectl, ['patch', 'configmap', 'one', '-n', 'gap', '-p', '{"data":{"key":"one-edited"}}']);
  await ok(sandbox.kubectl, ['delete', 'configmap', 'three', '-n', 'gap']);

  const expected = ['four', 'one', 'two'];
  await until(
    async () => JSON.stringify(await files(repo, 'main', 'clusters/dev/gap')) === JSON.stringify(expected.map((n) => `clusters/dev/gap/configmaps/${n}.yaml`)),
    'the folder to match the source',
    90_000,
    200,
  );
  await ok(server.kubectl, ['wait', '--for=condition=Ready', 'gittarget/gap', '--timeout=30s']);
  await new Promise((res) => setTimeout(res, (IDLE + 1) * 1000));
  const live = JSON.parse(await ok(sandbox.kubectl, ['get', 'configmaps', '-n', 'gap', '-o', 'json']));
  for (const cm of live.items.filter((c: any) => c.metadata.name !== 'kube-root-ca.crt')) {
    const text = await git(repo, 'show', `main:clusters/dev/gap/configmaps/${cm.metadata.name}.yaml`);
    assert.equal(text, `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${cm.metadata.name}\n  namespace: gap\ndata:\n  key: ${cm.data.key}\n`);
  }
  // Every change exactly once: each commit after the snapshot changes something, and together they
  // change exactly the three files of the gap.
  const shas = (await git(repo, 'log', '--format=%H', 'main')).split('\n').filter(Boolean).reverse().slice(1);
  const changed: string[] = [];
  for (const sha of shas) {
    const names = (await git(repo, 'diff-tree', '--no-commit-id', '--name-status', '-r', sha)).split('\n').filter(Boolean);
    assert.ok(names.length > 0, `commit ${sha} changes nothing`);
    changed.push(...names);
  }
  assert.deepEqual(changed.sort(), ['A\tclusters/dev/gap/configmaps/four.yaml', 'D\tclusters/dev/gap/configmaps/three.yaml', 'M\tclusters/dev/gap/configmaps/one.yaml']);
});

test('suspend stops the mirror; resuming catches up with one commit', { timeout: 120_000 }, async () => {
  const repo = join(server.dataDir, 'git', 'default', 'team-a.git');
  const before = (await commits(repo)).length;
  await ok(server.kubectl, ['patch', 'gittarget', 'team-a', '--type=merge', '-p', '{"spec":{"suspend":true}}']);
  const readyReason = () => ok(server.kubectl, ['get', 'gittarget', 'team-a', '-o', 'jsonpath={.status.conditions[?(@.type=="Ready")].reason}']);
  await until(async () => (await readyReason()) === 'Suspended', 'Ready=False/Suspended', 20_000, 200);
  await ok(sandbox.kubectl, ['patch', 'configmap', 'gamma', '-n', 'team-a', '-p', '{"data":{"key":"gamma-2"}}']);
  await new Promise((r) => setTimeout(r, (IDLE + 2) * 1000));
  assert.equal((await commits(repo)).length, before, 'nothing is committed while suspended');
  await ok(server.kubectl, ['patch', 'gittarget', 'team-a', '--type=merge', '-p', '{"spec":{"suspend":false}}']);
  await until(async () => (await commits(repo)).length === before + 1, 'the catch-up commit', 30_000, 100);
  await ok(server.kubectl, ['wait', '--for=condition=Ready', 'gittarget/team-a', '--timeout=30s']);
  assert.equal(await git(repo, 'diff', '--name-status', 'main~1', 'main'), 'M\tclusters/dev/team-a/configmaps/gamma.yaml\n');
});
