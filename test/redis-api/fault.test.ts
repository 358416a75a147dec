// Redis goes away while clients write: acknowledged writes survive, failures are 503 with
// Retry-After, the server never answers 500 and never exits, and recovers without a restart.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startRedis } from '../support/redis.js';
import { gitTarget, ns, startServer } from '../support/server.js';

const NS = ns('team-a');

async function until(cond: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

test('kill redis-server under 4 writers: no acknowledged write lost, 503s only, recovery', async (t) => {
  const redis = await startRedis({ appendonly: true });
  t.after(() => redis.stop());
  const s = await startServer(['--storage=redis', `--redis-url=${redis.url}`, '--max-gittargets-per-namespace=0']); // writes until Redis dies: not a quota test
  t.after(() => s.stop());

  const acknowledged = new Set<string>();
  const codes = new Map<number, number>();
  let stop = false;
  let n = 0;
  const writer = async (w: number) => {
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
        assert.ok(r.headers['retry-after'], 'Retry-After is set');
        await new Promise((res) => setTimeout(res, 50));
      }
    }
  };
  const writers = Array.from({ length: 4 }, (_, w) => writer(w));
  await until(() => acknowledged.size >= 40, 20_000, 'writes before the outage');
  await redis.kill();
  const before = codes.get(503) ?? 0;
  await until(() => (codes.get(503) ?? 0) >= before + 8, 20_000, 'failed writes during the outage');
  const ready = await s.request('GET', '/readyz?verbose');
  assert.equal(ready.status, 500);
  assert.match(ready.text, /\[-\]storage failed: /);
  await redis.restart();
  const atRestart = acknowledged.size;
  await until(() => acknowledged.size >= atRestart + 40, 30_000, 'writes after Redis returned');
  stop = true;
  await Promise.all(writers);

  assert.equal(codes.get(500) ?? 0, 0, 'never a 500');
  assert.ok(s.alive(), 'the server never exited');
  const list = await s.get(NS);
  assert.equal(list.status, 200);
  const stored = new Set<string>(list.body.items.map((o: any) => o.metadata.name));
  for (const name of acknowledged) assert.ok(stored.has(name), `acknowledged write ${name} is present`);
  // Readiness follows the store's health, which turns healthy on its own check after the first
  // successful commands: within seconds, not necessarily before this line.
  const readyBy = Date.now() + 10_000;
  while ((await s.get('/readyz')).status !== 200) {
    assert.ok(Date.now() < readyBy, '/readyz back to 200 within 10 s of recovery');
    await new Promise((r) => setTimeout(r, 100));
  }
});
