// The versions of one stored object share what their writes did not change, and every empty
// fieldsV1 leaf is the one frozen LEAF (src/storage/shared-values.ts): on the Redis follower's
// parsed events, on its reload, on the embedded store's writes and on its replay after a restart.
// Sharing must never show: every version serializes to exactly what was written.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createEmbeddedStore } from '../../src/storage/embedded.js';
import { createRedisStore } from '../../src/storage/redis/store.js';
import { LEAF, SHARE_BUDGET, shareWithPrevious } from '../../src/storage/shared-values.js';
import type { KubeObject, Store, StoreEvent } from '../../src/storage/types.js';
import { startRedis, type RedisServer } from '../support/redis.js';
import { Collector, GT, key, rvOf } from './contract.js';

let server: RedisServer | undefined;
test.after(() => server?.stop());

function gitTarget(status: Record<string, unknown>, spec: Record<string, unknown> = { branch: 'main', path: 'tenants/a' }): KubeObject {
  return {
    apiVersion: 'configbutler.ai/v1alpha1',
    kind: 'GitTarget',
    metadata: {
      name: 'a',
      namespace: 'default',
      labels: { team: 'a' },
      managedFields: [
        { manager: 'kubectl', operation: 'Update', apiVersion: 'configbutler.ai/v1alpha1', fieldsType: 'FieldsV1', fieldsV1: { 'f:spec': { '.': {}, 'f:branch': {}, 'f:path': {} } } },
        { manager: 'reverser', operation: 'Update', apiVersion: 'configbutler.ai/v1alpha1', subresource: 'status', fieldsType: 'FieldsV1', fieldsV1: { 'f:status': { 'f:conditions': { 'k:{"type":"Ready"}': { '.': {}, 'f:status': {}, 'f:type': {} } } } } },
      ],
    },
    spec,
    status,
  };
}

const copy = (o: KubeObject): KubeObject => JSON.parse(JSON.stringify(o)) as KubeObject;
/** The JSON of a stored object without the resourceVersion the store stamped (each backend puts it elsewhere). */
function written(o: KubeObject): string {
  const { resourceVersion: _rv, ...metadata } = o.metadata;
  return JSON.stringify({ ...o, metadata });
}

/** Every empty object under a managedFields entry's fieldsV1, and whether each is LEAF. */
function leaves(o: KubeObject): { count: number; shared: number } {
  const out = { count: 0, shared: 0 };
  const walk = (v: unknown): void => {
    if (v === null || typeof v !== 'object') return;
    const ks = Object.keys(v);
    if (ks.length === 0) {
      out.count++;
      if (v === LEAF) out.shared++;
    }
    for (const k of ks) walk((v as Record<string, unknown>)[k]);
  };
  for (const e of (o.metadata.managedFields ?? []) as { fieldsV1?: unknown }[]) walk(e.fieldsV1);
  return out;
}

/** Writes a GitTarget and two status writes; returns what was written and the RV of the first. */
async function writeVersions(store: Store): Promise<{ json: string[]; firstRV: number }> {
  const v1 = gitTarget({ conditions: [{ type: 'Ready', status: 'False' }] });
  const c1 = await store.create(GT, key('a'), copy(v1));
  const v2 = gitTarget({ conditions: [{ type: 'Ready', status: 'True' }] });
  const c2 = await store.update(GT, key('a'), copy(v2), rvOf(c1));
  // Same spec fields, another key order: not shared, since it would serialize differently.
  const v3 = gitTarget({ conditions: [{ type: 'Ready', status: 'True' }] }, { path: 'tenants/a', branch: 'main' });
  await store.update(GT, key('a'), copy(v3), rvOf(c2));
  return { json: [v1, v2, v3].map((o) => JSON.stringify(o)), firstRV: rvOf(c1) };
}

async function history(t: TestContext, store: Store, fromRV: number): Promise<StoreEvent[]> {
  const c = new Collector();
  const h = await store.watch(GT, { fromRV }, c.cb);
  t.after(() => h.stop());
  await c.next(3);
  return c.events;
}

function assertShared(events: StoreEvent[], json: string[]): void {
  assert.deepEqual(events.map((e) => e.type), ['ADDED', 'MODIFIED', 'MODIFIED']);
  // Exactly what was written, key order included.
  assert.deepEqual(events.map((e) => written(e.object)), json);
  const [a, b, c] = events.map((e) => e.object) as [KubeObject, KubeObject, KubeObject];
  for (const o of [a, b, c]) assert.deepEqual(leaves(o), { count: 6, shared: 6 });
  // What the status write left alone is the previous version's instance...
  assert.equal(b.spec, a.spec);
  assert.equal(b.metadata.labels, a.metadata.labels);
  assert.equal(b.metadata.managedFields, a.metadata.managedFields);
  // ...what it changed is not, nor a reordered spec.
  assert.notEqual(b.status, a.status);
  assert.equal((b.status as { conditions: unknown[] }).conditions.length, 1);
  assert.notEqual(c.spec, b.spec);
  assert.equal(c.status, b.status);
  assert.equal(events[1]!.prevObject, a);
}

test('redis: each parsed version shares the unchanged parts of the one before it, live and after a reload', { timeout: 30_000 }, async (t) => {
  server ??= await startRedis();
  const open = async () => {
    const s = await createRedisStore({ url: server!.url, keyPrefix: 'shared', freezeObjects: true });
    t.after(() => s.close());
    return s;
  };
  const store = await open();
  const { json, firstRV } = await writeVersions(store);
  assertShared(await history(t, store, firstRV - 1), json);
  // A second store reads the same log from Redis at start-up (the follower's reload).
  const fresh = await open();
  const events = await history(t, fresh, firstRV - 1);
  assertShared(events, json);
  assert.equal(await fresh.get(GT, key('a')), events[2]!.object);
});

test('embedded: each written version shares the unchanged parts of the one before it, and so does a loaded snapshot', { timeout: 30_000 }, async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'store-shared-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const first = await createEmbeddedStore({ dataDir: dir, freezeObjects: true });
  const { json, firstRV } = await writeVersions(first);
  assertShared(await history(t, first, firstRV - 1), json);
  await first.close();
  // Closed, the store is one snapshot: loaded, its objects share the leaf too.
  const again = await createEmbeddedStore({ dataDir: dir, freezeObjects: true });
  t.after(() => again.close());
  const loaded = (await again.get(GT, key('a')))!;
  assert.equal(written(loaded), json[2]);
  assert.deepEqual(leaves(loaded), { count: 6, shared: 6 });
});

test('sharing stops at its budget: a larger object keeps its own copy past it, and serializes the same', () => {
  const big = (): KubeObject => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a', labels: { x: 'y' } }, spec: { items: Array.from({ length: SHARE_BUDGET }, (_, i) => ({ i })) } });
  const prev = shareWithPrevious(big(), undefined);
  const next = shareWithPrevious(big(), prev);
  // Visited before the budget ran out: shared.
  assert.equal(next.metadata.labels, prev.metadata.labels);
  // The list alone is over the budget: walked not at all, not even its first item.
  const items = (o: KubeObject) => (o.spec as { items: unknown[] }).items;
  assert.notEqual(items(next), items(prev));
  assert.notEqual(items(next)[0], items(prev)[0]);
  assert.equal(JSON.stringify(next), JSON.stringify(big()));
  // Well within the budget: all of it shared.
  const small = (): KubeObject => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a' }, spec: { items: Array.from({ length: 100 }, (_, i) => ({ i })) } });
  const p2 = shareWithPrevious(small(), undefined);
  assert.equal(shareWithPrevious(small(), p2).spec, p2.spec);
});
