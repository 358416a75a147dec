// Replicas sharing GitTargets on a six-node Redis Cluster (test/support/redis-ha.ts): the heartbeat
// script's keys (members and every lease) share one hash slot there (src/storage/keys.ts). Three
// replicas each own a third (±10%) of 3,000 suspended and 4 live GitTargets; SIGKILL one, and its
// share and leases move within the TTL + one heartbeat (+ the mirror's 2 s retry), with the edits
// made meanwhile committed exactly once each.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startRedisCluster } from '../support/redis-ha.js';
import { until } from '../support/deadline.js';
import { commits, git, ok } from './harness.js';
import { HEARTBEAT_MS, IDLE, TTL_MS, assertEven, createLive, leasesHeld, replicaMetrics, seedSuspended, settled, startFleet } from './shards-support.js';

const SUSPENDED = 3000;
const LIVE = 4;
const TOTAL = SUSPENDED + LIVE;
const CRASH_BOUND_MS = TTL_MS + HEARTBEAT_MS + 2_000 + 6_000;

test('replicas on Redis Cluster: even shares; SIGKILL one and its share moves with every edit committed once', { timeout: 360_000 }, async (t) => {
  const cluster = await startRedisCluster();
  t.after(() => cluster.stop());
  const fleet = await startFleet(t, cluster.url, 3);
  await seedSuspended(cluster.url, SUSPENDED);
  const bares = await createLive(fleet, LIVE);
  const three = await settled(fleet.replicas, TOTAL, 30_000);
  t.diagnostic(`3 replicas on Redis Cluster: shares ${three.map((m) => m.owned).join(', ')}`);
  assertEven(three.map((m) => m.owned), TOTAL);
  await until(async () => (await leasesHeld(fleet.replicas)) === LIVE, 'one lease per live GitTarget', 20_000, 250);

  const held = await Promise.all(fleet.replicas.map(async (r) => (await replicaMetrics(r)).held));
  const victim = fleet.replicas[held.indexOf(Math.max(...held))]!;
  const killedAt = Date.now();
  await victim.kill();
  for (let i = 0; i < LIVE; i++) await ok(fleet.sandbox.kubectl, ['patch', 'configmap', 'cm', '-n', `team-${i}`, '-p', '{"data":{"key":"v1"}}']);
  const survivors = fleet.replicas.filter((r) => r !== victim);
  const after = await settled(survivors, TOTAL, CRASH_BOUND_MS + 10_000);
  await until(async () => (await leasesHeld(survivors)) === LIVE, 'the survivors to hold every live GitTarget', CRASH_BOUND_MS + 10_000, 250);
  const took = Date.now() - killedAt;
  t.diagnostic(`SIGKILL of a replica holding ${Math.max(...held)} live GitTargets: leases moved in ${took} ms; shares ${after.map((m) => m.owned).join(', ')}`);
  assert.ok(took <= CRASH_BOUND_MS, `handover took ${took} ms (bound ${CRASH_BOUND_MS} ms)`);
  assertEven(after.map((m) => m.owned), TOTAL);

  await until(async () => (await Promise.all(bares.map((b) => commits(b)))).every((c) => c.length >= 2), 'every edit committed', 30_000, 200);
  await new Promise((r) => setTimeout(r, (IDLE + 3) * 1000));
  for (const [i, bare] of bares.entries()) {
    assert.equal((await commits(bare)).length, 2, `live-${i}: ${(await commits(bare)).join(' | ')}`);
    assert.equal(await git(bare, 'show', `main:live/team-${i}/configmaps/cm.yaml`), `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  namespace: team-${i}\ndata:\n  key: v1\n`);
  }
});
