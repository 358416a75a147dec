// Registry semantics against the real embedded store (memory only).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Registry, type WriteOptions } from '../../src/registry/registry.js';
import { gitTargets, commitRequests } from '../../src/api/resources.js';
import { createEmbeddedStore } from '../../src/storage/embedded.js';
import { DEFAULT_CLUSTER } from '../../src/storage/types.js';
import { StatusError } from '../../src/api/status.js';
import { commitRequestStrategy } from '../../src/registry/commitrequest-strategy.js';
import type { Authorizer } from '../../src/auth/types.js';

const ctx = { cluster: DEFAULT_CLUSTER, user: { username: 'alice', groups: ['devs', 'system:authenticated'] } };
const opts: WriteOptions = { dryRun: false, fieldManager: 'test', fieldValidation: 'Strict' };

function gt(name: string, extra: Record<string, unknown> = {}) {
  return {
    apiVersion: 'configbutler.ai/v1alpha1',
    kind: 'GitTarget',
    metadata: { name },
    spec: { repository: { url: 'local:config' }, branch: 'main', path: 'tenants/a/', ...extra },
  };
}

async function statusOf(p: Promise<unknown>): Promise<{ code: number; reason?: string; message?: string; causes?: unknown }> {
  try {
    await p;
  } catch (e) {
    if (e instanceof StatusError) return { code: e.status.code, reason: e.status.reason, message: e.status.message, causes: e.status.details?.causes };
    throw e;
  }
  throw new Error('expected a Status error');
}

test('create sets server fields, applies defaults, normalizes the path, drops status', async (t) => {
  const store = await createEmbeddedStore();
  t.after(() => store.close());
  const r = new Registry(gitTargets, store);
  const { object } = await r.create(ctx, 'team-a', { ...gt('demo'), status: { pendingChanges: 3 } }, opts);
  assert.match(object.metadata.uid!, /^[0-9a-f-]{36}$/);
  assert.match(object.metadata.creationTimestamp!, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  assert.equal(object.metadata.generation, 1);
  assert.equal(object.metadata.namespace, 'team-a');
  assert.equal((object.spec as any).path, 'tenants/a');
  assert.deepEqual((object.spec as any).commit, { idleSeconds: 5, maxAgeSeconds: 600, mode: 'Auto' });
  assert.equal(object.status, undefined);
  assert.equal((object.metadata.managedFields as any[])[0].manager, 'test');
});

test('validation: unknown fields per fieldValidation, rules, immutability', async (t) => {
  const store = await createEmbeddedStore();
  t.after(() => store.close());
  const r = new Registry(gitTargets, store);
  const unknown = await statusOf(r.create(ctx, 'a', gt('u', { bogusField: 1 }), opts));
  assert.equal(unknown.code, 422);
  assert.equal(unknown.message, 'GitTarget.configbutler.ai "u" is invalid: spec.bogusField: Forbidden: unknown field "spec.bogusField"');
  const warn = await r.create(ctx, 'a', gt('w', { bogusField: 1 }), { ...opts, fieldValidation: 'Warn' });
  assert.deepEqual(warn.warnings, ['unknown field "spec.bogusField"']);
  assert.equal((warn.object.spec as any).bogusField, undefined);
  const ignored = await r.create(ctx, 'a', gt('i', { bogusField: 1 }), { ...opts, fieldValidation: 'Ignore' });
  assert.deepEqual(ignored.warnings, []);

  const bad = await statusOf(
    r.create(ctx, 'a', { ...gt('bad'), spec: { repository: { url: 'git@github.com:x/y.git' }, branch: 'main', path: '../x', resources: [{ group: '', version: 'v1', resource: 'secrets' }] } }, opts),
  );
  assert.equal(bad.code, 422);
  assert.deepEqual(
    (bad.causes as any[]).map((c) => c.field),
    ['spec.repository.url', 'spec.path', 'spec.resources[0].resource'],
  );
  const missing = await statusOf(r.create(ctx, 'a', { ...gt('m'), spec: { branch: 'main', path: '.' } }, opts));
  assert.equal(missing.message, 'GitTarget.configbutler.ai "m" is invalid: spec.repository: Required value');

  const cur = await r.get(ctx, 'a', 'w');
  const changed = structuredClone(cur) as any;
  changed.spec.branch = 'other';
  const imm = await statusOf(r.update(ctx, 'a', 'w', changed, opts, ''));
  assert.equal(imm.code, 422);
  assert.match(imm.message!, /spec\.branch: Invalid value: "other": field is immutable; delete and recreate the GitTarget/);
});

test('generation, status subresource, stale resourceVersion, no-op update', async (t) => {
  const store = await createEmbeddedStore();
  t.after(() => store.close());
  const r = new Registry(gitTargets, store);
  const { object: created } = await r.create(ctx, 'a', gt('g'), opts);
  const withStatus = structuredClone(created) as any;
  withStatus.status = { pendingChanges: 2 };
  const afterStatus = (await r.update(ctx, 'a', 'g', withStatus, opts, 'status')).object;
  assert.equal(afterStatus.metadata.generation, 1);
  assert.deepEqual(afterStatus.status, { pendingChanges: 2 });

  const specChange = structuredClone(afterStatus) as any;
  specChange.spec.suspend = true;
  specChange.status = { pendingChanges: 99 };
  const afterSpec = (await r.update(ctx, 'a', 'g', specChange, opts, '')).object;
  assert.equal(afterSpec.metadata.generation, 2);
  assert.deepEqual(afterSpec.status, { pendingChanges: 2 }, 'main resource writes never change status');

  const stale = await statusOf(r.update(ctx, 'a', 'g', specChange, opts, ''));
  assert.equal(stale.code, 409);
  assert.equal(stale.reason, 'Conflict');

  const noop = (await r.update(ctx, 'a', 'g', structuredClone(afterSpec), opts, '')).object;
  assert.equal(noop.metadata.resourceVersion, afterSpec.metadata.resourceVersion);

  const noRV = structuredClone(afterSpec) as any;
  delete noRV.metadata.resourceVersion;
  const missing = await statusOf(r.update(ctx, 'a', 'g', noRV, opts, ''));
  assert.equal(missing.code, 422);
  assert.match(missing.message!, /metadata\.resourceVersion: Invalid value: "0x0": must be specified for an update/);
});

test('finalizers: delete marks, removing the last finalizer deletes', async (t) => {
  const store = await createEmbeddedStore();
  t.after(() => store.close());
  const r = new Registry(gitTargets, store);
  await r.create(ctx, 'a', { ...gt('f'), metadata: { name: 'f', finalizers: ['example.com/keep'] } }, opts);
  const marked = await r.delete(ctx, 'a', 'f', { dryRun: false });
  assert.ok(marked.metadata.deletionTimestamp);
  const addFinalizer = await statusOf(
    r.patch(ctx, 'a', 'f', (cur) => ({ ...cur, metadata: { ...cur.metadata, finalizers: ['example.com/keep', 'example.com/more'] } }), opts, ''),
  );
  assert.equal(addFinalizer.code, 422);
  await r.patch(ctx, 'a', 'f', (cur) => ({ ...cur, metadata: { ...cur.metadata, finalizers: undefined } }), opts, '');
  const gone = await statusOf(r.get(ctx, 'a', 'f'));
  assert.equal(gone.code, 404);
  assert.equal(gone.message, 'gittargets.configbutler.ai "f" not found');
});

test('dryRun stores nothing; generateName fills a name', async (t) => {
  const store = await createEmbeddedStore();
  t.after(() => store.close());
  const r = new Registry(gitTargets, store);
  const rv = await store.currentRV();
  const { object } = await r.create(ctx, 'a', { ...gt(''), metadata: { generateName: 'gen-' } }, { ...opts, dryRun: true });
  assert.match(object.metadata.name!, /^gen-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
  assert.equal(await store.currentRV(), rv);
  assert.equal((await r.list(DEFAULT_CLUSTER, 'a', 'consistent')).items.length, 0);
});

test('CommitRequest: submitter recorded and never changeable; assert-author checked, fail closed', async (t) => {
  const store = await createEmbeddedStore();
  t.after(() => store.close());
  const asked: unknown[] = [];
  let mode: 'allow' | 'deny' | 'throw' = 'allow';
  const authorizer: Authorizer = {
    async authorize(a) {
      asked.push({ verb: a.verb, resource: a.resource, name: a.name, namespace: a.namespace });
      if (mode === 'throw') throw new Error('hosting cluster unreachable');
      return { decision: mode };
    },
  };
  const r = new Registry(commitRequests, store, commitRequestStrategy(authorizer));
  const cr = (name: string, author?: object) => ({
    apiVersion: 'configbutler.ai/v1alpha1',
    kind: 'CommitRequest',
    metadata: { name },
    spec: { targetRef: { name: 'tenants' }, message: 'Raise the replica count', ...(author ? { author } : {}) },
    status: { submitter: { username: 'mallory', groups: [] } },
  });
  const { object } = await r.create(ctx, 'team-a', cr('one', { name: 'Alice Doe', email: 'alice@example.com' }), opts);
  assert.deepEqual((object.status as any).submitter, { username: 'alice', groups: ['devs', 'system:authenticated'] });
  assert.deepEqual(asked, [{ verb: 'assert-author', resource: 'gittargets', name: 'tenants', namespace: 'team-a' }]);

  const forged = structuredClone(object) as any;
  forged.status.submitter = { username: 'mallory', groups: [] };
  const after = (await r.update(ctx, 'team-a', 'one', forged, opts, 'status')).object as any;
  assert.equal(after.status.submitter.username, 'alice');

  mode = 'deny';
  const denied = await statusOf(r.create(ctx, 'team-a', cr('two', { name: 'A', email: 'a@example.com' }), { ...opts, dryRun: true }));
  assert.equal(denied.code, 403);
  assert.match(denied.message!, /resourceNames: \["tenants"\]/);
  mode = 'throw';
  const failed = await statusOf(r.create(ctx, 'team-a', cr('three', { name: 'A', email: 'a@example.com' }), opts));
  assert.equal(failed.code, 403);
  assert.match(failed.message!, /could not be made/);
  // Without spec.author nothing is asked.
  const n = asked.length;
  await r.create(ctx, 'team-a', cr('four'), opts);
  assert.equal(asked.length, n);

  const specChange = structuredClone(await r.get(ctx, 'team-a', 'four')) as any;
  specChange.spec.message = 'changed';
  const imm = await statusOf(r.update(ctx, 'team-a', 'four', specChange, opts, ''));
  assert.equal(imm.code, 422);
  const ctl = await statusOf(r.create(ctx, 'team-a', { ...cr('five'), spec: { targetRef: { name: 't' }, message: 'a\u0007b' } }, opts));
  assert.equal(ctl.code, 422);
  assert.match(ctl.message!, /spec\.message: Invalid value: "a\\u0007b": must be plain text: no control characters other than newline and tab \(found \\x07 at offset 1\)/);
});

test('an update checks the finalizers and set lists it changes; lists it leaves as stored are not checked again', async (t) => {
  const store = await createEmbeddedStore();
  t.after(() => store.close());
  const r = new Registry(gitTargets, store);
  const resources = (namespaces: string[]) => [{ group: '', version: 'v1', resource: 'configmaps', namespaces }];
  const created = await r.create(ctx, 'a', { ...gt('f', { resources: resources(['x', 'y']) }), metadata: { name: 'f', finalizers: ['example.com/a', 'example.com/b'] } }, opts);
  const update = (finalizers: string[], namespaces: string[], labels?: Record<string, string>) => {
    const o = structuredClone(created.object) as any;
    o.metadata.finalizers = finalizers;
    o.metadata.labels = labels;
    o.spec.resources = resources(namespaces);
    return r.update(ctx, 'a', 'f', o, opts, '');
  };
  const dup = await statusOf(update(['example.com/a', 'example.com/a'], ['x', 'y']));
  // Reported twice, as before this change: once by the finalizer rules, once as a `set` list.
  assert.deepEqual([dup.code, dup.message], [422, 'GitTarget.configbutler.ai "f" is invalid: [metadata.finalizers[1]: Duplicate value: "example.com/a", metadata.finalizers[1]: Duplicate value: "example.com/a"]']);
  const bad = await statusOf(update(['example.com/a', 'Not A Name'], ['x', 'y']));
  assert.equal(bad.code, 422);
  assert.match(bad.message!, /^GitTarget\.configbutler\.ai "f" is invalid: metadata\.finalizers\[1\]: Invalid value: "Not A Name": /);
  const dupNs = await statusOf(update(['example.com/a', 'example.com/b'], ['x', 'x']));
  assert.deepEqual([dupNs.code, dupNs.message], [422, 'GitTarget.configbutler.ai "f" is invalid: spec.resources[0].namespaces[1]: Duplicate value: "x"']);
  const same = await update(['example.com/a', 'example.com/b'], ['x', 'y'], { team: 'a' });
  assert.deepEqual([same.object.metadata.finalizers, same.object.metadata.labels], [['example.com/a', 'example.com/b'], { team: 'a' }]);
});
