// #8 items 16 and 15 (Redis): with Redis frozen, a create fails within the one stated bound (3 s,
// docs/storage.md) with a Status that speaks of Redis, not of ioredis options; with Redis
// unreachable from the start, the loss and the recovery are each logged once, at warn, with the cause.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assertStatus, gitTarget, ns, startServer } from '../support/server.js';
import { startRedis } from '../support/redis.js';

const BOUND_MS = 3_000;

test('a create against a frozen Redis answers 503 within 3 s', { timeout: 60_000 }, async (t) => {
  const redis = await startRedis();
  t.after(() => redis.stop());
  const server = await startServer(['--storage=redis', `--redis-url=${redis.url}`]);
  t.after(() => server.stop());
  assert.equal((await server.request('POST', ns('default'), { body: gitTarget('before') })).status, 201);
  redis.pause();
  try {
    for (const name of ['frozen-1', 'frozen-2']) {
      const started = Date.now();
      const r = await server.request('POST', ns('default'), { body: gitTarget(name) });
      const ms = Date.now() - started;
      t.diagnostic(`create with Redis frozen: ${r.status} after ${ms} ms`);
      assertStatus(r, 503, 'ServiceUnavailable', 'storage is unavailable: redis did not answer within 3 s');
      // The server gives up at 3 s (measured 3003 ms on a quiet machine); the slack is the client's
      // and the scheduler's share at load average 15+ (3788 ms seen). Without the bound a frozen
      // Redis holds the request until the client gives up, far beyond 5 s.
      assert.ok(ms >= BOUND_MS - 100 && ms < BOUND_MS + 2_000, `answered after ${ms} ms`);
    }
  } finally {
    redis.resume();
  }
  const deadline = Date.now() + 10_000;
  let r;
  do r = await server.request('POST', ns('default'), { body: gitTarget('after') });
  while (r.status === 503 && Date.now() < deadline && (await new Promise((ok) => setTimeout(ok, 200)), true));
  assert.equal(r.status, 201, r.text);
});

test('Redis unreachable from the start: one warning for the loss, one for the recovery, and Statuses without ioredis text', { timeout: 60_000 }, async (t) => {
  const redis = await startRedis();
  t.after(() => redis.stop());
  await redis.kill();
  const server = await startServer(['--storage=redis', `--redis-url=${redis.url}`]);
  t.after(() => server.stop());
  const r = await server.request('POST', ns('default'), { body: gitTarget('x') });
  assertStatus(r, 503, 'ServiceUnavailable', `storage is unavailable: redis is unreachable (connect ECONNREFUSED 127.0.0.1:${redis.port})`);
  assert.doesNotMatch(r.text, /maxRetriesPerRequest|max retries per request/);
  await new Promise((ok) => setTimeout(ok, 1500)); // several reconnect attempts
  await redis.restart();
  const deadline = Date.now() + 15_000;
  let created;
  do created = await server.request('POST', ns('default'), { body: gitTarget('x') });
  while (created.status === 503 && Date.now() < deadline && (await new Promise((ok) => setTimeout(ok, 200)), true));
  assert.equal(created.status, 201, created.text);
  const lines = server
    .stderr()
    .split('\n')
    .filter((l) => l.includes('redis connection'))
    .map((l) => JSON.parse(l));
  assert.deepEqual(
    lines.map((l) => [l.level, l.msg]),
    [
      ['warn', 'redis connection lost; requests answer 503 until it is back'],
      ['warn', 'redis connection recovered'],
    ],
  );
  assert.equal(lines[0].cause, `connect ECONNREFUSED 127.0.0.1:${redis.port}`);
});
