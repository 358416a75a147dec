// A lone replica renews for its solo TTL (runtime/leases.ts), seldom, yet a replica that joins
// takes over no later than from any replica: its heartbeat cuts the lone one's membership back to
// the TTL (redis/heartbeat.lua) and writes the member log, which the lone replica's follower
// blocks on (redis/follower.ts), so a live one renews at once and keeps its leases, and a dead
// one's share moves within the TTL. Two stores on one real Redis, as two processes have.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createStore, type Store } from '../../src/storage/index.js';
import { LeaseKeeper } from '../../src/controllers/runtime/leases.js';
import { startRedis, type RedisServer } from '../support/redis.js';
import { until } from '../support/deadline.js';
import { withOverrides } from '../support/overrides.js';

const TTL = 2_000;
const HEARTBEAT = 600;
/** Solo interval: HEARTBEAT × SOLO / TTL = 18 s, far beyond what each step below may take. */
const SOLO = 60_000;
const names = Array.from({ length: 40 }, (_, i) => `gittarget/_/join/t-${i}/0000-${i}`);

async function redisStore(t: TestContext, redis: RedisServer): Promise<Store> {
  const store = await createStore({ storage: 'redis', redisUrl: redis.url, redisKeyPrefix: 'join' });
  t.after(() => store.close().catch(() => undefined));
  return store;
}

/** A keeper whose heartbeats are recorded: [ms since `t0`, TTL sent]. */
function recorded(store: Store, holder: string, t0: number): { keeper: LeaseKeeper; sent: Array<[number, number]> } {
  const sent: Array<[number, number]> = [];
  const s = withOverrides(store, { heartbeat: (hb) => (sent.push([Date.now() - t0, hb.ttlMs]), store.heartbeat(hb)) });
  return { keeper: new LeaseKeeper(s, { holder, ttlMs: TTL, heartbeatMs: HEARTBEAT, soloTtlMs: SOLO }), sent };
}

test('redis: a lone replica is told of a joiner through the member log and renews for the TTL at once, keeping its epoch and leases', { timeout: 30_000 }, async (t) => {
  const redis = await startRedis();
  t.after(() => redis.stop());
  const t0 = Date.now();
  const { keeper: a, sent } = recorded(await redisStore(t, redis), 'a', t0);
  t.after(() => a.stop());
  await a.start();
  const lost: string[] = [];
  a.onLost((n) => lost.push(n));
  for (const n of names) assert.ok(await a.acquire(n), `${n}: a lone replica owns every name`);
  // Alone, a renews for the solo TTL one interval after its first heartbeat, then every 18 s.
  await until(() => sent.some(([, ttl]) => ttl === SOLO), 'a to renew for the solo TTL', 5_000, 20);
  const quiet = sent.length;

  const b = new LeaseKeeper(await redisStore(t, redis), { holder: 'b', ttlMs: TTL, heartbeatMs: HEARTBEAT, soloTtlMs: SOLO });
  t.after(() => b.stop());
  const joinedAt = Date.now() - t0;
  await b.start();
  await until(() => a.members().length === 2, 'a to see b', 5_000, 5);
  const toldMs = Date.now() - t0 - joinedAt;
  t.diagnostic(`a saw b ${toldMs} ms after b's first heartbeat (a's solo interval: 18 s)`);
  assert.ok(toldMs < 2_000, `a saw b after ${toldMs} ms`);
  assert.deepEqual(a.members(), ['a', 'b']);
  // The heartbeat that saw b renewed for the TTL (it was nudged), and from then on one per interval.
  assert.equal(sent[quiet]![1], TTL, `a's first heartbeat after the join: ${JSON.stringify(sent.slice(quiet))}`);
  // Three TTLs later a's membership never lapsed: the same epoch, so every lease it kept is still its own.
  await new Promise((r) => setTimeout(r, 3 * TTL));
  assert.deepEqual(lost, [], 'a lost no lease: its cut membership was renewed before it ran out');
  const mine = names.filter((n) => a.owns(n));
  assert.ok(mine.length > 0 && mine.length < names.length, `a owns ${mine.length} of ${names.length} after the join`);
  for (const n of mine) assert.equal(await a.holds(n)?.check(), true, `${n} still a's, same token`);
  assert.ok(sent.slice(quiet).every(([, ttl]) => ttl === TTL), `every heartbeat since the join is for the TTL: ${JSON.stringify(sent.slice(quiet))}`);
});

test('redis: a lone replica that died is taken over within the TTL, not its solo TTL: the joiner cuts its membership back', { timeout: 30_000 }, async (t) => {
  const redis = await startRedis();
  t.after(() => redis.stop());
  const t0 = Date.now();
  const aStore = await redisStore(t, redis);
  const { keeper: a, sent } = recorded(aStore, 'a', t0);
  t.after(() => a.stop());
  await a.start();
  for (const n of names) assert.ok(await a.acquire(n), n);
  await until(() => sent.some(([, ttl]) => ttl === SOLO), 'a to renew for the solo TTL', 5_000, 20);
  // a dies as a SIGKILLed process does: no release, no leave; its connections close.
  await aStore.close();

  const b = new LeaseKeeper(await redisStore(t, redis), { holder: 'b', ttlMs: TTL, heartbeatMs: HEARTBEAT, soloTtlMs: SOLO });
  t.after(() => b.stop());
  const joined = Date.now();
  await b.start();
  assert.deepEqual(b.members(), ['a', 'b'], 'a is still a member when b joins (its solo TTL had 60 s to run)');
  await until(() => b.members().length === 1, "b to see a's membership expire", 10_000, 20);
  const ms = Date.now() - joined;
  t.diagnostic(`a's share free ${ms} ms after b joined (TTL ${TTL} ms + one interval ${HEARTBEAT} ms; solo TTL ${SOLO} ms)`);
  assert.ok(ms <= TTL + HEARTBEAT + 1_500, `took ${ms} ms`);
  for (const n of names) assert.ok(await b.acquire(n), `${n}: b takes a's lease`);
});
