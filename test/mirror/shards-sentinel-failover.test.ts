// Three server replicas on a Sentinel group (test/support/redis-ha.ts: 1 primary, 2 replicas,
// waitReplicas=1) share the GitTargets and mirror a stream of edits; the Redis primary is SIGKILLed
// mid-stream together with the server replica that holds the most live GitTargets. Every edit the
// source acknowledged is committed exactly once, by the same surviving processes
// (test/mirror/shards-failover.ts says what is checked).
import { test } from 'node:test';
import { startRedisSentinel } from '../support/redis-ha.js';
import { replicasThroughFailover } from './shards-failover.js';

test('replicas on Sentinel: the primary and a server replica SIGKILLed mid-stream; every edit committed once, no restart', { timeout: 480_000 }, async (t) => {
  const g = await startRedisSentinel({ replicas: 2 });
  t.after(() => g.stop());
  const ports = g.replicas.map((r) => r.port);
  const r = await replicasThroughFailover(t, {
    redisUrl: `${g.url}&waitReplicas=1`,
    seedUrl: g.url,
    killPrimary: () => g.primary.kill(),
    promoted: async () => ports.includes(await g.primaryPort()),
    killServerReplica: true,
  });
  t.diagnostic(JSON.stringify(r));
});
