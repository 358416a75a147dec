// The registry as in-process controllers use it (system identity, updateStatus, patch, watch) and
// per-resource strategies (prepare, status field ownership, generation, warnings, after-effects),
// against the real embedded store.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Type } from '@sinclair/typebox';
import { Registry } from '../../src/registry/registry.js';
import { Registries } from '../../src/registry/registries.js';
import { SYSTEM_USER, systemContext, systemWriteOptions } from '../../src/registry/context.js';
import { definitionStrategy } from '../../src/registry/strategy.js';
import { gitTargets, SANDBOX_RESOURCES, RESOURCES } from '../../src/api/resources.js';
import { envelopeSchema } from '../../src/api/meta.js';
import type { ResourceDefinition } from '../../src/api/definition.js';
import { createEmbeddedStore } from '../../src/storage/embedded.js';
import { StatusError } from '../../src/api/status.js';
import type { KubeObject } from '../../src/model/object.js';

const ctx = systemContext();
const opts = systemWriteOptions('gittarget-controller');

async function statusOf(p: Promise<unknown>): Promise<{ code: number; reason?: string; message?: string }> {
  try {
    await p;
  } catch (e) {
    if (e instanceof StatusError) return { code: e.status.code, reason: e.status.reason, message: e.status.message };
    throw e;
  }
  throw new Error('expected a Status error');
}

const gt = { apiVersion: 'configbutler.ai/v1alpha1', kind: 'GitTarget', metadata: { name: 'demo' }, spec: { repository: { url: 'local:config' }, branch: 'main', path: 'p' } };

test('a controller writes status under the system identity: validated, conflict-checked, field-owned, recorded', async (t) => {
  const store = await createEmbeddedStore({ freezeObjects: true });
  t.after(() => store.close());
  const r = new Registry(gitTargets, store);
  assert.equal(ctx.user.username, 'system:reverser-apiserver:controller');
  assert.deepEqual(SYSTEM_USER.groups, ['system:authenticated']);
  const created = (await r.create(ctx, 'team-a', structuredClone(gt), opts)).object;

  const bad = structuredClone(created) as KubeObject;
  bad.status = { conditions: [{ type: 'Ready', status: 'Maybe' }] };
  const invalid = await statusOf(r.updateStatus(ctx, bad, opts));
  assert.equal(invalid.code, 422);
  assert.match(invalid.message!, /^GitTarget.configbutler.ai "demo" is invalid: status.conditions\[0\].status: Unsupported value: "Maybe"/);

  const good = structuredClone(created) as KubeObject;
  good.status = { conditions: [{ type: 'Ready', status: 'True', reason: 'Synced' }], pendingChanges: 0 };
  (good.spec as Record<string, unknown>).branch = 'elsewhere'; // not the status path's to change
  const stored = (await r.updateStatus(ctx, good, opts)).object;
  assert.deepEqual(stored.status, good.status);
  assert.equal((stored.spec as Record<string, unknown>).branch, 'main');
  assert.equal(stored.metadata.generation, 1);
  const entries = stored.metadata.managedFields as Array<{ manager: string; subresource?: string }>;
  assert.ok(entries.some((e) => e.manager === 'gittarget-controller' && e.subresource === 'status'), JSON.stringify(entries));

  // A write based on the old resourceVersion is a Conflict, as for any client.
  const stale = await statusOf(r.updateStatus(ctx, good, opts));
  assert.equal(stale.code, 409);
  assert.equal(stale.reason, 'Conflict');

  // patch(): a function from the current object to the desired one.
  const patched = await r.patch(ctx, 'team-a', 'demo', (cur) => ({ ...cur, status: { ...(cur.status as object), pendingChanges: 3 } }), opts, 'status');
  assert.equal((patched.object.status as Record<string, unknown>).pendingChanges, 3);
});

test('registry watch: events after a resourceVersion; an expired one is 410 Gone', async (t) => {
  const store = await createEmbeddedStore({ eventLogRetention: 2, progressIntervalMs: 50 });
  t.after(() => store.close());
  const r = new Registry(gitTargets, store);
  const first = (await r.create(ctx, 'a', { ...structuredClone(gt), metadata: { name: 'one' } }, opts)).object;
  const seen: string[] = [];
  const got = new Promise<void>((resolve) => {
    void r
      .watch(ctx.cluster, 'a', Number(first.metadata.resourceVersion), {
        onEvent: (e) => {
          seen.push(`${e.type} ${e.object.metadata.name}`);
          if (seen.length === 2) resolve();
        },
      })
      .then((h) => t.after(() => h.stop()));
  });
  await r.create(ctx, 'b', { ...structuredClone(gt), metadata: { name: 'elsewhere' } }, opts);
  await r.create(ctx, 'a', { ...structuredClone(gt), metadata: { name: 'two' } }, opts);
  await r.delete(ctx, 'a', 'one', { dryRun: false });
  await Promise.race([got, new Promise((_, rej) => setTimeout(() => rej(new Error('no events within 5 s')), 5000))]);
  assert.deepEqual(seen, ['ADDED two', 'DELETED one']);
  for (let i = 0; i < 4; i++) await r.create(ctx, 'c', { ...structuredClone(gt), metadata: { name: `n${i}` } }, opts);
  const gone = await statusOf(r.watch(ctx.cluster, undefined, 1, { onEvent: () => undefined }));
  assert.equal(gone.code, 410);
  assert.equal(gone.reason, 'Expired');
});

test('a strategy decides server-set fields, status ownership, generation and warnings', async (t) => {
  const store = await createEmbeddedStore();
  t.after(() => store.close());
  const def: ResourceDefinition = {
    group: 'example.com',
    version: 'v1',
    kind: 'Widget',
    listKind: 'WidgetList',
    plural: 'widgets',
    singular: 'widget',
    shortNames: [],
    categories: [],
    namespaced: true,
    statusSubresource: true,
    generation: false,
    schema: envelopeSchema(
      { size: Type.Optional(Type.Integer()), observed: Type.Optional(Type.Integer()), stamp: Type.Optional(Type.String()) },
      'A test kind whose status lives in a top-level field.',
    ),
    columns: [],
    selectableFields: {},
    validateCreate: (o) => (o.size > 10 ? [{ type: 'FieldValueInvalid', field: 'size', value: o.size, detail: 'must be at most 10' }] : []),
    validateUpdate: () => [],
  };
  const r = new Registry(
    def,
    store,
    definitionStrategy(def, {
      statusFields: ['observed'],
      prepareForCreate: (c, o) => void (o.stamp = c.user.username),
      warningsOnCreate: (o) => (o.size === 0 ? ['size 0 widgets do nothing'] : []),
    }),
  );
  const w = { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w' }, size: 0, observed: 5 };
  const made = await r.create(ctx, 'a', w, opts);
  assert.deepEqual(made.warnings, ['size 0 widgets do nothing']);
  assert.equal(made.object.stamp, 'system:reverser-apiserver:controller');
  assert.equal(made.object.observed, undefined, 'the main resource does not write status fields');
  assert.equal(made.object.metadata.generation, undefined, 'no generation for this kind');
  assert.equal((await statusOf(r.create(ctx, 'a', { ...w, metadata: { name: 'big' }, size: 11 }, opts))).code, 422);
  const st = await r.updateStatus(ctx, { ...structuredClone(made.object), size: 9, observed: 7 }, opts);
  assert.equal(st.object.observed, 7);
  assert.equal(st.object.size, 0, 'the status path does not write the rest');
});

test('Registries: lookup by group/version/resource and by plural; the namespace lifecycle only with the sandbox', async (t) => {
  const store = await createEmbeddedStore();
  t.after(() => store.close());
  const plain = new Registries(store, RESOURCES);
  assert.equal(plain.lookup('configbutler.ai', 'v1alpha1', 'gittargets')?.def.kind, 'GitTarget');
  assert.equal(plain.lookup('', 'v1', 'configmaps'), undefined);
  await plain.get('gittargets')!.create(ctx, 'nowhere', structuredClone(gt), opts);

  const sandbox = new Registries(store, [...SANDBOX_RESOURCES, ...RESOURCES], { namespaceLifecycle: { rootCAPem: 'CA' } });
  assert.equal(sandbox.lookup('', 'v1', 'configmaps')?.def.kind, 'ConfigMap');
  assert.equal(sandbox.lookup('apps', 'v1', 'deployments')?.def.kind, 'Deployment');
  const refused = await statusOf(sandbox.get('gittargets')!.create(ctx, 'team-a', { ...structuredClone(gt), metadata: { name: 'x' } }, opts));
  assert.deepEqual(refused, { code: 404, reason: 'NotFound', message: 'namespaces "team-a" not found' });
  await sandbox.get('namespaces')!.create(ctx, '', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'team-a' } }, opts);
  const ca = await sandbox.get('configmaps')!.get(ctx, 'team-a', 'kube-root-ca.crt');
  assert.deepEqual(ca.data, { 'ca.crt': 'CA' });
  await sandbox.get('gittargets')!.create(ctx, 'team-a', { ...structuredClone(gt), metadata: { name: 'x' } }, opts);
  await sandbox.get('namespaces')!.delete(ctx, '', 'team-a', { dryRun: false });
  assert.deepEqual((await sandbox.get('gittargets')!.list(ctx.cluster, 'team-a')).items, []);
  assert.deepEqual((await sandbox.get('configmaps')!.list(ctx.cluster, 'team-a')).items, []);
});
