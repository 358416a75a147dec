// A GitTarget carries its author's authority, in kcp terms (docs/security.md): the check of what
// a GitTarget reads is a SubjectAccessReview to the GitTarget's own workspace, with the forwarded
// caller's identity — here against the hosting-cluster double standing in for kcp.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import { issueClientCert, makeCA, type KeyPair } from '../support/pki.js';
import { startFakeHostingCluster, type FakeHostingCluster, type SARSpec } from '../support/fake-hosting-cluster.js';
import { GROUP_PATH, request, startServer, tempDir, type RequestOptions, type ServerProcess } from '../auth-e2e/harness.js';

const cleanups: Array<() => unknown> = [];
const ctx = { after: (fn: () => unknown) => cleanups.push(fn) };
after(async () => {
  for (const fn of cleanups.reverse()) await fn();
});

const SAR_PATH = '/apis/authorization.k8s.io/v1/subjectaccessreviews';
const alice: Array<[string, string]> = [['X-Remote-User', 'alice'], ['X-Remote-Group', 'team-a']];
const gts = (ws: string) => `/clusters/${ws}${GROUP_PATH}/namespaces/team-a/gittargets`;
const body = (name: string, namespaces: string[]) => ({
  apiVersion: 'configbutler.ai/v1alpha1', kind: 'GitTarget', metadata: { name, namespace: 'team-a' },
  spec: { repository: { url: 'https://git.example.com/a.git' }, branch: 'main', path: 'live', resources: [{ group: '', resource: 'configmaps', namespaces }] },
});

let fake: FakeHostingCluster;
let srv: ServerProcess;
let shard: KeyPair;
const call = (path: string, o: RequestOptions = {}) => request(srv.url, srv.caPem, path, o);
/** alice's reviews since `from`: [path, verb, resource, namespace]. */
const asked = (from: number) => fake.sars().slice(from).map((c) => {
  const s = (c.body as { spec: SARSpec }).spec;
  return [c.path, s.resourceAttributes?.verb, s.resourceAttributes?.resource, s.resourceAttributes?.namespace];
});

before(async () => {
  fake = await startFakeHostingCluster();
  ctx.after(() => fake.close());
  fake.setNamespace('team-a', 'Active'); // the GitTargets below live in team-a (NamespaceLifecycle)
  // "kcp": in ws-a alice may write GitTargets and read ConfigMaps in team-a, nothing in finance.
  fake.onSAR = (spec, path) => {
    const r = spec.resourceAttributes;
    const inWsA = path === `/clusters/ws-a${SAR_PATH}` && spec.user === 'alice';
    return { allowed: inWsA && (r?.resource === 'gittargets' || (r?.resource === 'configmaps' && r.namespace === 'team-a')) };
  };
  const dir = tempDir(ctx, 'kcp-authority-');
  const rhCA = makeCA('kcp-shard-ca');
  writeFileSync(join(dir, 'shard-ca.crt'), rhCA.certPem);
  srv = await startServer(ctx, makeCA('kcp-serving-ca'), ['--authorization-mode=Delegated', '--kubeconfig', fake.kubeconfigPath,
    '--authentication-skip-lookup=true', '--requestheader-client-ca-file', join(dir, 'shard-ca.crt'),
    '--requestheader-allowed-names', 'kcp-shard', '--kcp-shard-users', 'kcp-shard', '--wildcard-cluster-groups', 'kcp:shards',
    '--authorization-webhook-cache-authorized-ttl=0s', '--authorization-webhook-cache-unauthorized-ttl=0s']);
  shard = issueClientCert(rhCA, 'kcp-shard', ['kcp:shards']);
});

test('what a GitTarget in ws-a reads is asked of ws-a as its author; granted, it is created under her authority', async () => {
  const from = fake.sars().length;
  const r = await call(gts('ws-a'), { method: 'POST', cert: shard, headers: alice, body: body('mine', ['team-a']) });
  assert.equal(r.status, 201, r.text);
  const p = `/clusters/ws-a${SAR_PATH}`;
  assert.deepEqual(asked(from), [[p, 'create', 'gittargets', 'team-a'], [p, 'list', 'configmaps', 'team-a'], [p, 'watch', 'configmaps', 'team-a']]);
  const last = fake.sars().at(-1)!.body as { spec: SARSpec };
  assert.deepEqual([last.spec.user, last.spec.groups], ['alice', ['team-a', 'system:authenticated']]);
  const { verifiedAt, ...who } = r.json().status.authority;
  assert.deepEqual(who, { username: 'alice', groups: ['team-a', 'system:authenticated'] });
  assert.ok(Number.isFinite(Date.parse(verifiedAt)));
});

test('over a namespace her workspace does not grant: 403 naming the missing permission, asked of ws-a', async () => {
  const from = fake.sars().length;
  const r = await call(gts('ws-a'), { method: 'POST', cert: shard, headers: alice, body: body('steal', ['finance']) });
  assert.equal(r.status, 403, r.text);
  assert.equal(r.json().message, 'gittargets.configbutler.ai "steal" is forbidden: User "alice" cannot list resource "configmaps" in API group "" in the namespace "finance"');
  const p = `/clusters/ws-a${SAR_PATH}`;
  assert.deepEqual(asked(from), [[p, 'create', 'gittargets', 'team-a'], [p, 'list', 'configmaps', 'finance']]);
});

test('a grant in ws-a is not one in ws-b: the same GitTarget in ws-b is asked of ws-b', async () => {
  const from = fake.sars().length;
  const r = await call(gts('ws-b'), { method: 'POST', cert: shard, headers: alice, body: body('mine', ['team-a']) });
  assert.equal(r.status, 403, r.text);
  assert.deepEqual(asked(from).map((x) => x[0]), [`/clusters/ws-b${SAR_PATH}`]);
});

test('a SubjectAccessReview that fails denies the GitTarget (fail closed), saying the check could not be made', async () => {
  const onSAR = fake.onSAR;
  fake.onSAR = (spec, path) => (spec.resourceAttributes?.verb === 'watch' ? { status: 500 } : onSAR(spec, path));
  try {
    const r = await call(gts('ws-a'), { method: 'POST', cert: shard, headers: alice, body: body('flaky', ['team-a']) });
    assert.equal(r.status, 403, r.text);
    assert.equal(r.json().message, 'gittargets.configbutler.ai "flaky" is forbidden: User "alice" cannot watch resource "configmaps" in API group "" in the namespace "team-a": '
      + `the authorization check could not be made: SubjectAccessReview failed: POST /clusters/ws-a${SAR_PATH}: HTTP 500: fake failure`);
  } finally {
    fake.onSAR = onSAR;
  }
});
