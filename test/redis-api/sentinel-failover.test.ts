// The API server on a Sentinel group (test/support/redis-ha.ts) while its primary is SIGKILLed
// under 4 writers: the server follows the promoted replica without a restart, answers only 201 or
// 503 (never 500, never exits), and every acknowledged write is listed afterwards.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { until } from '../support/deadline.js';
import { startRedisSentinel } from '../support/redis-ha.js';
import { gitTarget, ns, startServer } from '../support/server.js';

const NS = ns('team-a');

test('sentinel: SIGKILL the primary under 4 writers; no acknowledged write lost, 503s only, recovery', async (t) => {
  const g = await startRedisSentinel({ replicas: 2 });
  t.after(() => g.stop());
  const s = await startServer(['--storage=redis', `--redis-url=${g.url}&waitReplicas=1`, '--max-gittargets-per-namespace=0']);
  t.after(() => s.stop());

  const acknowledged = new Set<string>();
  const codes = new Map<number, number>();
  let stop = false;
  let n = 0;
  const writer = async (w: number): Promise<void> => {
    while (!stop) {
      const name = `w${w}-${n++}`;
      const started = Date.now();
      const r = await s.request('POST', NS, { body: gitTarget(name, 'team-a') });
      assert.ok(Date.now() - started < 10_000, 'no request hangs past 10 s');
      codes.set(r.status, (codes.get(r.status) ?? 0) + 1);
      if (r.status === 201) acknowledged.add(name);
      else {
        assert.equal(r.status, 503, `unexpected ${r.status}: ${r.text}`);
        assert.equal(r.body.reason, 'ServiceUnavailable');
        await new Promise((res) => setTimeout(res, 50));
      }
    }
  };
  const writers = Array.from({ length: 4 }, (_, w) => writer(w));
  await until(() => acknowledged.size >= 60, 'writes before the failover', 30_000);
  const ports = g.replicas.map((r) => r.port);
  await g.primary.kill();
  const atKill = acknowledged.size;
  await until(async () => ports.includes(await g.primaryPort()), 'the sentinels to promote a replica', 30_000, 100);
  await until(() => acknowledged.size >= atKill + 60, 'writes after the failover', 40_000);
  stop = true;
  await Promise.all(writers);

  assert.equal(codes.get(500) ?? 0, 0, 'never a 500');
  assert.ok(s.alive(), 'the server never exited');
  await until(async () => (await s.get('/readyz')).status === 200, '/readyz to answer 200', 20_000, 100);
  const list = await s.get(NS);
  assert.equal(list.status, 200);
  const stored = new Set<string>(list.body.items.map((o: { metadata: { name: string } }) => o.metadata.name));
  const lost = [...acknowledged].filter((name) => !stored.has(name));
  assert.deepEqual(lost, [], `${lost.length} of ${acknowledged.size} acknowledged writes lost`);
  t.diagnostic(`acknowledged ${acknowledged.size}, 503 ${codes.get(503) ?? 0}`);
});
