// Replicas share the GitTargets (docs/architecture.md "Replicas"): real server processes on one
// Redis, 3,000 suspended GitTargets (cheap: nothing to mirror, but owned all the same) and 6 live
// ones, each mirroring a sandbox namespace into its own repository on a git http-backend.
// Three replicas each own a third (±10%); a fourth joining gets a quarter; SIGKILL one and its
// share moves within the lease TTL + one heartbeat (plus the 2 s retry of a lease its old holder
// still had), and the edits made meanwhile are each committed exactly once (git log); stopping
// one gracefully hands over without waiting for the TTL, again losing and doubling nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startRedis } from '../support/redis.js';
import type { StartedServer } from '../support/server.js';
import { until } from '../support/deadline.js';
import { commits, git, ok } from './harness.js';
import { HEARTBEAT_MS, IDLE, TTL_MS, assertEven, createLive, seedSuspended, leasesHeld, replicaMetrics, settled, startFleet } from './shards-support.js';

const SUSPENDED = 3000;
const LIVE = 6;
const TOTAL = SUSPENDED + LIVE;
// Crash: the members' and leases' TTL, one heartbeat to notice, the mirror's 2 s retry for a lease
// acquired after the dead replica's last heartbeat, and 6 s for this loaded 2-core machine.
const CRASH_BOUND_MS = TTL_MS + HEARTBEAT_MS + 2_000 + 6_000;

const cmYAML = (ns: string, value: string) => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  namespace: ${ns}\ndata:\n  key: ${value}\n`;

async function mostHeld(replicas: StartedServer[]): Promise<StartedServer> {
  const held = await Promise.all(replicas.map(async (r) => (await replicaMetrics(r)).held));
  return replicas[held.indexOf(Math.max(...held))]!;
}

async function editAll(fleet: Awaited<ReturnType<typeof startFleet>>, value: string): Promise<void> {
  for (let i = 0; i < LIVE; i++) await ok(fleet.sandbox.kubectl, ['patch', 'configmap', 'cm', '-n', `team-${i}`, '-p', JSON.stringify({ data: { key: value } })]);
}

/** Every repository has exactly `n` commits, the newest changing only the ConfigMap to `value`; stays so for another idle window. */
async function committedOnce(bares: string[], n: number, value: string, ms: number): Promise<void> {
  await until(async () => (await Promise.all(bares.map((b) => commits(b)))).every((c) => c.length >= n), `every repository to have ${n} commits`, ms, 200);
  await new Promise((r) => setTimeout(r, (IDLE + 3) * 1000));
  for (const [i, bare] of bares.entries()) {
    const log = await commits(bare);
    assert.equal(log.length, n, `live-${i}: ${log.join(' | ')}`);
    assert.equal(await git(bare, 'diff', '--name-status', 'main~1', 'main'), `M\tlive/team-${i}/configmaps/cm.yaml\n`);
    assert.equal(await git(bare, 'show', 'main:live/team-' + i + '/configmaps/cm.yaml'), cmYAML(`team-${i}`, value));
  }
}

test('replicas on one Redis: even shares, a fourth joins, a crash and a graceful stop hand over with every edit committed once', { timeout: 420_000 }, async (t) => {
  const redis = await startRedis();
  t.after(() => redis.stop());
  let started = Date.now();
  const fleet = await startFleet(t, redis.url, 3);
  t.diagnostic(`sandbox and 3 replicas started in ${Date.now() - started} ms`);
  started = Date.now();
  await seedSuspended(redis.url, SUSPENDED);
  t.diagnostic(`stored ${SUSPENDED} suspended GitTargets in ${Date.now() - started} ms`);
  const bares = await createLive(fleet, LIVE);
  for (const [i, bare] of bares.entries()) assert.deepEqual(await commits(bare), [`Snapshot of default/live-${i}: 1 object`]);

  const three = await settled(fleet.replicas, TOTAL, 30_000);
  t.diagnostic(`3 replicas: shares ${three.map((m) => m.owned).join(', ')}`);
  assertEven(three.map((m) => m.owned), TOTAL);
  await until(async () => (await leasesHeld(fleet.replicas)) === LIVE, 'one lease per live GitTarget', 20_000, 250);

  // A fourth replica joins: a quarter each, taken from the others; the live ones it now owns move to it.
  started = Date.now();
  await fleet.add();
  const four = await settled(fleet.replicas, TOTAL, 30_000);
  t.diagnostic(`4 replicas: shares ${four.map((m) => m.owned).join(', ')}, settled ${Date.now() - started} ms after the 4th started`);
  assertEven(four.map((m) => m.owned), TOTAL);
  const handovers = await Promise.all(fleet.replicas.map(replicaMetrics));
  t.diagnostic(`handovers in/out per replica: ${handovers.map((m) => `${m.handoversIn}/${m.handoversOut}`).join(', ')}`);
  await until(async () => (await leasesHeld(fleet.replicas)) === LIVE, 'one lease per live GitTarget after the join', 20_000, 250);
  await new Promise((r) => setTimeout(r, (IDLE + 2) * 1000));
  for (const bare of bares) assert.equal((await commits(bare)).length, 1, 'a rebalance commits nothing by itself');

  // SIGKILL the replica holding the most live GitTargets; edit every live source at once.
  const victim = await mostHeld(fleet.replicas);
  const victimHeld = (await replicaMetrics(victim)).held;
  const killedAt = Date.now();
  await victim.kill();
  await editAll(fleet, 'v1');
  let survivors = fleet.replicas.filter((r) => r !== victim);
  const afterKill = await settled(survivors, TOTAL, CRASH_BOUND_MS + 10_000);
  const ownedIn = Date.now() - killedAt;
  await until(async () => (await leasesHeld(survivors)) === LIVE, 'the survivors to hold every live GitTarget', CRASH_BOUND_MS + 10_000, 250);
  const leasesIn = Date.now() - killedAt;
  t.diagnostic(`SIGKILL of a replica holding ${victimHeld} live GitTargets: shares moved in ${ownedIn} ms, leases in ${leasesIn} ms (TTL ${TTL_MS} ms, heartbeat ${HEARTBEAT_MS} ms); shares ${afterKill.map((m) => m.owned).join(', ')}`);
  assert.ok(victimHeld >= 1, 'the victim held a live GitTarget');
  assert.ok(leasesIn <= CRASH_BOUND_MS, `handover took ${leasesIn} ms (bound ${CRASH_BOUND_MS} ms)`);
  assertEven(afterKill.map((m) => m.owned), TOTAL);
  await committedOnce(bares, 2, 'v1', 30_000);

  // A graceful stop releases at once: no waiting for the TTL.
  const leaving = await mostHeld(survivors);
  const leavingHeld = (await replicaMetrics(leaving)).held;
  await leaving.stop();
  const stoppedAt = Date.now();
  survivors = survivors.filter((r) => r !== leaving);
  await editAll(fleet, 'v2');
  await settled(survivors, TOTAL, 10_000);
  await until(async () => (await leasesHeld(survivors)) === LIVE, 'the others to hold every live GitTarget after the graceful stop', 10_000, 250);
  const gracefulIn = Date.now() - stoppedAt;
  t.diagnostic(`graceful stop of a replica holding ${leavingHeld} live GitTargets: leases moved ${gracefulIn} ms after it exited`);
  assert.ok(gracefulIn < TTL_MS, `a graceful handover (${gracefulIn} ms) does not wait for the lease TTL (${TTL_MS} ms)`);
  await committedOnce(bares, 3, 'v2', 30_000);
});
