// APIService self-registration against the hosting-cluster double (no control plane needed): a
// cluster without apiregistration.k8s.io (kcp-like) is served anyway with one log line; the API
// appearing later is registered within one refresh without a restart; a 403 is logged once and
// retried; a rotated CA file reaches the APIService's caBundle. The real kube-apiserver version of
// these checks is test/cluster/apiservice.test.ts.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { makeCA, type CA } from '../support/pki.js';
import { startFakeHostingCluster, type FakeHostingCluster } from '../support/fake-hosting-cluster.js';
import { request, startServer, tempDir, type ServerProcess } from '../auth-e2e/harness.js';
import { until } from '../support/deadline.js';

const cleanups: Array<() => unknown> = [];
const ctx = { after: (fn: () => unknown) => cleanups.push(fn) };
after(async () => {
  for (const fn of cleanups.reverse()) await fn();
});

const NAME = 'v1alpha1.configbutler.ai';
const DISCOVERY = '/apis/apiregistration.k8s.io/v1';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let fake: FakeHostingCluster;
let srv: ServerProcess;
let servingCA: CA;
let caFile: string;

/** Log lines (parsed JSON) whose message contains `text`. */
function logLines(text: string): Array<{ level: string; msg: string }> {
  return srv.logs().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l)).filter((l) => l.msg.includes(text));
}

const get = (path: string) => request(srv.url, servingCA.certPem, path);
const discoveryCalls = () => fake.calls.filter((c) => c.method === 'GET' && c.path === DISCOVERY).length;

before(async () => {
  fake = await startFakeHostingCluster();
  ctx.after(() => fake.close());
  fake.onSAR = () => ({ allowed: true });
  servingCA = makeCA('registration-serving-ca');
  const dir = tempDir(ctx, 'registration-');
  caFile = join(dir, 'ca.crt');
  writeFileSync(caFile, servingCA.certPem);
  srv = await startServer(ctx, servingCA, ['--authorization-mode=Delegated', '--kubeconfig', fake.kubeconfigPath,
    '--authentication-skip-lookup=true', '--discovery-refresh-interval=1s', `--apiservice-ca-file=${caFile}`,
    '--apiservice-service-namespace=tenants-system', '--apiservice-service-port=8443', '--apiservice-version-priority=20',
    '--authorization-always-allow-paths=/healthz,/livez,/readyz,/version,/metrics']);
});

test('without apiregistration.k8s.io: serves, logs once, says so on /readyz?verbose and /metrics, keeps re-checking', async () => {
  await until(() => discoveryCalls() >= 3, 'three discovery re-checks', 10_000);
  assert.equal((await get('/healthz')).status, 200);
  assert.deepEqual(logLines('not served').map((l) => [l.level, l.msg]), [
    ['info', 'apiregistration.k8s.io/v1 apiservices is not served by the hosting cluster; serving without an APIService, re-checking every 1s'],
  ]);
  const ready = await get('/readyz?verbose');
  assert.equal(ready.status, 200, ready.text);
  assert.ok(ready.text.includes('[+]apiservice-registration ok (APIService v1alpha1.configbutler.ai not registered: '
    + 'apiregistration.k8s.io/v1 apiservices is not served by the hosting cluster; re-checking every 1s)\n'), ready.text);
  const metrics = (await get('/metrics')).text;
  assert.match(metrics, /^reverser_apiservice_registration_state\{state="api-absent"\} 1$/m);
  assert.match(metrics, /^reverser_apiservice_registration_state\{state="registered"\} 0$/m);
  assert.equal(fake.calls.filter((c) => c.path.includes('/apiservices')).length, 0, 'no APIService call while the API is absent');
});

test('the API appears: registered within one refresh, without a restart, with the Service, priorities and caBundle from the flags', async () => {
  fake.apiServices = new Map();
  await until(() => fake.apiServices!.has(NAME), 'the APIService', 3_000);
  const obj = fake.apiServices!.get(NAME);
  assert.deepEqual(obj.spec, {
    group: 'configbutler.ai',
    version: 'v1alpha1',
    groupPriorityMinimum: 1000,
    versionPriority: 20,
    service: { name: 'reverser-apiserver', namespace: 'tenants-system', port: 8443 },
    caBundle: Buffer.from(servingCA.certPem).toString('base64'),
  });
  await until(async () => (await get('/readyz?verbose')).text.includes('[+]apiservice-registration ok (APIService v1alpha1.configbutler.ai registered)'), 'registered on /readyz');
  assert.equal(logLines('created APIService').length, 1);
  assert.match((await get('/metrics')).text, /^reverser_apiservice_registration_state\{state="registered"\} 1$/m);
  // Current: later refreshes read it and write nothing.
  const writes = () => fake.calls.filter((c) => c.method !== 'GET' && c.path.includes('/apiservices')).length;
  const before = writes();
  await sleep(2500);
  assert.equal(writes(), before);
});

test('403 on apiservices: logged once, serving continues; granted back and the CA rotated: updated within one refresh, old CA kept', async () => {
  fake.apiServicesStatus = 403;
  await until(async () => (await get('/readyz?verbose')).text.includes('not registered: forbidden to manage apiservices'), 'forbidden on /readyz');
  const n = discoveryCalls();
  await until(() => discoveryCalls() >= n + 2, 'two more refreshes');
  const forbidden = logLines('forbidden to manage apiservices');
  assert.equal(forbidden.length, 1, srv.logs());
  assert.equal(forbidden[0]!.level, 'warn');
  assert.equal((await get('/healthz')).status, 200);
  assert.equal((await get('/readyz')).status, 200, 'not being registered never fails readiness');
  assert.match((await get('/metrics')).text, /^reverser_apiservice_registration_state\{state="forbidden"\} 1$/m);

  const rotated = makeCA('registration-serving-ca-2');
  // The new CA alone in the file: the bundle keeps the CA of the certificate still being served.
  writeFileSync(caFile, rotated.certPem);
  fake.apiServicesStatus = undefined;
  const want = Buffer.from(`${rotated.certPem.trimEnd()}\n${servingCA.certPem}`).toString('base64');
  await until(() => fake.apiServices!.get(NAME)?.spec.caBundle === want, 'the rotated caBundle', 5_000);
  await until(() => logLines('the serving CA changed').length > 0, 'the rotation logged');
  assert.equal(logLines('the serving CA changed').length, 1, srv.logs());
  assert.equal(logLines('forbidden to manage apiservices').length, 1);
});
