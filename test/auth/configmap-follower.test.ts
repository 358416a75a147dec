// The follower of kube-system/extension-apiserver-authentication (src/auth/configmap.ts) reads the
// ConfigMap only when its watch fails, as client-go's reflector relists: a watch the server ends at
// its timeoutSeconds is resumed from the last resourceVersion with no GET, an ERROR (410) or a
// silent (half-open) watch costs one GET. Against the fake hosting cluster (a real HTTPS server),
// counting the requests it got.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { startFakeHostingCluster, type FakeHostingCluster } from '../support/fake-hosting-cluster.js';
import { AuthConfigMapFollower, AUTH_CONFIGMAP_PATH } from '../../src/auth/configmap.js';
import { HostingClient } from '../../src/auth/hosting.js';
import { until } from '../support/deadline.js';

const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined };

async function follow(t: TestContext, opts: { deadWatchGraceMs?: number } = {}) {
  const fake: FakeHostingCluster = await startFakeHostingCluster();
  t.after(() => fake.close());
  fake.setConfigMap({ 'client-ca-file': 'one' });
  const client = await HostingClient.create({ kubeconfig: fake.kubeconfigPath, inCluster: false, timeoutMs: 2000 });
  t.after(() => client.close());
  const seen: string[] = [];
  const warnings: string[] = [];
  // Each watch asks for 1-2 s (timeoutSeconds 1), so the fake ends one about every second.
  const follower = new AuthConfigMapFollower(client, (data) => seen.push(data['client-ca-file'] ?? ''), { ...quiet, warn: (m: string) => warnings.push(m) },
    { retryMs: 50, minWatchTimeoutSeconds: 1, ...opts });
  t.after(() => follower.close());
  await follower.start();
  const gets = () => fake.calls.filter((c) => c.method === 'GET' && c.path === AUTH_CONFIGMAP_PATH).length;
  return { fake, follower, seen, warnings, gets };
}

test('watches the server ends are resumed from their resourceVersion with no GET; a change between them still arrives', { timeout: 20_000 }, async (t) => {
  const { fake, seen, warnings, gets } = await follow(t);
  assert.equal(gets(), 1);
  await until(() => fake.configMapWatches.length >= 3, 'three watches (two ended by the server)', 10_000);
  fake.setConfigMap({ 'client-ca-file': 'two' });
  await until(() => seen.includes('two'), 'the rotated CA', 5_000);
  await until(() => fake.configMapWatches.length >= 5, 'two more watches', 10_000);
  assert.equal(gets(), 1, 'no GET while the watches ended cleanly');
  assert.deepEqual(seen, ['one', 'two']);
  assert.deepEqual(warnings, []);
  // Each watch asked the server to end it after 1 s and resumed from the last resourceVersion.
  const [first, ...rest] = fake.configMapWatches;
  assert.equal(first!.get('resourceVersion'), '2');
  for (const q of fake.configMapWatches) {
    assert.equal(q.get('timeoutSeconds'), '1');
    assert.equal(q.get('allowWatchBookmarks'), 'true');
  }
  assert.ok(rest.every((q) => q.get('resourceVersion') === '2' || q.get('resourceVersion') === '3'), rest.map((q) => q.get('resourceVersion')).join(','));
  assert.equal(fake.configMapWatches[fake.configMapWatches.length - 1]!.get('resourceVersion'), '3');
});

test('an ERROR event (410 Expired) ends the watch and the ConfigMap is read once before the next', { timeout: 20_000 }, async (t) => {
  const { fake, seen, gets } = await follow(t);
  await until(() => fake.configMapWatches.length >= 1, 'the first watch', 5_000);
  const watchesBefore = fake.configMapWatches.length;
  fake.expireConfigMapWatches();
  await until(() => gets() === 2 && fake.configMapWatches.length > watchesBefore, 'a GET and a new watch', 5_000);
  // The new watch starts from what the GET returned.
  assert.equal(fake.configMapWatches[watchesBefore]!.get('resourceVersion'), '2');
  assert.deepEqual(seen, ['one', 'one']);
});

test('a watch on which nothing arrives past its timeout is dropped as dead and the ConfigMap read again', { timeout: 20_000 }, async (t) => {
  const { fake, warnings, gets } = await follow(t, { deadWatchGraceMs: 300 });
  fake.silentWatches = true;
  await until(() => fake.configMapWatches.length >= 2, 'the next (silent) watch', 5_000);
  fake.silentWatches = false;
  // timeoutSeconds 1 + 0.3 s: dropped 1.3 s after it started, then a GET.
  await until(() => gets() === 2, 'the GET after the silent watch was dropped', 10_000);
  assert.ok(warnings.some((m) => /^authentication: watching kube-system\/extension-apiserver-authentication: watch \/api\/v1\/namespaces\/kube-system\/configmaps\?.* nothing received within 1s$/.test(m)), warnings.join('\n'));
});
