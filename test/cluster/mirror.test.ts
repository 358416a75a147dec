// The mirror with the hosting cluster as its source: ConfigMaps created with kubectl in a
// real kube-apiserver reach the Git folder of a GitTarget created through the aggregation layer, with
// our server reading them under its own ServiceAccount (the mirror-reader ClusterRole of
// apiservice/rbac.yaml), and kube-root-ca.crt — made in every namespace by the real
// kube-controller-manager — is filtered as cluster noise.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { Kubectl, kubectlBinary, type RunResult } from '../support/kubectl.js';
import { gitDir } from '../git/git-cli.js';
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
  assert.equal(await gitDir(repo, 'ls-tree', '-r', '--name-only', 'main', 'live'), `live/${NS}/configmaps/alpha.yaml\nlive/${NS}/configmaps/beta.yaml\n`);
  assert.equal(await gitDir(repo, 'show', `main:live/${NS}/configmaps/alpha.yaml`), cmYAML('alpha', 'alpha-1'));
  assert.equal(await gitDir(repo, 'show', `main:live/${NS}/configmaps/beta.yaml`), cmYAML('beta', 'beta-1'));
  assert.equal(await gitDir(repo, 'log', '--format=%s', 'main'), 'Snapshot of default/live: 2 objects\n');
});

test('the same selection with includeClusterNoise mirrors kube-root-ca.crt too (the filter is what keeps it out)', { timeout: 180_000 }, async () => {
  const repo = join(cp.dir, 'reverser-data', 'git', 'default', 'noisy.git');
  ok(await admin.run(['apply', '-f', '-'], { stdin: gitTarget('noisy', { includeClusterNoise: true }) }));
  ok(await admin.run(['wait', '--for=condition=Ready', 'gittarget/noisy', '--timeout=90s'], { timeoutMs: 100_000 }));
  assert.equal(await gitDir(repo, 'ls-tree', '-r', '--name-only', 'main', 'live'),
    `live/${NS}/configmaps/alpha.yaml\nlive/${NS}/configmaps/beta.yaml\nlive/${NS}/configmaps/kube-root-ca.crt.yaml\n`);
});

/** The rows of the Events table of `kubectl describe` (through the aggregator), as [type, reason, age, from, message]. */
async function describedEvents(kind: string, name: string): Promise<string[][]> {
  const out = ok(await admin.run(['describe', kind, name, '-n', 'default']));
  const at = out.indexOf('\nEvents:');
  assert.ok(at >= 0, out);
  return out.slice(at + 1).split('\n').slice(1).filter((l) => l.trim() && !/^\s+(Type|----)\s/.test(l)).map((l) => l.trim().split(/\s{2,}/));
}

test('kubectl describe gittarget through the aggregator lists the Events written to kube-apiserver: Committed with its sha, PushFailed with why', { timeout: 180_000 }, async () => {
  const FROM = 'configbutler.ai/reverser-apiserver';
  ok(await admin.run(['apply', '-f', '-'], { stdin: gitTarget('described') }));
  ok(await admin.run(['wait', '--for=condition=Ready', 'gittarget/described', '--timeout=90s'], { timeoutMs: 100_000 }));
  const gt = JSON.parse(ok(await admin.run(['get', 'gittarget', 'described', '-o', 'json'])));
  const committed = await until('the Committed event', async () => {
    const r = await describedEvents('gittarget', 'described');
    return r.length ? r : undefined;
  }, 20_000, 250);
  assert.deepEqual(committed.map(([t, r, , f, m]) => [t, r, f, m]), [['Normal', 'Committed', FROM, `Committed ${gt.status.lastCommit.sha} to main: Snapshot of default/described: 2 objects`]]);
  // Written as events.k8s.io/v1, regarding our object; kube-apiserver serves it as core/v1 to describe.
  const ev = JSON.parse(ok(await admin.run(['get', 'events.v1.events.k8s.io', '-n', 'default', '--field-selector', `regarding.name=described`, '-o', 'json'])));
  assert.equal(ev.items.length, 1);
  assert.deepEqual(ev.items[0].regarding, { apiVersion: 'configbutler.ai/v1alpha1', kind: 'GitTarget', namespace: 'default', name: 'described', uid: gt.metadata.uid });
  assert.equal(ev.items[0].reportingController, FROM);

  // Nothing listens on port 1: every push fails the same way, and repeats count on one Event.
  ok(await admin.run(['apply', '-f', '-'], { stdin: gitTarget('unpushable', { repository: { url: 'http://127.0.0.1:1/x.git' } }) }));
  // (The retries back off here, so the count is shown by the sandbox's and the recorder's tests.)
  const failed = await until('the PushFailed event', async () => {
    const r = await describedEvents('gittarget', 'unpushable');
    return r.find((x) => x[1] === 'PushFailed');
  }, 90_000, 500);
  const [type, , , from, message] = failed;
  assert.deepEqual([type, from], ['Warning', FROM]);
  assert.match(message!, /^Unreachable: /);
  const all = JSON.parse(ok(await admin.run(['get', 'events', '-n', 'default', '--field-selector', 'involvedObject.name=unpushable,reason=PushFailed', '-o', 'json'])));
  assert.equal(all.items.length, 1, 'one Event, counted, not one per failure');
});
