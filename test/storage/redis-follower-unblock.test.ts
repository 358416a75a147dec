// The Redis follower's blocking XREAD and a log loaded while it blocks (src/storage/redis/follower.ts).
// The follower ends its XREAD with CLIENT UNBLOCK when a new log is loaded, so that the next XREAD
// covers it. UNBLOCK goes over the command connection, the XREAD over the follower's own: when
// the UNBLOCK reaches Redis first it ends nothing, and the XREAD that then arrives blocks for
// FOLLOW_BLOCK_MS (60 s) without the new log, whose events reach no watcher meanwhile.
//
// The order is made certain here, not left to chance: the follower's connection holds its first
// XREAD (a real ioredis client whose xread waits for a gate before sending) until Redis has
// counted the UNBLOCK. Everything else is real: redis-server, both connections, the store's
// Lua writes and the follower's cache and watch.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { createRedisStore } from '../../src/storage/redis/store.js';
import { FOLLOW_BLOCK_MS, RedisCacheFollower } from '../../src/storage/redis/follower.js';
import { RedisHealth } from '../../src/storage/redis/health.js';
import { RedisKeys } from '../../src/storage/keys.js';
import type { ResourceRef, StoreEvent } from '../../src/storage/types.js';
import { startRedis } from '../support/redis.js';
import { withDeadline } from '../support/deadline.js';
import { CM, cm, key } from './contract.js';

const SECRETS: ResourceRef = { group: '', resource: 'secrets' };
/** Well inside FOLLOW_BLOCK_MS: an event that waits for the XREAD's own timeout fails the test. */
const DELIVERY_BOUND_MS = 10_000;

test('redis follower: a log loaded while the XREAD is on its way is followed at once, not after the block', { timeout: 60_000 }, async (t) => {
  assert.ok(DELIVERY_BOUND_MS < FOLLOW_BLOCK_MS / 2);
  const srv = await startRedis();
  t.after(() => srv.stop());
  const prefix = 'unblock';
  const writer = await createRedisStore({ url: srv.url, keyPrefix: prefix });
  t.after(() => writer.close());

  // Connected after the follower exists, as in store.ts: it learns its connection's client id on 'ready'.
  const opts = { enableOfflineQueue: false, maxRetriesPerRequest: 0, lazyConnect: true };
  const cmd = new Redis(srv.url, opts);
  const sub = new Redis(srv.url, { ...opts, commandTimeout: FOLLOW_BLOCK_MS + 3000 });
  // CLIENT UNBLOCK is an admin command, which MONITOR does not show: Redis's own count of it is read instead.
  const stats = new Redis(srv.url);
  t.after(() => {
    for (const c of [cmd, sub, stats]) c.disconnect();
  });
  const unblocks = async () => Number(/cmdstat_client\|unblock:calls=(\d+)/.exec(await stats.info('commandstats'))?.[1] ?? 0);
  // The follower's first XREAD leaves only once the gate opens.
  let open!: () => void;
  const gate = new Promise<void>((r) => (open = r));
  const xread = sub.xread.bind(sub) as (...a: unknown[]) => Promise<unknown>;
  let xreads = 0;
  (sub as unknown as { xread: (...a: unknown[]) => Promise<unknown> }).xread = async (...a: unknown[]) => {
    if (xreads++ === 0) await gate;
    return xread(...a);
  };
  const follower = new RedisCacheFollower({
    cmd,
    sub,
    keys: new RedisKeys(prefix),
    health: new RedisHealth(3000, undefined, () => cmd.status === 'ready', () => undefined),
    unhealthyReason: () => undefined,
  });
  t.after(() => follower.stop());
  await withDeadline(Promise.all([cmd.connect(), sub.connect()]), 'both connections', 10_000);
  const subId = () => (follower as unknown as { subId?: number }).subId;
  await withDeadline(waitFor(() => subId() !== undefined), "the follower to learn its connection's client id", 5_000);

  // ConfigMaps loaded: the follower's first XREAD (ConfigMaps only) is held at the gate.
  await follower.state(CM);
  follower.start();
  await withDeadline(waitFor(async () => xreads === 1), 'the follower to send its first XREAD', 5_000);

  // Secrets loaded while that XREAD is on its way: the UNBLOCK reaches Redis first and ends nothing.
  const secrets = await follower.state(SECRETS);
  await withDeadline(waitFor(async () => (await unblocks()) >= 1), 'Redis to receive CLIENT UNBLOCK', 5_000);
  const events: StoreEvent[] = [];
  let delivered!: () => void;
  const got = new Promise<void>((r) => (delivered = r));
  const watch = secrets.rc.watch({ fromRV: secrets.rc.syncedRV }, {
    onEvent: (ev) => {
      events.push(ev);
      delivered();
    },
  });
  t.after(() => watch.stop());
  open();
  // The XREAD now blocks in Redis. A Secret written by another process must reach the watch.
  const written = await writer.create(SECRETS, key('s1'), { ...cm('s1'), kind: 'Secret' });
  const started = performance.now();
  await withDeadline(got, `the Secret's event (the follower's XREAD must cover the secrets log)`, DELIVERY_BOUND_MS);
  const ms = performance.now() - started;
  assert.deepEqual(
    events.map((e) => [e.type, e.object.metadata.name, e.rv]),
    [['ADDED', 's1', Number(written.metadata.resourceVersion)]],
  );
  assert.ok(ms < DELIVERY_BOUND_MS, `delivered after ${Math.round(ms)} ms`);
  t.diagnostic(`the Secret's event reached the watch ${Math.round(ms)} ms after its write; Redis counted ${await unblocks()} CLIENT UNBLOCK`);
});

async function waitFor(cond: () => Promise<boolean> | boolean): Promise<void> {
  while (!(await cond())) await new Promise((r) => setTimeout(r, 10));
}
