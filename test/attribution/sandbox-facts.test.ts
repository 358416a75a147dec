// The sandbox's request-path facts (src/attribution/sandbox.ts): what a stored write records, the
// route a GitTarget of each logical cluster joins on, and that one workspace's facts never name
// the author of another workspace's change. Real registry (for the kcp.io/cluster stamp), real
// embedded store and StoreFacts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Registry, type WriteOptions } from '../../src/registry/registry.js';
import { gitTargets } from '../../src/api/resources.js';
import { createEmbeddedStore } from '../../src/storage/embedded.js';
import { DEFAULT_CLUSTER } from '../../src/storage/types.js';
import { effectiveRoute, resolvePrefix, type JoinableChange } from '../../src/attribution/join.js';
import { StoreFacts } from '../../src/attribution/facts-store.js';
import { factOfWrite, sandboxFactRecorder, sandboxRoute } from '../../src/attribution/sandbox.js';

const opts: WriteOptions = { dryRun: false, fieldManager: 'test', fieldValidation: 'Strict' };
const alice = { username: 'alice', uid: 'u-1', groups: ['team-a', 'system:authenticated'], extra: { 'configbutler.ai/claims/email': ['alice@example.com'], 'authentication.kubernetes.io/credential-id': ['X509SHA256=ab'] } };
const admin = { username: 'admin', groups: ['system:masters', 'system:authenticated'] };
const cm = (uid: string, rv: string) => ({ metadata: { name: 'one', namespace: 'team-a', uid, resourceVersion: rv } });

test('a stored write records the fact an audit event would give: user, impersonator, verb, uid, resourceVersion', () => {
  const f = factOfWrite({ cluster: DEFAULT_CLUSTER, verb: 'patch', group: '', resource: 'configmaps', namespace: 'team-a', object: cm('c-1', '17'), user: alice, impersonator: admin }, new Date('2026-01-02T03:04:05Z'));
  assert.ok(f && /^[0-9a-f-]{36}$/.test(f.auditID));
  const { auditID: _id, ...rest } = f!;
  assert.deepEqual(rest, {
    route: 'sandbox:_',
    verb: 'patch',
    group: '',
    resource: 'configmaps',
    namespace: 'team-a',
    name: 'one',
    uid: 'c-1',
    resourceVersion: '17',
    // Only the claim extras are kept, as decode.ts keeps an audit event's.
    user: { username: 'alice', uid: 'u-1', groups: ['team-a', 'system:authenticated'], extra: { 'configbutler.ai/claims/email': ['alice@example.com'] } },
    impersonator: { username: 'admin', groups: ['system:masters', 'system:authenticated'] },
    time: '2026-01-02T03:04:05.000Z',
  });
  const dc = factOfWrite({ cluster: 'ws-a', verb: 'deletecollection', group: '', resource: 'configmaps', namespace: 'team-a', removed: [{ metadata: { uid: 'x' } }, { metadata: { uid: 'y' } }], user: alice });
  assert.deepEqual([dc?.route, dc?.uid, dc?.resourceVersion, dc?.uids], ['sandbox:ws-a', '', '', ['x', 'y']]);
  // Nothing to join on: no fact.
  assert.equal(factOfWrite({ cluster: DEFAULT_CLUSTER, verb: 'deletecollection', group: '', resource: 'configmaps', namespace: 'team-a', removed: [], user: alice }), undefined);
  assert.equal(factOfWrite({ cluster: DEFAULT_CLUSTER, verb: 'update', group: '', resource: 'configmaps', namespace: 'team-a', object: cm('c-1', ''), user: alice }), undefined);
});

test('the route: spec.attribution.auditRoute, else the sandbox route of the GitTarget\'s logical cluster, else hosting', async (t) => {
  const store = await createEmbeddedStore();
  t.after(() => store.close());
  const r = new Registry(gitTargets, store);
  const gt = { apiVersion: 'configbutler.ai/v1alpha1', kind: 'GitTarget', metadata: { name: 'live' }, spec: { repository: { url: 'local:config' }, branch: 'main', path: 'a' } };
  const inDefault = (await r.create({ cluster: DEFAULT_CLUSTER, user: admin }, 'a', gt, opts)).object;
  const inWorkspace = (await r.create({ cluster: 'ws-a', user: admin }, 'a', gt, opts)).object;
  assert.equal(effectiveRoute(inDefault, false, true), 'sandbox:_');
  assert.equal(effectiveRoute(inWorkspace, false, true), 'sandbox:ws-a');
  assert.equal(effectiveRoute(inWorkspace, true, true), 'sandbox:ws-a', 'the sandbox is the source: its facts, not the hosting audit route');
  assert.equal(effectiveRoute(inDefault, true, false), 'hosting');
  assert.equal(effectiveRoute({ ...inDefault, spec: { ...(inDefault.spec as object), attribution: { auditRoute: 'hosting' } } }, false, true), 'hosting');
  assert.equal(effectiveRoute({ ...inDefault, spec: { ...(inDefault.spec as object), source: { kubeConfig: { secretRef: { name: 'k' } } } } }, true, true), undefined);
  assert.equal(sandboxRoute(DEFAULT_CLUSTER), 'sandbox:_');
});

test("facts are partitioned by logical cluster: ws-a's write never names the author of the same uid/rv in ws-b", async (t) => {
  const store = await createEmbeddedStore();
  t.after(() => store.close());
  const facts = new StoreFacts({ store });
  const record = sandboxFactRecorder(facts);
  await record({ cluster: 'ws-a', verb: 'update', group: '', resource: 'configmaps', namespace: 'team-a', object: cm('same-uid', '5'), user: alice });
  const change: JoinableChange = { op: 'write', object: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { namespace: 'team-a', name: 'one' } }, resource: 'configmaps', source: { uid: 'same-uid', resourceVersion: '5', resource: 'configmaps' } };
  assert.deepEqual((await resolvePrefix(facts, 'sandbox:ws-a', [change])).map((a) => [a.authorKey, a.author.name, a.tier]), [['user:alice', 'alice', 'exact']]);
  assert.deepEqual(await resolvePrefix(facts, 'sandbox:ws-b', [change]), []);
  assert.deepEqual(await resolvePrefix(facts, 'sandbox:_', [change]), []);
  assert.deepEqual(await resolvePrefix(facts, 'hosting', [change]), []);
});
