// On Redis Cluster, a write whose connection closes before its reply arrives is answered as
// ambiguous (Unavailable) and never sent again by the client library. The client cannot know
// whether the node ran it: had it run (and been replicated) before the reply was lost, a re-send
// would apply it a second time (a duplicate event, or a Conflict/AlreadyExists for a write that
// succeeded). The standalone and Sentinel clients never re-send (src/storage/redis/store.ts);
// ioredis's Cluster client re-sends after a closed connection unless retryDelayOnFailover is 0.
// Here the slot owner is paused for writes (CLIENT PAUSE WRITE) so the create waits in its
// socket, the server closes the store's connections (CLIENT KILL), and the pause ends: the create
// must fail, and the object must not appear.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRedisStore } from '../../src/storage/redis/store.js';
import { StorageError } from '../../src/storage/types.js';
import { until } from '../support/deadline.js';
import { cli, startRedisCluster } from '../support/redis-ha.js';
import { CM, cm, key } from './contract.js';

test('redis cluster: a write whose connection closes before the reply fails as Unavailable and is not re-sent', { timeout: 120_000 }, async (t) => {
  const g = await startRedisCluster();
  t.after(() => g.stop());
  const s = await createRedisStore({ clusterNodes: g.startupNodes, keyPrefix: 'resend', commandTimeoutMs: 3000, connectWaitMs: 10_000 });
  t.after(() => s.close());
  await s.create(CM, key('before'), cm('before'));
  const owner = await g.slotOwner('{resend}');

  await cli(owner.port, 'CLIENT', 'PAUSE', '10000', 'WRITE');
  const inFlight = s.create(CM, key('in-flight'), cm('in-flight')).then(
    () => 'acknowledged',
    (e: unknown) => (e instanceof StorageError ? `${e.code}: ${e.message}` : String(e)),
  );
  // The script waits in the owner's socket; then every normal client connection is closed.
  await until(async () => /cmd=evalsha/.test(await cli(owner.port, 'CLIENT', 'LIST')), 'the create to reach the slot owner', 10_000, 20);
  await cli(owner.port, 'CLIENT', 'KILL', 'TYPE', 'normal');
  await cli(owner.port, 'CLIENT', 'UNPAUSE');
  assert.match(await inFlight, /^Unavailable: /);

  // A re-send would have been applied within the library's retry (100 ms after a slots refresh).
  await new Promise((r) => setTimeout(r, 1_000));
  let read: unknown = 'unread';
  await until(async () => {
    read = await s.get(CM, key('in-flight')).catch(() => 'unread');
    return read !== 'unread';
  }, 'a consistent read after the connection was closed', 20_000, 100);
  assert.equal(read, undefined, 'the write whose connection closed was not re-sent');
  assert.ok(await s.get(CM, key('before')));
  const after = await s.create(CM, key('after'), cm('after'));
  assert.equal(after.metadata.name, 'after');
});
