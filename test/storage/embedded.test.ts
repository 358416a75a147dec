import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, readFile, appendFile, readdir, stat, cp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createEmbeddedStore, type EmbeddedStoreOptions } from '../../src/storage/embedded.js';
import type { Store } from '../../src/storage/types.js';
import { CM, GT, Collector, cm, key, rvOf, runStoreContract, type FixtureOptions } from './contract.js';

async function tempDir(t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'store-embedded-'));
  t.after(() => rm(dir, { recursive: true, force: true, maxRetries: 5 })); // retried: a background snapshot may still be writing (src/storage/durable-log.ts)
  return dir;
}

async function open(t: TestContext, o: EmbeddedStoreOptions): Promise<Store> {
  const s = await createEmbeddedStore({ freezeObjects: true, ...o });
  t.after(() => s.close());
  return s;
}

runStoreContract('embedded', async (t, opts: FixtureOptions = {}) => {
  const dataDir = await tempDir(t);
  const o: EmbeddedStoreOptions = { dataDir, eventLogRetention: opts.retention, progressIntervalMs: opts.progressIntervalMs };
  let store = await open(t, o);
  return {
    store,
    async reopen() {
      await store.close();
      store = await open(t, o);
      return store;
    },
  };
});

test('embedded: memory only without a data dir', async (t) => {
  const s = await open(t, {});
  await s.create(CM, key('a'), cm('a'));
  assert.equal((await s.list(CM)).items.length, 1);
  assert.equal(s.kind, 'embedded');
  assert.equal(s.unhealthyReason(), undefined);
});

test('embedded: stored objects are immutable', async (t) => {
  const s = await open(t, {});
  const o = await s.create(CM, key('a'), cm('a', 'default', { x: '1' }));
  assert.throws(() => {
    (o.data as Record<string, string>).x = '2';
  }, TypeError);
});

test('embedded: a torn last log line is ignored and cut off', async (t) => {
  const dataDir = await tempDir(t);
  const s1 = await createEmbeddedStore({ dataDir, snapshotEvery: 1_000_000 });
  const a = await s1.create(CM, key('a'), cm('a'));
  // Simulate a crash: copy the directory as it is on disk now (close() would snapshot), then
  // append half a record to the copy.
  const crashed = await tempDir(t);
  await cp(join(dataDir, 'store'), join(crashed, 'store'), { recursive: true });
  await s1.close();
  const log = join(crashed, 'store', 'log.jsonl');
  await appendFile(log, '{"s":99,"op":"put","r":"/configmaps","k":["_","default","b"],"t":"ADD');
  const s2 = await open(t, { dataDir: crashed, snapshotEvery: 1_000_000 });
  assert.deepEqual(await s2.get(CM, key('a')), a);
  assert.equal(await s2.get(CM, key('b')), undefined);
  const b = await s2.create(CM, key('b'), cm('b'));
  assert.equal(rvOf(b), rvOf(a) + 1);
  const lines = (await readFile(log, 'utf8')).split('\n').filter(Boolean);
  assert.equal(lines.length, 3); // the header naming the snapshot, then a and b
  for (const l of lines) JSON.parse(l);
});

test('embedded: snapshots truncate the log and keep the state', async (t) => {
  const dataDir = await tempDir(t);
  const s1 = await createEmbeddedStore({ dataDir, snapshotEvery: 50 });
  await Promise.all(Array.from({ length: 120 }, (_, i) => s1.create(GT, key(`g${i}`, 'ns', `c${i % 3}`), cm(`g${i}`, 'ns'))));
  await s1.acquireLease('x', 'me', 60_000);
  const rv = await s1.currentRV();
  const items = (await s1.list(GT)).items;
  // Snapshots are written in the background, after the batch that crossed the count.
  await s1.durableSettled();
  const log = join(dataDir, 'store', 'log.jsonl');
  assert.ok((await readFile(log, 'utf8')).split('\n').filter(Boolean).length < 120);
  assert.ok((await readdir(join(dataDir, 'store'))).includes('snapshot.json'));
  // Reopen without close(): snapshot + remaining log lines.
  const s2 = await open(t, { dataDir });
  assert.equal(await s2.currentRV(), rv);
  assert.deepEqual((await s2.list(GT)).items, items);
  assert.equal(await s2.acquireLease('x', 'other', 1000), null);
  await s1.close();
});

/** write(2)-family calls this process made so far (Linux /proc/self/io; counts every thread). */
async function writeSyscalls(): Promise<number> {
  const m = /^syscw: (\d+)$/m.exec(await readFile('/proc/self/io', 'utf8'));
  assert.ok(m, '/proc/self/io has no syscw line');
  return Number(m[1]);
}

test('embedded: group commit batches concurrent writes', async (t) => {
  const dataDir = await tempDir(t);
  const store = await createEmbeddedStore({ freezeObjects: true, dataDir });
  t.after(() => store.close());
  const n = 2000;
  // Group commit means one write (and one fdatasync) per batch, not per record: 2,000 concurrent
  // creates must take fewer batches than records. Counted by the log itself (write(2) calls of the
  // whole process also count the thread pool's wake-ups, which a loaded machine pushed past n).
  const batchesBefore = store.durableBatches();
  const writesBefore = await writeSyscalls();
  const t0 = performance.now();
  await Promise.all(Array.from({ length: n }, (_, i) => store.create(CM, key(`o${i}`), cm(`o${i}`, 'default', { i: String(i) }))));
  const ms = performance.now() - t0;
  const batches = store.durableBatches() - batchesBefore;
  const writes = (await writeSyscalls()) - writesBefore;
  t.diagnostic(`${n} concurrent durable creates: ${ms.toFixed(0)} ms (${((n / ms) * 1000).toFixed(0)}/s), ${batches} batches, ${writes} write calls`);
  assert.ok(batches > 0 && batches < n / 2, `${batches} batches for ${n} concurrent creates: the log does not batch them`);
  assert.ok((await stat(join(dataDir, 'store', 'log.jsonl'))).size > 0);
  assert.equal((await store.list(CM)).items.length, n);
});


test('embedded: fan-out of one event to 1,000 watchers is cheap', async (t) => {
  const s = await open(t, {});
  const rv0 = await s.currentRV();
  const n = 1000;
  const samples: number[] = [];
  let got = 0;
  let started = 0;
  let done: () => void = () => {};
  const handles = await Promise.all(
    Array.from({ length: n }, () =>
      s.watch(GT, { fromRV: rv0 }, {
        onEvent: () => {
          if (++got === n) done();
        },
      }),
    ),
  );
  t.after(() => handles.forEach((h) => h.stop()));
  await new Promise((r) => setImmediate(r));
  for (let i = 0; i < 200; i++) {
    got = 0;
    const all = new Promise<void>((r) => (done = r));
    started = performance.now();
    await s.create(GT, key(`e${i}`), cm(`e${i}`));
    await all;
    samples.push(performance.now() - started);
  }
  samples.sort((a, b) => a - b);
  const p99 = samples[Math.floor(samples.length * 0.99)]!;
  t.diagnostic(`1,000-watcher fan-out: p50 ${samples[100]!.toFixed(3)} ms, p99 ${p99.toFixed(3)} ms`);
  assert.ok(p99 < 100, `p99 ${p99} ms`);
});

test('embedded: watchers end cleanly on close', async () => {
  const s = await createEmbeddedStore({});
  const c = new Collector();
  await s.watch(CM, { fromRV: 0 }, c.cb);
  await s.close();
  assert.equal(c.closed?.code, 'Unavailable');
  await assert.rejects(s.create(CM, key('a'), cm('a')), { code: 'Unavailable' });
});
