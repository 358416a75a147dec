// The mirror with the hosting cluster as its source: ConfigMaps created with kubectl in a
// real kube-apiserver reach the Git folder of a GitTarget created through the aggregation layer, with
// our server reading them under its own ServiceAccount (the mirror-reader ClusterRole of
// apiservice/rbac.yaml), and kube-root-ca.crt — made in every namespace by the real
// kube-controller-manager — is filtered as cluster noise.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { Kubectl, kubectlBinary, type RunResult } from '../support/kubectl.js';
import { startControlPlane, until, type ControlPlane } from './fixture.js';
import { deployReverser, type Reverser } from './reverser.js';

let cp: ControlPlane;
let srv: Reverser;
let admin: Kubectl;
const NS = 'mirror-src';

function ok(r: RunResult): string {
  const ctx = `exit ${r.code}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`;
  assert.equal(r.stderr, '', ctx);
  assert.equal(r.code, 0, ctx);
  return r.stdout;
}

function git(gitDir: string, ...args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('git', [`--git-dir=${gitDir}`, ...args], { timeout: 15_000 }, (err, stdout, stderr) =>
      err ? reject(new Error(`git ${args.join(' ')}: ${err.message}\n${stderr}`)) : resolve(stdout));
  });
}

const gitTarget = (name: string, extra: Record<string, unknown> = {}) => JSON.stringify({
  apiVersion: 'configbutler.ai/v1alpha1', kind: 'GitTarget', metadata: { name, namespace: 'default' },
  spec: {
    repository: { url: `local:${name}` }, branch: 'main', path: 'live',
    commit: { idleSeconds: 1 },
    resources: [{ group: '', version: 'v1', resource: 'configmaps', namespaces: [NS] }],
    ...extra,
  },
});

const cmYAML = (name: string, value: string) => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n  namespace: ${NS}\ndata:\n  key: ${value}\n`;

before(async () => {
  cp = await startControlPlane();
  admin = new Kubectl(kubectlBinary(), cp.admin.kubeconfig);
  srv = await deployReverser(cp);
  ok(await admin.run(['create', 'namespace', NS]));
  for (const n of ['alpha', 'beta']) ok(await admin.run(['-n', NS, 'create', 'configmap', n, `--from-literal=key=${n}-1`]));
  // The root CA ConfigMap is the controller manager's: wait for it, so filtering it is shown, not assumed.
  await until('kube-root-ca.crt in the namespace', async () => (await admin.run(['-n', NS, 'get', 'configmap', 'kube-root-ca.crt', '-o', 'name'])).code === 0, 60_000, 250);
});

after(async () => {
  admin?.cleanup();
  await srv?.stop();
  await cp?.stop();
});

test('ConfigMaps made with kubectl in kube-apiserver reach the Git folder; kube-root-ca.crt does not', { timeout: 180_000 }, async () => {
  const repo = join(cp.dir, 'reverser-data', 'git', 'default', 'live.git');
  ok(await admin.run(['apply', '-f', '-'], { stdin: gitTarget('live') }));
  ok(await admin.run(['wait', '--for=condition=Ready', 'gittarget/live', '--timeout=90s'], { timeoutMs: 100_000 }));
  assert.equal(await git(repo, 'ls-tree', '-r', '--name-only', 'main', 'live'), `live/${NS}/configmaps/alpha.yaml\nlive/${NS}/configmaps/beta.yaml\n`);
  assert.equal(await git(repo, 'show', `main:live/${NS}/configmaps/alpha.yaml`), cmYAML('alpha', 'alpha-1'));
  assert.equal(await git(repo, 'show', `main:live/${NS}/configmaps/beta.yaml`), cmYAML('beta', 'beta-1'));
  assert.equal(await git(repo, 'log', '--format=%s', 'main'), 'Snapshot of default/live: 2 objects\n');
});

test('the same selection with includeClusterNoise mirrors kube-root-ca.crt too (the filter is what keeps it out)', { timeout: 180_000 }, async () => {
  const repo = join(cp.dir, 'reverser-data', 'git', 'default', 'noisy.git');
  ok(await admin.run(['apply', '-f', '-'], { stdin: gitTarget('noisy', { includeClusterNoise: true }) }));
  ok(await admin.run(['wait', '--for=condition=Ready', 'gittarget/noisy', '--timeout=90s'], { timeoutMs: 100_000 }));
  assert.equal(await git(repo, 'ls-tree', '-r', '--name-only', 'main', 'live'),
    `live/${NS}/configmaps/alpha.yaml\nlive/${NS}/configmaps/beta.yaml\nlive/${NS}/configmaps/kube-root-ca.crt.yaml\n`);
});
