// The fact store (src/attribution/facts-store.ts) on both backends: tiers, idempotence, stats, TTL,
// restarts (embedded data dir, Redis), two processes on one Redis, and a Redis outage.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createEmbeddedStore } from '../../src/storage/embedded.js';
import { createRedisStore } from '../../src/storage/redis/store.js';
import type { Store } from '../../src/storage/types.js';
import { StoreFacts } from '../../src/attribution/facts-store.js';
import type { AuditFact, FactQuery } from '../../src/attribution/types.js';
import { startRedis, type RedisServer } from '../support/redis.js';
import { withDeadline } from '../support/deadline.js';

let redis: RedisServer | undefined;
let prefixes = 0;
test.after(() => redis?.stop());

function fact(over: Partial<AuditFact> = {}): AuditFact {
  return {
    route: 'hosting',
    auditID: 'a1',
    verb: 'update',
    group: '',
    resource: 'configmaps',
    namespace: 'team-a',
    name: 'cm',
    uid: 'u-1',
    resourceVersion: '100',
    user: { username: 'alice', extra: { 'configbutler.ai/claims/email': ['alice@example.com'] } },
    time: '2026-11-30T08:00:00.000000Z',
    ...over,
  };
}

function query(over: Partial<FactQuery> = {}): FactQuery {
  return { route: 'hosting', group: '', resource: 'configmaps', namespace: 'team-a', name: 'cm', uid: 'u-1', resourceVersion: '100', removal: false, ...over };
}

interface Backend {
  name: string;
  open(t: TestContext, o?: { ttlMs?: number }): Promise<{ facts: StoreFacts; store: Store; reopen(): Promise<StoreFacts>; peer(): Promise<StoreFacts> }>;
}

const embedded: Backend = {
  name: 'embedded',
  async open(t, o = {}) {
    const dir = mkdtempSync(join(tmpdir(), 'facts-'));
    // Snapshots every 2 log records: restarts read snapshots as well as log lines.
    let store = await createEmbeddedStore({ dataDir: dir, snapshotEvery: 2 });
    // Close first, then remove: snapshots are written in the background (src/storage/durable-log.ts),
    // so removing the directory under an open store races with the file a snapshot is writing.
    t.after(async () => {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    });
    return {
      facts: new StoreFacts({ store, ttlMs: o.ttlMs }),
      store,
      async reopen() {
        await store.close();
        store = await createEmbeddedStore({ dataDir: dir, snapshotEvery: 2 });
        return new StoreFacts({ store, ttlMs: o.ttlMs });
      },
      peer: () => Promise.reject(new Error('the embedded store is one process')),
    };
  },
};

const redisBackend: Backend = {
  name: 'redis',
  async open(t, o = {}) {
    redis ??= await startRedis();
    const url = redis.url;
    const keyPrefix = `facts${++prefixes}`;
    const stores: Store[] = [];
    const mk = async () => {
      const s = await createRedisStore({ url, keyPrefix });
      stores.push(s);
      return s;
    };
    t.after(() => Promise.all(stores.map((s) => s.close())));
    let store = await mk();
    return {
      facts: new StoreFacts({ store, ttlMs: o.ttlMs }),
      store,
      async reopen() {
        await store.close();
        store = await mk();
        return new StoreFacts({ store, ttlMs: o.ttlMs });
      },
      peer: async () => new StoreFacts({ store: await mk(), ttlMs: o.ttlMs }),
    };
  },
};

for (const b of [embedded, redisBackend]) {
  test(`${b.name}: a write is found only by its exact (uid, resourceVersion); stats count it once`, async (t) => {
    const { facts } = await b.open(t);
    await facts.put([fact()]);
    await facts.put([fact()]); // the same event posted again
    const m = await facts.find(query());
    assert.equal(m?.tier, 'exact');
    assert.equal(m?.fact.user.username, 'alice');
    assert.deepEqual(m?.fact.user.extra, { 'configbutler.ai/claims/email': ['alice@example.com'] });
    assert.equal(await facts.find(query({ resourceVersion: '101' })), undefined, 'another version has no author');
    assert.equal(await facts.find(query({ route: 'other' })), undefined, 'routes are separate');
    assert.equal(await facts.find(query({ resource: 'secrets' })), undefined, 'resources are separate');
    assert.deepEqual(await facts.stats('hosting'), { count: 1, lastFactTime: '2026-11-30T08:00:00.000Z' });
    assert.deepEqual(await facts.stats('other'), { count: 0 });
  });

  test(`${b.name}: the first claim of a version stays (a no-op patch answered with that version does not take it)`, async (t) => {
    const { facts } = await b.open(t);
    await facts.put([fact()]);
    await facts.put([fact({ auditID: 'a2', verb: 'patch', user: { username: 'mallory' } })]);
    assert.equal((await facts.find(query()))?.fact.user.username, 'alice');
  });

  test(`${b.name}: removals: delete by uid, then deletecollection membership, then by name, then the latest write`, async (t) => {
    const { facts } = await b.open(t);
    const removal = query({ resourceVersion: '', removal: true });
    // Only writes so far: the latest write (by resourceVersion, whatever the arrival order) is the fallback.
    await facts.put([fact({ auditID: 'w2', resourceVersion: '120', user: { username: 'bob' } })]);
    await facts.put([fact({ auditID: 'w1', resourceVersion: '110', user: { username: 'alice' } })]);
    let m = await facts.find(removal);
    assert.deepEqual([m?.tier, m?.fact.user.username], ['latest_write', 'bob']);
    // A create/update never falls through to the latest write.
    assert.equal(await facts.find(query({ resourceVersion: '130' })), undefined);
    // A delete by name only (no uid in the event).
    await facts.put([fact({ auditID: 'd0', verb: 'delete', uid: '', resourceVersion: '', user: { username: 'dora' } })]);
    m = await facts.find(removal);
    assert.deepEqual([m?.tier, m?.fact.user.username], ['delete_name', 'dora']);
    // A deletecollection that listed the uid.
    await facts.put([fact({ auditID: 'dc', verb: 'deletecollection', name: '', uid: '', resourceVersion: '', uids: ['u-0', 'u-1'], user: { username: 'carol' } })]);
    m = await facts.find(removal);
    assert.deepEqual([m?.tier, m?.fact.user.username, m?.fact.uids], ['deletecollection_uid', 'carol', ['u-0', 'u-1']]);
    // The object's own delete by uid wins over all of them.
    await facts.put([fact({ auditID: 'd1', verb: 'delete', resourceVersion: '140', user: { username: 'erin' } })]);
    m = await facts.find(removal);
    assert.deepEqual([m?.tier, m?.fact.user.username], ['delete_uid', 'erin']);
    // With the resourceVersion of the deletion, it is exact.
    m = await facts.find(query({ resourceVersion: '140', removal: true }));
    assert.deepEqual([m?.tier, m?.fact.user.username], ['exact', 'erin']);
    // A delete by name of an earlier object with the same name is not this object's.
    const other = query({ uid: 'u-9', resourceVersion: '', removal: true });
    await facts.put([fact({ auditID: 'd9', verb: 'delete', uid: 'u-8', resourceVersion: '150', user: { username: 'fred' } })]);
    assert.equal(await facts.find(other), undefined);
    assert.equal((await facts.stats('hosting')).count, 6);
  });

  test(`${b.name}: facts survive a restart`, async (t) => {
    const { facts, reopen } = await b.open(t);
    // Three batches: with snapshots every 2 records, the restart reads a snapshot and a log line.
    await facts.put([fact()]);
    await facts.put([fact({ auditID: 'dc', verb: 'deletecollection', name: '', uid: '', resourceVersion: '', uids: ['u-5'] })]);
    await facts.put([fact({ auditID: 'dup-of-a1' , user: { username: 'late' } })]);
    const again = await reopen();
    assert.equal((await again.find(query()))?.fact.user.username, 'alice');
    assert.equal((await again.find(query({ uid: 'u-5', resourceVersion: '', removal: true })))?.tier, 'deletecollection_uid');
    assert.deepEqual(await again.stats('hosting'), { count: 3, lastFactTime: '2026-11-30T08:00:00.000Z' });
  });

  test(`${b.name}: facts expire after their TTL, also across a restart`, async (t) => {
    const { facts, reopen } = await b.open(t, { ttlMs: 700 });
    await facts.put([fact()]);
    assert.equal((await facts.find(query()))?.tier, 'exact');
    await new Promise((r) => setTimeout(r, 900));
    assert.equal(await facts.find(query()), undefined);
    assert.deepEqual(await facts.stats('hosting'), { count: 0 });
    const again = await reopen();
    assert.equal(await again.find(query()), undefined);
    assert.deepEqual(await again.stats('hosting'), { count: 0 });
  });

  test(`${b.name}: onFacts tells local listeners which route got facts`, async (t) => {
    const { facts } = await b.open(t);
    const seen: string[] = [];
    const off = facts.onFacts((r) => seen.push(r));
    await facts.put([fact(), fact({ route: 'edge-1', auditID: 'x' })]);
    off();
    await facts.put([fact({ auditID: 'y' })]);
    assert.deepEqual(seen.sort(), ['edge-1', 'hosting']);
  });
}

test('redis: two processes on one Redis see each other\'s facts', async (t) => {
  const { facts, peer } = await redisBackend.open(t);
  const other = await peer();
  await facts.put([fact()]);
  assert.equal((await other.find(query()))?.fact.user.username, 'alice');
  await other.put([fact({ auditID: 'b', resourceVersion: '101', user: { username: 'bob' } })]);
  assert.equal((await facts.find(query({ resourceVersion: '101' })))?.fact.user.username, 'bob');
  assert.equal((await facts.stats('hosting')).count, 2);
});

test('redis: an outage fails put with Unavailable and leaves nothing half-written', async (t) => {
  const { facts } = await redisBackend.open(t);
  redis!.pause();
  try {
    await assert.rejects(withDeadline(facts.put([fact()]), 'put to fail while Redis hangs', 15_000), (e: Error & { code?: string }) => e.code === 'Unavailable');
  } finally {
    redis!.resume();
  }
  // The command may have reached Redis before it froze (the reply was what timed out): then it ran
  // whole, as one script. Either every key of the fact and its count are there, or none is.
  const exact = await facts.find(query());
  const latest = await facts.find(query({ resourceVersion: '', removal: true }));
  const { count } = await facts.stats('hosting');
  assert.ok(
    (exact?.tier === 'exact' && latest?.tier === 'latest_write' && count === 1) || (exact === undefined && latest === undefined && count === 0),
    `half-written: exact ${exact?.tier}, latest ${latest?.tier}, count ${count}`,
  );
  // The sender retries (it got a 500); the retry is the same fact.
  await facts.put([fact()]);
  assert.equal((await facts.find(query()))?.tier, 'exact');
  assert.equal((await facts.stats('hosting')).count, 1);
});

test('redis: with Redis down, put fails with Unavailable and nothing is written', async (t) => {
  const { facts } = await redisBackend.open(t);
  await redis!.kill();
  try {
    await assert.rejects(withDeadline(facts.put([fact()]), 'put to fail while Redis is down', 15_000), (e: Error & { code?: string }) => e.code === 'Unavailable');
  } finally {
    await redis!.restart();
  }
});
