// spec.attribution.auditRoute through the real registry (schema, the server's rules, updates) and
// the effective route the join reads from it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Registry, type WriteOptions } from '../../src/registry/registry.js';
import { gitTargets } from '../../src/api/resources.js';
import { createEmbeddedStore } from '../../src/storage/embedded.js';
import { DEFAULT_CLUSTER } from '../../src/storage/types.js';
import { StatusError } from '../../src/api/status.js';
import { effectiveRoute } from '../../src/attribution/join.js';
import { authorOfIdentity } from '../../src/model/author.js';

const ctx = { cluster: DEFAULT_CLUSTER, user: { username: 'alice', groups: ['system:authenticated'] } };
const opts: WriteOptions = { dryRun: false, fieldManager: 'test', fieldValidation: 'Strict' };

function gt(name: string, spec: Record<string, unknown> = {}) {
  return { apiVersion: 'configbutler.ai/v1alpha1', kind: 'GitTarget', metadata: { name }, spec: { repository: { url: 'local:config' }, branch: 'main', path: 'a', ...spec } };
}

test('spec.attribution.auditRoute: a DNS subdomain up to 253 characters, refused otherwise with 422; mutable', async (t) => {
  const store = await createEmbeddedStore();
  t.after(() => store.close());
  const r = new Registry(gitTargets, store);
  const { object } = await r.create(ctx, 'a', gt('routed', { attribution: { auditRoute: 'tenant-b.example' } }), opts);
  assert.deepEqual((object.spec as { attribution: unknown }).attribution, { auditRoute: 'tenant-b.example' });

  for (const [route, field] of [['Tenant_B', 'spec.attribution.auditRoute'], [`${'a'.repeat(250)}.bcd`, 'spec.attribution.auditRoute']] as const) {
    try {
      await r.create(ctx, 'a', gt('bad', { attribution: { auditRoute: route } }), opts);
      assert.fail('created');
    } catch (e) {
      assert.ok(e instanceof StatusError, String(e));
      assert.equal(e.status.code, 422);
      assert.deepEqual(e.status.details?.causes?.map((c) => c.field), [field]);
    }
  }
  try {
    await r.create(ctx, 'a', gt('bad', { attribution: { auditRoute: 'x', other: 1 } }), opts);
    assert.fail('created');
  } catch (e) {
    assert.equal((e as StatusError).status.message, 'GitTarget.configbutler.ai "bad" is invalid: spec.attribution.other: Forbidden: unknown field "spec.attribution.other"');
  }
  const invalid = (await r.create(ctx, 'a', gt('bad2', {}), opts)).object as any;
  invalid.spec.attribution = { auditRoute: 'Bad Route' };
  await assert.rejects(r.update(ctx, 'a', 'bad2', invalid, opts, ''), (e: StatusError) => e.status.message === `GitTarget.configbutler.ai "bad2" is invalid: spec.attribution.auditRoute: Invalid value: "Bad Route": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`);

  // Mutable: changed and removed by an update (generation moves, no immutability error).
  const cur = structuredClone(object) as any;
  cur.spec.attribution.auditRoute = 'tenant-c';
  const changed = (await r.update(ctx, 'a', 'routed', cur, opts, '')).object as any;
  assert.equal(changed.spec.attribution.auditRoute, 'tenant-c');
  assert.equal(changed.metadata.generation, 2);
  delete changed.spec.attribution;
  const removed = (await r.update(ctx, 'a', 'routed', changed, opts, '')).object as any;
  assert.equal(removed.spec.attribution, undefined);
});

test('the effective route: the field, else hosting for the default source with the audit listener, else none', () => {
  const obj = (spec: Record<string, unknown>) => ({ apiVersion: 'configbutler.ai/v1alpha1', kind: 'GitTarget', metadata: { name: 'x' }, spec });
  assert.equal(effectiveRoute(obj({ attribution: { auditRoute: 'tenant-b' } }), false), 'tenant-b');
  assert.equal(effectiveRoute(obj({ attribution: { auditRoute: 'tenant-b' }, source: { kubeConfig: { secretRef: { name: 'k' } } } }), true), 'tenant-b');
  assert.equal(effectiveRoute(obj({}), true), 'hosting');
  assert.equal(effectiveRoute(obj({}), false), undefined);
  assert.equal(effectiveRoute(obj({ source: { kubeConfig: { secretRef: { name: 'k' } } } }), true), undefined);
  assert.equal(effectiveRoute(undefined, true), undefined);
});

test("an audited user's author: claims extras when well-formed, else the username and its derived email (the CommitRequest submitter's rules)", () => {
  assert.deepEqual(authorOfIdentity('alice', { 'configbutler.ai/claims/display-name': ['Alice Doe'], 'configbutler.ai/claims/email': ['alice@example.com'] }), { name: 'Alice Doe', email: 'alice@example.com' });
  assert.deepEqual(authorOfIdentity('alice', { 'configbutler.ai/claims/display-name': ['Eve <evil>'], 'configbutler.ai/claims/email': ['not-an-email'] }), { name: 'alice', email: 'alice@noreply.cluster.local' });
  assert.deepEqual(authorOfIdentity('system:serviceaccount:flux-system:kustomize-controller'), { name: 'system:serviceaccount:flux-system:kustomize-controller', email: 'systemserviceaccountflux-systemkustomize-controller@noreply.cluster.local' });
  assert.deepEqual(authorOfIdentity('bob@corp.example'), { name: 'bob@corp.example', email: 'bob@corp.example' });
});
