// A GitTarget at rest costs nothing periodic but its lease: once it is Ready and nothing changes,
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

/** Calls per command so far (INFO commandstats). */
async function commandCalls(redis: Redis): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const m of (await redis.info('commandstats')).matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) out[m[1]!] = Number(m[2]);
  return out;
}

// What the replica's heartbeat runs (src/storage/redis/heartbeat.lua called with EVALSHA: the
// live-member set's ZREMRANGEBYSCORE/ZADD/ZRANGE, then HMGET + HSET per held lease): the only
// Redis traffic a mirrored GitTarget at rest may cause, one script per heartbeat interval for all
// the replica's leases. Besides it, per process and not per object: the store's blocking XREAD of
// the logs (one per 5 s) and its progress tick, one GET of the counter per second
// (src/storage/redis/follower.ts progress()).
const AT_REST = new Set(['evalsha', 'time', 'hmget', 'hset', 'zremrangebyscore', 'zadd', 'zrange', 'xread', 'get']);

test('a Ready GitTarget at rest: no Redis reads or writes but its lease renewal, past the 10 s recheck', { timeout: 120_000 }, async (t) => {
  const redisServer = await startRedis();
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

  const created = async (path: string, body: unknown) => assert.equal((await server.request('POST', path, { body })).status, 201, path);
  await created('/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'quiet' } });
  await created('/api/v1/namespaces/quiet/configmaps', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'app', namespace: 'quiet' }, data: { k: 'v' } });
  await created(ns('quiet'), {
    apiVersion: 'configbutler.ai/v1alpha1',
    kind: 'GitTarget',
    metadata: { name: 'mirror', namespace: 'quiet' },
    spec: { repository: { url: 'local:quiet' }, branch: 'main', path: '.', resources: [{ group: '', version: 'v1', resource: 'configmaps', namespaces: ['quiet'] }], commit: { idleSeconds: 1 } },
  });
  let rv = '';
  await until(
    async () => {
      const o = (await server.get(`${ns('quiet')}/mirror`)).body;
      rv = o?.metadata?.resourceVersion ?? '';
      return o?.status?.conditions?.some((c: any) => c.type === 'Ready' && c.status === 'True') && o?.status?.lastCommit?.sha !== undefined;
    },
    'the GitTarget to be Ready with its snapshot committed',
    60_000,
  );
  // Let the last status writes of the first sync land, then watch more than one recheck period.
  await new Promise((r) => setTimeout(r, 2_000));
  rv = (await server.get(`${ns('quiet')}/mirror`)).body.metadata.resourceVersion;
  const before = await commandCalls(redis);
  await new Promise((r) => setTimeout(r, 12_000));
  const after = await commandCalls(redis);
  const ran: Record<string, number> = {};
  for (const [k, v] of Object.entries(after)) if (k !== 'info' && v > (before[k] ?? 0)) ran[k] = v - (before[k] ?? 0);
  // No XRANGE: nothing read a log, so no consistent read (GET + XRANGE) of the GitTarget or of
  // anything else happened, and nothing was written.
  const other = Object.fromEntries(Object.entries(ran).filter(([k]) => !AT_REST.has(k)));
  assert.deepEqual(other, {}, `Redis commands at rest beyond the lease renewal and the store's own ticks: ${JSON.stringify(ran)}`);
  // One heartbeat every ttl/3 = 3.3 s (renewing the one lease with it): at most 4 in 12 s (5 with
  // one at each edge), and one lease renewal (HSET) in each; one progress GET per second: at most 13.
  assert.ok((ran.evalsha ?? 0) <= 5, `heartbeats in 12 s: ${JSON.stringify(ran)}`);
  assert.ok((ran.hset ?? 0) <= (ran.evalsha ?? 0), `lease renewals beyond one per heartbeat: ${JSON.stringify(ran)}`);
  assert.ok((ran.get ?? 0) <= 13, `GETs of the counter in 12 s: ${JSON.stringify(ran)}`);
  assert.equal((await server.get(`${ns('quiet')}/mirror`)).body.metadata.resourceVersion, rv, 'the GitTarget was not written at rest');
});
