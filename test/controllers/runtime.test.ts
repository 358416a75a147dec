// The controller runtime: work queue semantics, leases with fencing across keepers, informer
// against a real store (durable-only delivery, re-list after the backend restarts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createStore, type KubeObject } from '../../src/storage/index.js';
import { Informer, LeaseKeeper, WorkQueue } from '../../src/controllers/runtime/index.js';
import { startRedis } from '../support/redis.js';
import { tempDir, waitFor } from './harness.js';

const RES = { group: 'configbutler.ai', resource: 'gittargets' };
const obj = (name: string, v = '1'): KubeObject => ({ apiVersion: 'configbutler.ai/v1alpha1', kind: 'GitTarget', metadata: { name, namespace: 'ns' }, spec: { v } });
const key = (name: string) => ({ cluster: '_', namespace: 'ns', name });

test('work queue: de-duplicates, one worker per key, re-runs a key added while running, backs off on failure', { timeout: 10_000 }, async () => {
  const runs: string[] = [];
  let fail = 2;
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const q = new WorkQueue(
    async (k) => {
      runs.push(k);
      if (k === 'slow' && runs.filter((x) => x === 'slow').length === 1) await gate;
      if (k === 'flaky' && fail-- > 0) throw new Error('boom');
    },
    { name: 'test', concurrency: 1, baseDelayMs: 20 },
  );
  q.add('slow');
  q.add('a'); // queued behind slow (one worker): three adds, one run
  q.add('a');
  q.add('a');
  await waitFor('slow to run', () => runs.includes('slow'), 2_000, 5);
  q.add('slow'); // while running: runs once more afterwards, not concurrently
  q.add('slow');
  release();
  q.add('flaky');
  await waitFor('flaky to succeed', () => runs.filter((x) => x === 'flaky').length === 3, 5_000, 10);
  await q.drained();
  assert.deepEqual(runs.filter((x) => x === 'a'), ['a']);
  assert.deepEqual(runs.filter((x) => x === 'slow'), ['slow', 'slow']);
  await q.stop();
});

test('leases: one holder at a time; release hands over with a higher token and fences the old one', { timeout: 10_000 }, async () => {
  const store = await createStore({ storage: 'embedded' });
  // Outside the live members (member: false) each keeper counts every GitTarget as its own, so this
  // tests the lease alone: two replicas that both want one (views differ during a rebalance).
  // Sharing by ownership: test/unit/replica-shards.test.ts.
  const a = new LeaseKeeper(store, { holder: 'a', ttlMs: 300, member: false });
  const b = new LeaseKeeper(store, { holder: 'b', ttlMs: 300, member: false });
  const la = await a.acquire('gittarget/x');
  assert.ok(la);
  assert.equal(await b.acquire('gittarget/x'), undefined);
  await new Promise((r) => setTimeout(r, 500)); // past the TTL: a's heartbeats keep its membership, and the lease with it
  assert.equal(await b.acquire('gittarget/x'), undefined);
  assert.equal(await la.check(), true);
  await a.release('gittarget/x');
  const lb = await b.acquire('gittarget/x');
  assert.ok(lb && lb.token > la.token);
  assert.equal(await la.check(), false);
  // Claims: the lease stays while any claimant in the process still needs it.
  await b.acquire('gittarget/y', 'mirror');
  const ly = await b.acquire('gittarget/y', 'windows');
  await b.release('gittarget/y', 'windows');
  assert.equal(await ly!.check(), true);
  assert.equal(await a.acquire('gittarget/y'), undefined);
  await b.release('gittarget/y', 'mirror');
  assert.equal(await ly!.check(), false);
  assert.ok(await a.acquire('gittarget/y'));
  await a.stop();
  await b.stop();
  await store.close();
});

test('informer: delivers an event only once it is durable; lists, then watches', { timeout: 10_000 }, async (t) => {
  const dir = tempDir(t, 'informer-');
  const store = await createStore({ storage: 'embedded', dataDir: dir });
  t.after(() => store.close());
  await store.create(RES, key('one'), obj('one'));
  const inf = new Informer(store, RES);
  const seen: string[] = [];
  inf.on({
    upsert: (o) => {
      // The write that produced this event is on disk already (the store's log, fsync'ed).
      const log = readFileSync(join(dir, 'store', 'log.jsonl'), 'utf8');
      seen.push(`${o.metadata.name}@${o.metadata.resourceVersion}:${log.includes(`"resourceVersion":"${o.metadata.resourceVersion}"`)}`);
    },
  });
  await inf.start();
  t.after(() => inf.stop());
  await Promise.all(Array.from({ length: 20 }, (_, i) => store.create(RES, key(`o${i}`), obj(`o${i}`))));
  await waitFor('21 objects', () => inf.list().length === 21);
  assert.equal(seen.length, 21);
  assert.ok(seen.every((s) => s.endsWith(':true')), seen.join(' '));
});

test('informer: the backend restarts; the watch ends, the informer re-lists and keeps up', { timeout: 30_000 }, async (t) => {
  const redis = await startRedis({ appendonly: true });
  t.after(() => redis.stop());
  const store = await createStore({ storage: 'redis', redisUrl: redis.url });
  t.after(() => store.close());
  await store.create(RES, key('a'), obj('a'));
  const inf = new Informer(store, RES, { relistDelayMs: 50 });
  await inf.start();
  t.after(() => inf.stop());
  await redis.kill();
  await new Promise((r) => setTimeout(r, 300));
  await redis.restart();
  await waitFor('a write after the restart', async () => {
    await store.create(RES, key('b'), obj('b')).catch(() => undefined);
    return inf.get('_/ns/b') !== undefined;
  }, 20_000, 300);
  const cur = await store.get(RES, key('a'));
  await store.update(RES, key('a'), obj('a', '2'), Number(cur!.metadata.resourceVersion));
  await waitFor('the update', () => (inf.get('_/ns/a')?.spec as { v: string }).v === '2', 10_000);
});
