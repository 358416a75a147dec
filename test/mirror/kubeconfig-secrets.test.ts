// kubeconfig Secrets end to end: each refused shape gives its reason in `kubectl get gittarget -o
// yaml`; a valid one pointing at a second sandbox mirrors that sandbox (same names, other data);
// a rotation switches the mirror over once; a deleted Secret stops it. No credential is logged.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { until } from '../support/deadline.js';
import { commits, git, ok, startMirroringServer, startSandbox, type Sandbox } from './harness.js';
import type { StartedServer } from '../support/server.js';
import type { Kubectl } from '../support/kubectl.js';

let hosting: Sandbox;
let second: Sandbox;
let server: StartedServer & { kubectl: Kubectl };

const NS = 'tenant';

function target(name: string, secretRef: Record<string, string>): string {
  return JSON.stringify({
    apiVersion: 'configbutler.ai/v1alpha1',
    kind: 'GitTarget',
    metadata: { name, namespace: NS },
    spec: {
      repository: { url: `local:${name}` },
      branch: 'main',
      path: 'mirror',
      source: { kubeConfig: { secretRef } },
      commit: { idleSeconds: 1 },
      resources: [{ group: '', version: 'v1', resource: 'configmaps', namespaces: ['team-a'] }],
    },
  });
}

async function condition(name: string, type: string): Promise<{ status: string; reason: string; message: string }> {
  const obj = parse(await ok(server.kubectl, ['get', 'gittarget', name, '-n', NS, '-o', 'yaml']));
  const c = (obj.status?.conditions ?? []).find((x: any) => x.type === type);
  return c ? { status: c.status, reason: c.reason, message: c.message } : { status: '', reason: '', message: '' };
}

before(async () => {
  [hosting, second] = await Promise.all([startSandbox(), startSandbox()]);
  server = await startMirroringServer(hosting);
  for (const [sb, value] of [
    [hosting, 'from-hosting'],
    [second, 'from-second'],
  ] as const) {
    await ok(sb.kubectl, ['create', 'namespace', 'team-a']);
    await ok(sb.kubectl, ['create', 'configmap', 'settings', '-n', 'team-a', `--from-literal=origin=${value}`]);
  }
  await ok(hosting.kubectl, ['create', 'namespace', NS]);
});

after(async () => {
  await server?.stop();
  await hosting?.destroy();
  await second?.destroy();
});

test('each refused kubeconfig Secret shape has its reason', { timeout: 120_000 }, async () => {
  const good = readFileSync(second.kubeconfig, 'utf8');
  const doc = parse(good);
  const variant = (f: (d: any) => void) => {
    const d = structuredClone(doc);
    f(d);
    return JSON.stringify(d);
  };
  const secrets: Record<string, string> = {
    'no-key': '',
    invalid: 'clusters: [unclosed',
    exec: variant((d) => (d.users[0].user = { exec: { apiVersion: 'client.authentication.k8s.io/v1', command: '/bin/true' } })),
    'auth-provider': variant((d) => (d.users[0].user = { 'auth-provider': { name: 'oidc' } })),
    insecure: variant((d) => (d.clusters[0].cluster['insecure-skip-tls-verify'] = true)),
    'file-ref': variant((d) => (d.users[0].user = { 'client-certificate': '/etc/passwd', 'client-key': '/etc/shadow' })),
    'token-file': variant((d) => (d.users[0].user = { tokenFile: '/var/run/secrets/kubernetes.io/serviceaccount/token' })),
  };
  for (const [name, value] of Object.entries(secrets)) {
    const from = name === 'no-key' ? ['--from-literal=other=x'] : [`--from-literal=value=${value}`];
    await ok(hosting.kubectl, ['create', 'secret', 'generic', name, '-n', NS, ...from]);
  }
  const expected: Record<string, string> = {
    missing: 'KubeConfigSecretNotFound',
    'no-key': 'KubeConfigKeyNotFound',
    invalid: 'KubeConfigInvalid',
    exec: 'KubeConfigExecNotAllowed',
    'auth-provider': 'KubeConfigExecNotAllowed',
    insecure: 'KubeConfigInsecureTLSNotAllowed',
    'file-ref': 'KubeConfigFileReferenceNotAllowed',
    'token-file': 'KubeConfigFileReferenceNotAllowed',
  };
  for (const name of Object.keys(expected)) await ok(server.kubectl, ['apply', '-f', '-'], target(`bad-${name}`, { name }));
  for (const [name, reason] of Object.entries(expected)) {
    await until(async () => (await condition(`bad-${name}`, 'Validated')).reason === reason, `Validated reason ${reason} on bad-${name}`, 20_000, 200);
    assert.equal((await condition(`bad-${name}`, 'Validated')).status, 'False');
    assert.equal((await condition(`bad-${name}`, 'Ready')).status, 'False');
  }
  assert.equal((await condition('bad-missing', 'Validated')).message, 'Secret "missing" not found in namespace "tenant"');
  assert.equal(await commits(join(server.dataDir, 'git', NS, 'bad-exec.git')).then((c) => c.length), 0);
});

test('a valid kubeconfig Secret mirrors the cluster it names; rotation switches once; deletion stops', { timeout: 150_000 }, async () => {
  const secondKubeconfig = readFileSync(second.kubeconfig, 'utf8');
  // Key fallback: no `key`, no `value`: `value.yaml` is read.
  await ok(hosting.kubectl, ['create', 'secret', 'generic', 'second', '-n', NS, `--from-literal=value.yaml=${secondKubeconfig}`]);
  await ok(server.kubectl, ['apply', '-f', '-'], target('remote', { name: 'second' }));
  await ok(server.kubectl, ['wait', '--for=condition=Ready', 'gittarget/remote', '-n', NS, '--timeout=30s']);
  const repo = join(server.dataDir, 'git', NS, 'remote.git');
  assert.equal(await git(repo, 'show', 'main:mirror/team-a/configmaps/settings.yaml'), 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: team-a\ndata:\n  origin: from-second\n');

  // Rotation: the Secret now names the hosting sandbox; the mirror follows within a re-check.
  const hostingKubeconfig = readFileSync(hosting.kubeconfig, 'utf8');
  await ok(hosting.kubectl, ['create', 'secret', 'generic', 'second', '-n', NS, `--from-literal=value.yaml=${hostingKubeconfig}`, '--dry-run=client', '-o', 'yaml'])
    .then((y) => ok(hosting.kubectl, ['apply', '-f', '-'], y));
  await until(
    async () => (await git(repo, 'show', 'main:mirror/team-a/configmaps/settings.yaml')).includes('from-hosting'),
    'the rotated source mirrored',
    40_000,
    250,
  );
  const afterRotation = (await commits(repo)).length;

  // Deleted Secret: Validated=False, and an edit in the source no longer reaches Git.
  await ok(hosting.kubectl, ['delete', 'secret', 'second', '-n', NS]);
  await until(async () => (await condition('remote', 'Validated')).reason === 'KubeConfigSecretNotFound', 'Validated=False after the Secret went', 30_000, 250);
  await ok(hosting.kubectl, ['patch', 'configmap', 'settings', '-n', 'team-a', '-p', '{"data":{"origin":"changed"}}']);
  await new Promise((r) => setTimeout(r, 4_000));
  assert.equal((await commits(repo)).length, afterRotation);

  // Nothing of a kubeconfig reaches the logs.
  const keyData = parse(secondKubeconfig).users[0].user['client-key-data'] as string;
  assert.ok(!server.stderr().includes(keyData.slice(0, 40)));
});
