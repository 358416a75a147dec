// Several server processes on one Redis behave as one API server (storage issue, "two-process test").
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startRedis } from '../support/redis.js';
import { gitTarget, NS, startServer, until } from './servers.js';

test('two processes on one Redis: same event sequence, read-your-writes across replicas', async (t) => {
  const redis = await startRedis();
  t.after(() => redis.stop());
  const certDir = mkdtempSync(join(tmpdir(), 'reverser-certs-'));
  t.after(() => rmSync(certDir, { recursive: true, force: true }));
  const a = await startServer({ redisUrl: redis.url, certDir });
  t.after(() => a.stop());
  const b = await startServer({ redisUrl: redis.url, certDir });
  t.after(() => b.stop());

  const list = await a.request('GET', NS);
  assert.equal(list.status, 200);
  const from = list.body.metadata.resourceVersion;
  const wa = a.watch(`${NS}?watch=true&resourceVersion=${from}`);
  const wb = b.watch(`${NS}?watch=true&resourceVersion=${from}`);
  t.after(() => {
    wa.stop();
    wb.stop();
  });

  // 1,000 interleaved writes: 250 creates, each followed by updates, alternating A and B,
  // 8 objects in flight at a time.
  const servers = [a, b];
  let writes = 0;
  let crossChecks = 0;
  const worker = async (w: number) => {
    for (let i = w; i < 250; i += 8) {
      const name = `gt-${i}`;
      const via = servers[i % 2]!;
      const other = servers[(i + 1) % 2]!;
      const created = await via.request('POST', NS, gitTarget(name));
      assert.equal(created.status, 201, JSON.stringify(created.body));
      writes++;
      let current = created.body;
      for (let u = 0; u < 3; u++) {
        const writer = servers[(i + u + 1) % 2]!;
        const next = structuredClone(current);
        next.metadata.labels = { round: String(u) };
        const updated = await writer.request('PUT', `${NS}/${name}`, next);
        assert.equal(updated.status, 200, JSON.stringify(updated.body));
        writes++;
        current = updated.body;
        // A GET through the other replica right after the acknowledged write sees it.
        const reader = writer === via ? other : via;
        const got = await reader.request('GET', `${NS}/${name}`);
        assert.equal(got.status, 200);
        assert.equal(got.body.metadata.resourceVersion, current.metadata.resourceVersion);
        assert.deepEqual(got.body.metadata.labels, { round: String(u) });
        crossChecks++;
      }
    }
  };
  await Promise.all(Array.from({ length: 8 }, (_, w) => worker(w)));
  assert.equal(writes, 1000);
  assert.equal(crossChecks, 750);

  await until(() => wa.events.length >= 1000 && wb.events.length >= 1000, 20_000, 'both watches to see 1,000 events').catch((e) => {
    const types = (evs: typeof wa.events) => JSON.stringify(evs.reduce((m: Record<string, number>, e) => ((m[e.type] = (m[e.type] ?? 0) + 1), m), {}));
    throw new Error(`${(e as Error).message}: A saw ${wa.events.length} ${types(wa.events)}, B saw ${wb.events.length} ${types(wb.events)}; last A ${JSON.stringify(wa.events.at(-1))?.slice(0, 300)}`);
  });
  const rvs = (evs: typeof wa.events) => evs.map((e) => `${e.type}:${e.object.metadata.name}:${e.object.metadata.resourceVersion}`);
  assert.equal(wa.events.length, 1000);
  assert.deepEqual(rvs(wa.events), rvs(wb.events));
  const numbers = wa.events.map((e) => Number(e.object.metadata.resourceVersion));
  for (let i = 1; i < numbers.length; i++) assert.ok(numbers[i]! > numbers[i - 1]!, 'resourceVersions strictly increase');
  assert.equal(wa.events.filter((e) => e.type === 'ADDED').length, 250);
  assert.equal(wa.events.filter((e) => e.type === 'MODIFIED').length, 750);
});

test('50 clients racing on one object with resourceVersion preconditions: one winner per round', async (t) => {
  const redis = await startRedis();
  t.after(() => redis.stop());
  const certDir = mkdtempSync(join(tmpdir(), 'reverser-certs-'));
  t.after(() => rmSync(certDir, { recursive: true, force: true }));
  const a = await startServer({ redisUrl: redis.url, certDir });
  t.after(() => a.stop());
  const b = await startServer({ redisUrl: redis.url, certDir });
  t.after(() => b.stop());
  const created = await a.request('POST', NS, gitTarget('contended'));
  assert.equal(created.status, 201);
  const winners: string[] = [];
  for (let round = 0; round < 5; round++) {
    const cur = (await a.request('GET', `${NS}/contended`)).body;
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, c) => {
        const next = structuredClone(cur);
        next.metadata.annotations = { ...(next.metadata.annotations ?? {}), [`winner-${round}`]: `client-${c}` };
        return (c % 2 ? a : b).request('PUT', `${NS}/contended`, next).then((r) => ({ c, r }));
      }),
    );
    const ok = results.filter((x) => x.r.status === 200);
    const conflicts = results.filter((x) => x.r.status === 409);
    assert.equal(ok.length, 1, `round ${round}: exactly one winner`);
    assert.equal(conflicts.length, 49, `round ${round}: everyone else 409`);
    for (const x of conflicts) assert.equal(x.r.body.reason, 'Conflict');
    winners.push(`client-${ok[0]!.c}`);
  }
  const final = (await b.request('GET', `${NS}/contended`)).body;
  for (let round = 0; round < 5; round++) assert.equal(final.metadata.annotations[`winner-${round}`], winners[round]);
});
