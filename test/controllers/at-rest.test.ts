// A GitTarget at rest costs nothing periodic, not even its lease: once it is Ready and nothing changes,
// the server sends Redis no consistent read (GET of the counter + XRANGE of the log) and writes
// nothing, through more than one of the mirror's 10 s recheck periods
// (src/controllers/mirror/controller.ts: only a target with a kubeconfig Secret is re-checked).
// Real server (sandbox as the default source, controllers on) on a real redis-server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { startRedis } from '../support/redis.js';
import { startServer, ns } from '../support/server.js';
import { until } from '../support/deadline.js';
import { createMirror, seedTenants } from '../support/tenants.js';

/** Calls per command so far (INFO commandstats). */
async function commandCalls(redis: Redis): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const m of (await redis.info('commandstats')).matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) out[m[1]!] = Number(m[2]);
  return out;
}

// What the replica's heartbeat runs (src/storage/redis/heartbeat.lua called with EVALSHA): TIME,
// the expired members' ZRANGEBYSCORE, its own epoch's HGET, its ZADD and the members' HGETALL —
// the same five for one lease or ten thousand, because a GitTarget lease lives with the replica's
// membership (src/storage/lease.ts) and no lease is renewed one by one. Besides it, per process and
// not per object: the store's blocking XREAD of the logs (one a minute at
// rest, src/storage/redis/follower.ts FOLLOW_BLOCK_MS) and its progress tick, one
// GET of the counter per second while a served watch takes bookmarks (src/storage/redis/follower.ts
// progress(); here the mirror's watches of its own sandbox are served watches).
const HEARTBEAT = ['time', 'zrangebyscore', 'hget', 'zadd', 'hgetall'];
const AT_REST = new Set(['evalsha', ...HEARTBEAT, 'xread', 'get']);
const TENANTS = ['quiet-a', 'quiet-b', 'quiet-c'];

test('Ready GitTargets at rest: no Redis reads or writes but one membership heartbeat per solo interval for all their leases, past the 10 s recheck', { timeout: 120_000 }, async (t) => {
  const redisServer = await startRedis();
  // The default flags: a lone replica renews for the solo TTL, 2 min (src/controllers/runtime/replica-flags.ts).
  const server = await startServer(['--storage=redis', '--redis-url', redisServer.url, '--sandbox', '--controllers=all']).catch(async (e) => {
    await redisServer.stop();
    throw e;
  });
  const redis = new Redis(redisServer.url);
  t.after(async () => {
    redis.disconnect();
    await server.stop();
    await redisServer.stop();
  });

  await seedTenants(server, TENANTS);
  for (const name of TENANTS) await createMirror(server, name);
  const rvs = async () => Promise.all(TENANTS.map(async (name) => (await server.get(`${ns(name)}/mirror`)).body));
  await until(
    async () =>
      (await rvs()).every((o) => o?.status?.conditions?.some((c: any) => c.type === 'Ready' && c.status === 'True') && o?.status?.lastCommit?.sha !== undefined),
    'the GitTargets to be Ready with their snapshots committed',
    60_000,
  );
  // Let the last status writes of the first sync land, then watch more than one recheck period.
  await new Promise((r) => setTimeout(r, 2_000));
  const rv = (await rvs()).map((o) => o.metadata.resourceVersion);
  const before = await commandCalls(redis);
  await new Promise((r) => setTimeout(r, 12_000));
  const after = await commandCalls(redis);
  const ran: Record<string, number> = {};
  for (const [k, v] of Object.entries(after)) if (k !== 'info' && v > (before[k] ?? 0)) ran[k] = v - (before[k] ?? 0);
  t.diagnostic(`Redis commands in 12 s at rest with ${TENANTS.length} leases held: ${JSON.stringify(ran)}`);
  // No XRANGE: nothing read a log, so no consistent read (GET + XRANGE) of the GitTargets or of
  // anything else happened, and nothing was written (no HSET: no lease renewed one by one).
  const other = Object.fromEntries(Object.entries(ran).filter(([k]) => !AT_REST.has(k)));
  assert.deepEqual(other, {}, `Redis commands at rest beyond the heartbeat and the store's own ticks: ${JSON.stringify(ran)}`);
  // The only replica renews for its solo TTL, 2 min, every 40 s (src/controllers/runtime/leases.ts):
  // at most one heartbeat in 12 s, where every ttl/3 = 3.3 s made 3 to 5. Each is exactly the
  // commands of heartbeat.lua (ZRANGEBYSCORE twice: the expired members, and memberships to cut),
  // whatever the number of leases held, and no XADD: nothing changed the member set.
  const beats = ran.evalsha ?? 0;
  assert.ok(beats <= 1, `heartbeats in 12 s: ${JSON.stringify(ran)}`);
  for (const c of HEARTBEAT) assert.equal(ran[c] ?? 0, c === 'zrangebyscore' ? 2 * beats : beats, `${c}: once per heartbeat, for ${TENANTS.length} leases: ${JSON.stringify(ran)}`);
  // One progress GET per second: at most 13.
  assert.ok((ran.get ?? 0) <= 13, `GETs of the counter in 12 s: ${JSON.stringify(ran)}`);
  assert.deepEqual((await rvs()).map((o) => o.metadata.resourceVersion), rv, 'no GitTarget was written at rest');
  // What the mirror holds towards its source (the server's own sandbox, over loopback HTTP/2):
  // one transport and one connection for all three GitTargets, one watch per namespace.
  const metrics = (await server.get('/metrics')).text;
  const gauge = (name: string) => Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(metrics)?.[1] ?? NaN);
  assert.deepEqual(
    Object.fromEntries(['reverser_source_transports', 'reverser_source_connections', 'reverser_source_streams', 'reverser_source_shared_watches', 'reverser_source_watch_subscribers'].map((n) => [n, gauge(n)])),
    { reverser_source_transports: 1, reverser_source_connections: 1, reverser_source_streams: TENANTS.length, reverser_source_shared_watches: TENANTS.length, reverser_source_watch_subscribers: TENANTS.length },
  );
});
