// Three server replicas on a six-node Redis Cluster (test/support/redis-ha.ts) share the
// GitTargets and mirror a stream of edits; the primary that owns the store's hash slot (every key
// carries the tag of the key prefix there, src/storage/keys.ts) is SIGKILLed mid-stream. Every
// edit the source acknowledged is committed exactly once, by the same processes
// (test/mirror/shards-failover.ts says what is checked). No waitReplicas: the promoted primary
// has no replica left to confirm a write (docs/storage.md).
import { test } from 'node:test';
import { startRedisCluster, type RedisNode } from '../support/redis-ha.js';
import { replicasThroughFailover } from './shards-failover.js';

const SLOT_KEY = '{reverser}'; // the default --redis-key-prefix

test('replicas on Redis Cluster: the slot owner SIGKILLed mid-stream; every edit committed once, no restart', { timeout: 480_000 }, async (t) => {
  const g = await startRedisCluster();
  t.after(() => g.stop());
  let owner: RedisNode | undefined;
  const r = await replicasThroughFailover(t, {
    redisUrl: g.url,
    killPrimary: async () => {
      owner = await g.slotOwner(SLOT_KEY);
      await owner.kill();
    },
    promoted: async () => (await g.slotOwner(SLOT_KEY)) !== owner,
  });
  t.diagnostic(JSON.stringify(r));
});
