// How replicas share GitTargets, below the processes: rendezvous hashing (runtime/shards.ts), the
// heartbeat that renews one membership in one store call and with it every lease held
// (runtime/leases.ts over the embedded store), what a membership lost costs, the rebalance when a
// member leaves, and the flags (runtime/replica-flags.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ownerOf } from '../../src/controllers/runtime/shards.js';
import { LeaseKeeper } from '../../src/controllers/runtime/leases.js';
import { parseReplicaFlags } from '../../src/controllers/runtime/replica-flags.js';
import { parseDuration } from '../../src/auth/index.js';
import { createStore } from '../../src/storage/index.js';
import type { Store } from '../../src/storage/types.js';
import { until } from '../support/deadline.js';
import { ManualClock } from '../support/clock.js';
import { withOverrides } from '../support/overrides.js';

const names = Array.from({ length: 3000 }, (_, i) => `gittarget/_/bulk/s-${i}/0000-${i}`);
const shares = (members: string[]) => {
  const m = new Map(members.map((x) => [x, 0]));
  for (const n of names) m.set(ownerOf(n, members)!, m.get(ownerOf(n, members)!)! + 1);
  return m;
};

test('rendezvous hashing: even shares; a join takes only for the newcomer, a leave moves only the leaver\'s', () => {
  const three = shares(['a', 'b', 'c']);
  for (const [m, n] of three) assert.ok(Math.abs(n - 1000) <= 100, `${m}: ${n} of 3000`);
  const four = shares(['a', 'b', 'c', 'd']);
  for (const [m, n] of four) assert.ok(Math.abs(n - 750) <= 75, `${m}: ${n} of 3000 over 4`);
  let moved = 0;
  for (const n of names) {
    const before = ownerOf(n, ['a', 'b', 'c']);
    const after = ownerOf(n, ['a', 'b', 'c', 'd']);
    if (before !== after) {
      moved++;
      assert.equal(after, 'd', `${n} moved from ${before} to ${after}, not to the newcomer`);
    }
    // Member order does not matter: every replica computes the same owner.
    assert.equal(ownerOf(n, ['c', 'a', 'b']), before);
    const left = ownerOf(n, ['a', 'c']);
    if (before !== 'b') assert.equal(left, before, `${n} moved although its owner ${before} stayed`);
  }
  assert.equal(moved, four.get('d'));
  assert.equal(ownerOf('x', []), undefined);
});

/** The embedded store, counting the lease calls the keeper makes. */
async function countingStore(): Promise<{ store: Store; calls: Record<string, number> }> {
  const store = await createStore({ storage: 'embedded' });
  const calls: Record<string, number> = { heartbeat: 0, renewLease: 0, acquireLease: 0, acquireMemberLease: 0 };
  const counted: Partial<Store> = {};
  for (const op of ['heartbeat', 'renewLease', 'acquireLease', 'acquireMemberLease'] as const) {
    (counted as any)[op] = (...a: unknown[]) => {
      calls[op]!++;
      return (store as any)[op](...a);
    };
  }
  return { store: withOverrides(store, counted), calls };
}

test('leases: one heartbeat per interval keeps every held lease; a replica asks only for its own; a leaver\'s share rebalances', { timeout: 20_000 }, async (t) => {
  const { store, calls } = await countingStore();
  t.after(() => store.close());
  const a = new LeaseKeeper(store, { holder: 'a', ttlMs: 600, heartbeatMs: 100 });
  const b = new LeaseKeeper(store, { holder: 'b', ttlMs: 600, heartbeatMs: 100 });
  t.after(() => Promise.all([a.stop(), b.stop()]));
  await a.start();
  await b.start();
  await until(() => a.members().length === 2, 'a to see b', 5_000, 10);
  assert.deepEqual(b.members(), ['a', 'b']);
  const mine = names.slice(0, 200).filter((n) => ownerOf(n, ['a', 'b']) === 'a');
  const theirs = names.slice(0, 200).filter((n) => ownerOf(n, ['a', 'b']) === 'b');
  for (const n of mine) assert.ok(await a.acquire(n), n);
  for (const n of theirs) assert.equal(await a.acquire(n), undefined, `${n} is b's: a does not take it, free as it is`);
  assert.equal(calls.acquireMemberLease, mine.length);
  assert.equal(calls.acquireLease, 0);
  // Ten TTLs later every lease is still a's: kept by heartbeats of the membership alone, about one per 100 ms.
  const before = calls.heartbeat;
  await new Promise((r) => setTimeout(r, 1_000));
  const beats = calls.heartbeat - before;
  t.diagnostic(`${mine.length} leases, ${beats} heartbeat calls of both keepers in 1 s, ${calls.renewLease} renewLease calls`);
  assert.equal(calls.renewLease, 0);
  assert.ok(beats >= 6 && beats <= 24, `${beats} heartbeats of two keepers in 1 s at 100 ms`);
  assert.equal(a.heldCount(), mine.length);
  for (const n of mine) assert.equal(await a.holds(n)!.check(), true, n);

  // a stops: its leases are released and it leaves; b's next heartbeat gives b every name.
  const moved: string[] = [];
  b.onRebalance((ownedBefore) => moved.push(...names.slice(0, 200).filter((n) => !ownedBefore(n) && b.owns(n))));
  await a.stop();
  await until(() => b.members().length === 1, 'b to see a leave', 2_000, 10);
  assert.deepEqual(moved.sort(), [...mine].sort());
  for (const n of mine) assert.ok(await b.acquire(n), `${n} free at once after a's graceful stop`);
});

test('leases: a replica whose membership expired loses every lease: taken over with higher tokens, its fence fails, its next heartbeat drops them', { timeout: 20_000 }, async (t) => {
  const store = await createStore({ storage: 'embedded' });
  t.after(() => store.close());
  // a's heartbeats fail while `stalled` (as if its event loop or its link to the store stopped).
  let stalled = false;
  const aStore = withOverrides(store, {
    heartbeat: (hb) => (stalled ? Promise.reject(new Error('stalled')) : store.heartbeat(hb)),
  });
  // A 2 s TTL: the checks made before a's membership expires have that long on a loaded machine.
  const a = new LeaseKeeper(aStore, { holder: 'a', ttlMs: 2_000, heartbeatMs: 100 });
  const b = new LeaseKeeper(store, { holder: 'b', ttlMs: 2_000, heartbeatMs: 100 });
  t.after(() => Promise.all([a.stop(), b.stop()]));
  await a.start();
  await b.start();
  await until(() => a.members().length === 2 && b.members().length === 2, 'both to see each other', 5_000, 10);
  const mine = names.slice(0, 50).filter((n) => ownerOf(n, ['a', 'b']) === 'a');
  const held = [];
  for (const n of mine) held.push((await a.acquire(n))!);
  assert.equal(a.heldCount(), mine.length);
  // The stall: the first failed heartbeat gives every lease up here (fail closed) ...
  const lost: string[] = [];
  a.onLost((n) => lost.push(n));
  stalled = true;
  await until(() => a.heldCount() === 0, 'a to give its leases up', 2_000, 10);
  assert.deepEqual(lost.sort(), [...mine].sort());
  // ... yet in the store they stay a's until its membership expires: b cannot take one before.
  assert.equal(await store.acquireMemberLease(mine[0]!, 'b', (await store.heartbeat({ member: 'b', ttlMs: 2_000 })).epoch), null);
  // Past the TTL, b sees a gone, owns every name, and takes a's leases with higher tokens.
  await until(() => b.members().length === 1, 'b to see a expire', 8_000, 10);
  for (const [i, n] of mine.entries()) {
    const l = await b.acquire(n);
    assert.ok(l && l.token > held[i]!.token, `${n}: taken over with a higher token`);
    assert.equal(await held[i]!.check(), false, `${n}: the old holder's fence fails`);
  }
  // a comes back with a new membership: it owns half again, and can take only free ones.
  stalled = false;
  await until(() => a.members().length === 2, 'a back among the members', 5_000, 10);
  assert.equal(a.heldCount(), 0);
});

test('leases: a store outage shorter than the TTL (a Redis failover) keeps every lease; fences fail meanwhile; a longer one gives them up before the membership can expire', { timeout: 20_000 }, async (t) => {
  const store = await createStore({ storage: 'embedded' });
  t.after(() => store.close());
  // The keeper's clock moves by hand (its heartbeats and its idea of the TTL); the store's own
  // TTL runs on real time and is far from expiring here (10 s, the test takes well under).
  const clock = new ManualClock();
  let down = false;
  let failed = 0;
  let beats = 0;
  const aStore = withOverrides(store, {
    heartbeat: (hb) => (down ? (failed++, Promise.reject(new Error('connection closed'))) : store.heartbeat(hb).finally(() => beats++)),
    checkLease: (n, tk) => (down ? Promise.reject(new Error('connection closed')) : store.checkLease(n, tk)),
  });
  const a = new LeaseKeeper(aStore, { holder: 'a', ttlMs: 10_000, heartbeatMs: 1_000, clock });
  t.after(() => a.stop());
  await a.start();
  const names3 = names.slice(0, 5);
  const held = [];
  for (const n of names3) held.push((await a.acquire(n))!);
  const lost: string[] = [];
  a.onLost((n) => lost.push(n));
  const tick = async () => {
    const before = failed;
    clock.advance(1_000);
    await until(() => failed === before + 1, 'the heartbeat to fail', 2_000, 1);
    await new Promise((r) => setImmediate(r));
  };
  // Down for 8 heartbeats (8 s of a 10 s TTL): every lease is kept, and a fence cannot pass.
  down = true;
  for (let i = 0; i < 8; i++) await tick();
  assert.equal(a.heldCount(), names3.length);
  assert.deepEqual(lost, []);
  assert.equal(await held[0]!.check(), false, 'a fence the store cannot answer fails the write');
  assert.equal(a.heldCount(), names3.length, '... without dropping the lease');
  // The store is back: the same membership (same epoch), so the same leases and tokens, fences pass.
  down = false;
  const beatsBefore = beats;
  clock.advance(1_000);
  await until(() => beats === beatsBefore + 1, 'the heartbeat to work again', 5_000, 1);
  await new Promise((r) => setImmediate(r));
  assert.equal(await held[0]!.check(), true);
  for (const [i, n] of names3.entries()) assert.equal(a.holds(n), held[i], `${n}: the same lease`);
  assert.deepEqual(lost, []);
  // Down again, now longer: once the next heartbeat could come after the membership's TTL, the
  // leases are given up (9 s after the last success, one interval before the store may expire it).
  down = true;
  for (let i = 0; i < 8; i++) await tick();
  assert.equal(a.heldCount(), names3.length, 'kept through 8 s');
  await tick();
  assert.equal(a.heldCount(), 0, 'given up at 9 s');
  assert.deepEqual(lost.sort(), [...names3].sort());
});

test('leases: a lone replica renews for the solo TTL, a sixth as often, each heartbeat within the TTL the last one renewed; told of a join or a leave, it renews for the TTL at once', { timeout: 20_000 }, async (t) => {
  const store = await createStore({ storage: 'embedded' });
  t.after(() => store.close());
  const clock = new ManualClock();
  const t0 = clock.now();
  // a's heartbeats: when each was sent (ms after start) and the TTL it renewed the membership for.
  const sent: Array<[number, number]> = [];
  let settled = 0;
  const aStore = withOverrides(store, { heartbeat: (hb) => (sent.push([clock.now() - t0, hb.ttlMs]), store.heartbeat(hb).finally(() => settled++)) });
  // The default flags' proportions: a 10 s TTL renewed every 3 s; alone, 60 s renewed every 18 s,
  // longer than the TTL itself.
  const a = new LeaseKeeper(aStore, { holder: 'a', ttlMs: 10_000, heartbeatMs: 3_000, soloTtlMs: 60_000, clock });
  t.after(() => a.stop());
  assert.equal(a.soloHeartbeatMs, 18_000);
  await a.start();
  assert.ok(await a.acquire(names[0]!), 'a lone replica owns every name');
  const step = async () => {
    clock.advance(1_000);
    // A heartbeat fired by advance() settles on the store's promise: wait for it, not for time.
    await until(() => settled === sent.length, 'the heartbeat to settle', 2_000, 1);
    await new Promise((r) => setImmediate(r));
  };
  // Two minutes alone: the first heartbeat (at start, nothing known yet) renews for the TTL, so
  // the next comes one interval later; from then on one per 18 s, each for 60 s. Without the solo
  // TTL: 41 heartbeats of 10 s.
  for (let i = 0; i < 120; i++) await step();
  assert.deepEqual(sent, [[0, 10_000], [3_000, 60_000], [21_000, 60_000], [39_000, 60_000], [57_000, 60_000], [75_000, 60_000], [93_000, 60_000], [111_000, 60_000]]);
  // b joins at 120 s. Its heartbeat changed the member set, so the store tells a
  // (Store.onMembersChanged), which renews at once for the TTL and sees b, instead of at its next
  // solo heartbeat (129 s); then every 3 s. (b's heartbeat also cut a's 60 s membership back to
  // its own TTL: redis/heartbeat.lua, storage/lease.ts.)
  const b = new LeaseKeeper(store, { holder: 'b', ttlMs: 10_000, heartbeatMs: 3_000, soloTtlMs: 60_000 });
  t.after(() => b.stop());
  const joined = sent.length;
  await b.start();
  await until(() => clock.timers > 0 && clock.nextTimerAt() === clock.now(), 'a to be told of b', 2_000, 1);
  clock.advance(0);
  await until(() => settled === sent.length, 'the heartbeat to settle', 2_000, 1);
  assert.deepEqual(a.members(), ['a', 'b']);
  for (let i = 0; i < 20; i++) await step();
  assert.deepEqual(sent.slice(joined), [[120_000, 10_000], [123_000, 10_000], [126_000, 10_000], [129_000, 10_000], [132_000, 10_000], [135_000, 10_000], [138_000, 10_000]], 'told of b: at once for the TTL, then one per interval');
  // b leaves at 140 s: a is told, renews at once (for the TTL) and finds itself alone; the next,
  // one interval later, for the solo TTL; then one per solo interval.
  await b.stop();
  const left = sent.length;
  await until(() => clock.nextTimerAt() === clock.now(), 'a to be told of the leave', 2_000, 1);
  clock.advance(0);
  await until(() => settled === sent.length, 'the heartbeat to settle', 2_000, 1);
  for (let i = 0; i < 30; i++) await step();
  assert.deepEqual(a.members(), ['a']);
  assert.deepEqual(sent.slice(left), [[140_000, 10_000], [143_000, 60_000], [161_000, 60_000]]);
  // Throughout, each heartbeat was sent within the TTL the one before renewed, one interval to spare.
  for (let i = 1; i < sent.length; i++) assert.ok(sent[i]![0] + 3_000 <= sent[i - 1]![0] + sent[i - 1]![1], `heartbeat ${i} at ${sent[i]![0]} ms: the membership renewed at ${sent[i - 1]![0]} ms for ${sent[i - 1]![1]} ms`);
});

test('leases: a lone replica whose heartbeat failed tries again one short interval later, and a nudge that heartbeat carried still renews for the TTL', { timeout: 20_000 }, async (t) => {
  const store = await createStore({ storage: 'embedded' });
  t.after(() => store.close());
  const clock = new ManualClock();
  const t0 = clock.now();
  let down = false;
  let settled = 0;
  // a's heartbeats: when each was sent (ms after start), the TTL asked, and whether the store took it.
  const sent: Array<[number, number, boolean]> = [];
  const aStore = withOverrides(store, {
    heartbeat: (hb) => {
      sent.push([clock.now() - t0, hb.ttlMs, !down]);
      return (down ? Promise.reject(new Error('connection closed')) : store.heartbeat(hb)).finally(() => settled++);
    },
  });
  const a = new LeaseKeeper(aStore, { holder: 'a', ttlMs: 10_000, heartbeatMs: 3_000, soloTtlMs: 60_000, clock });
  t.after(() => a.stop());
  await a.start();
  const step = async (ms: number) => {
    clock.advance(ms);
    await until(() => settled === sent.length, 'the heartbeat to settle', 2_000, 1);
    await new Promise((r) => setImmediate(r));
  };
  for (let i = 0; i < 20; i++) await step(1_000);
  // Alone: for the TTL at start, then for the solo TTL, every 18 s. The store fails from 20 s on:
  // the heartbeat due at 21 s fails, and the next is tried 3 s later, not a solo interval later.
  down = true;
  for (let i = 0; i < 5; i++) await step(1_000);
  // b joins at 25 s: a is told and tries at once, for the TTL; failing, it keeps asking for the TTL.
  const b = new LeaseKeeper(store, { holder: 'b', ttlMs: 10_000, heartbeatMs: 3_000, soloTtlMs: 60_000 });
  t.after(() => b.stop());
  await b.start();
  await until(() => clock.nextTimerAt() === clock.now(), 'a to be told of b', 2_000, 1);
  await step(0);
  for (let i = 0; i < 5; i++) await step(1_000);
  down = false;
  for (let i = 0; i < 4; i++) await step(1_000);
  assert.deepEqual(sent, [
    [0, 10_000, true], [3_000, 60_000, true], [21_000, 60_000, false], [24_000, 60_000, false],
    [25_000, 10_000, false], [28_000, 10_000, false], [31_000, 10_000, true], [34_000, 10_000, true],
  ]);
  assert.deepEqual(a.members(), ['a', 'b']);
});

test('replica flags: defaults, bounds and their messages', () => {
  assert.deepEqual(parseReplicaFlags({}, parseDuration), { leaseTtlMs: 10_000, heartbeatMs: 3_333, soloLeaseTtlMs: 120_000 });
  assert.deepEqual(parseReplicaFlags({ 'replica-lease-ttl': '30s', 'replica-heartbeat-interval': '5s' }, parseDuration), { leaseTtlMs: 30_000, heartbeatMs: 5_000, soloLeaseTtlMs: 120_000 });
  // 2 min by default, or the TTL when that is longer; an explicit one may equal the TTL (no difference) or be longer.
  assert.deepEqual(parseReplicaFlags({ 'replica-lease-ttl': '3m' }, parseDuration), { leaseTtlMs: 180_000, heartbeatMs: 60_000, soloLeaseTtlMs: 180_000 });
  assert.deepEqual(parseReplicaFlags({ 'replica-solo-lease-ttl': '60s' }, parseDuration), { leaseTtlMs: 10_000, heartbeatMs: 3_333, soloLeaseTtlMs: 60_000 });
  assert.deepEqual(parseReplicaFlags({ 'replica-solo-lease-ttl': '10s' }, parseDuration), { leaseTtlMs: 10_000, heartbeatMs: 3_333, soloLeaseTtlMs: 10_000 });
  assert.throws(() => parseReplicaFlags({ 'replica-solo-lease-ttl': '5s' }, parseDuration), { message: '--replica-solo-lease-ttl: must be a duration between --replica-lease-ttl (10s) and 5m (e.g. 60s), got "5s"' });
  assert.throws(() => parseReplicaFlags({ 'replica-solo-lease-ttl': '6m' }, parseDuration), { message: '--replica-solo-lease-ttl: must be a duration between --replica-lease-ttl (10s) and 5m (e.g. 60s), got "6m"' });
  assert.throws(() => parseReplicaFlags({ 'replica-lease-ttl': '500ms' }, parseDuration), { message: '--replica-lease-ttl: must be a duration between 1s and 5m (e.g. 10s), got "500ms"' });
  assert.throws(() => parseReplicaFlags({ 'replica-lease-ttl': 'ten' }, parseDuration), { message: '--replica-lease-ttl: must be a duration between 1s and 5m (e.g. 10s), got "ten"' });
  assert.throws(() => parseReplicaFlags({ 'replica-heartbeat-interval': '6s' }, parseDuration), {
    message: '--replica-heartbeat-interval: must be a duration between 100ms and half of --replica-lease-ttl (5s), got "6s"',
  });
});
