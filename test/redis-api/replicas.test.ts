// Several server processes on one Redis behave as one API server (storage issue, "two-process test").
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startRedis } from '../support/redis.js';
import { gitTarget, ns, startServer, watch, type EventReader, type StartedServer } from '../support/server.js';

const NS = ns('team-a');

/** Two servers on one fresh Redis, sharing a dev CA so one admin certificate works on both. */
async function replicas(t: TestContext): Promise<[StartedServer, StartedServer]> {
  const redis = await startRedis();
  t.after(() => redis.stop());
  const certDir = mkdtempSync(join(tmpdir(), 'reverser-certs-'));
  t.after(() => rmSync(certDir, { recursive: true, force: true }));
  // The test writes more GitTargets into one namespace than the default quota allows (100).
  const args = ['--storage=redis', `--redis-url=${redis.url}`, `--cert-dir=${certDir}`, '--max-gittargets-per-namespace=0'];
  const a = await startServer(args);
  t.after(() => a.stop());
  const b = await startServer(args); // starts after A generated the certificates
  t.after(() => b.stop());
  return [a, b];
}

async function take(reader: EventReader, n: number): Promise<any[]> {
  const out: any[] = [];
  const deadline = setTimeout(() => reader.close(), 30_000);
  while (out.length < n) {
    const ev = await reader.next();
    if (ev === undefined) break;
    out.push(ev);
  }
  clearTimeout(deadline);
  return out;
}

test('two processes on one Redis: same event sequence, read-your-writes across replicas', async (t) => {
  const [a, b] = await replicas(t);
  const list = await a.get(NS);
  assert.equal(list.status, 200);
  const from = list.body.metadata.resourceVersion;
  const wa = await watch(a, `${NS}?watch=true&resourceVersion=${from}`);
  const wb = await watch(b, `${NS}?watch=true&resourceVersion=${from}`);
  t.after(() => {
    wa.close();
    wb.close();
  });

  // 1,000 interleaved writes: 250 creates, each followed by 3 updates, alternating A and B,
  // 8 objects in flight at a time; after every update a GET through the other replica.
  const servers = [a, b];
  let writes = 0;
  let crossChecks = 0;
  const worker = async (w: number) => {
    for (let i = w; i < 250; i += 8) {
      const name = `gt-${i}`;
      const created = await servers[i % 2]!.request('POST', NS, { body: gitTarget(name, 'team-a') });
      assert.equal(created.status, 201, created.text);
      writes++;
      let current = created.body;
      for (let u = 0; u < 3; u++) {
        const writer = servers[(i + u + 1) % 2]!;
        const reader = writer === a ? b : a;
        const next = structuredClone(current);
        next.metadata.labels = { round: String(u) };
        const updated = await writer.request('PUT', `${NS}/${name}`, { body: next });
        assert.equal(updated.status, 200, updated.text);
        writes++;
        current = updated.body;
        const got = await reader.get(`${NS}/${name}`);
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

  const [ea, eb] = await Promise.all([take(wa, 1000), take(wb, 1000)]);
  const seq = (evs: any[]) => evs.map((e) => `${e.type}:${e.object.metadata.name}:${e.object.metadata.resourceVersion}`);
  assert.equal(ea.length, 1000, `A saw ${ea.length} events`);
  assert.deepEqual(seq(ea), seq(eb));
  const rvs = ea.map((e) => Number(e.object.metadata.resourceVersion));
  for (let i = 1; i < rvs.length; i++) assert.ok(rvs[i]! > rvs[i - 1]!, 'resourceVersions strictly increase');
  assert.equal(ea.filter((e) => e.type === 'ADDED').length, 250);
  assert.equal(ea.filter((e) => e.type === 'MODIFIED').length, 750);
});

test('50 clients racing on one object with resourceVersion preconditions: one winner per round', async (t) => {
  const [a, b] = await replicas(t);
  const created = await a.request('POST', NS, { body: gitTarget('contended', 'team-a') });
  assert.equal(created.status, 201, created.text);
  const winners: string[] = [];
  for (let round = 0; round < 5; round++) {
    const cur = (await a.get(`${NS}/contended`)).body;
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, c) => {
        const next = structuredClone(cur);
        next.metadata.annotations = { ...(next.metadata.annotations ?? {}), [`winner-${round}`]: `client-${c}` };
        return (c % 2 ? a : b).request('PUT', `${NS}/contended`, { body: next }).then((r) => ({ c, r }));
      }),
    );
    const ok = results.filter((x) => x.r.status === 200);
    const conflicts = results.filter((x) => x.r.status === 409);
    assert.equal(ok.length, 1, `round ${round}: exactly one winner`);
    assert.equal(conflicts.length, 49, `round ${round}: everyone else 409`);
    for (const x of conflicts) assert.equal(x.r.body.reason, 'Conflict');
    winners.push(`client-${ok[0]!.c}`);
  }
  const final = (await b.get(`${NS}/contended`)).body;
  for (let round = 0; round < 5; round++) assert.equal(final.metadata.annotations[`winner-${round}`], winners[round]);
});
