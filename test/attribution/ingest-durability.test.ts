// Facts posted to a server process outlive it and are shared: a restart on the same data directory
// (embedded store) or the same Redis keeps them, two servers on one Redis write one fact set, facts
// expire after --audit-fact-ttl, and a Redis outage answers 500 (kube-apiserver retries) with
// nothing half-written.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startRedis } from '../support/redis.js';
import { until } from '../support/deadline.js';
import { createEmbeddedStore } from '../../src/storage/embedded.js';
import { StoreFacts } from '../../src/attribution/facts-store.js';
import type { FactQuery } from '../../src/attribution/types.js';
import { auditEvent, eventList, metric, redisFacts, startAuditServer } from './ingest-support.js';

const q = (over: Partial<FactQuery>): FactQuery => ({
  route: 'hosting', group: '', resource: 'configmaps', namespace: 'team-a', name: 'cm', uid: 'uid-1', resourceVersion: '101', removal: false, ...over,
});

test('embedded: facts survive a restart of the server on the same data directory', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'audit-embedded-'));
  t.after(() => rmSync(dataDir, { recursive: true, force: true, maxRetries: 5 })); // retried: a background snapshot may still be writing (src/storage/durable-log.ts)
  let srv = await startAuditServer(undefined, [], { dataDir });
  assert.equal((await srv.post('/audit-webhook', eventList([auditEvent({ uid: 'e-1', responseRV: '21', user: 'alice' })]))).status, 200);
  await srv.kill(); // a crash: no shutdown, nothing flushed on the way out
  srv = await startAuditServer(undefined, [], { dataDir });
  assert.equal((await srv.post('/audit-webhook', eventList([auditEvent({ uid: 'e-2', responseRV: '22', user: 'bob' })]))).status, 200);
  await srv.stop();
  // The data directory as the next start reads it.
  const store = await createEmbeddedStore({ dataDir });
  t.after(() => store.close());
  const facts = new StoreFacts({ store });
  assert.equal((await facts.find(q({ uid: 'e-1', resourceVersion: '21' })))?.fact.user.username, 'alice');
  assert.equal((await facts.find(q({ uid: 'e-2', resourceVersion: '22' })))?.fact.user.username, 'bob');
  assert.equal((await facts.stats('hosting')).count, 2);
});

test('redis: facts outlive the server that took them; two servers write one fact set', async (t) => {
  const redis = await startRedis();
  t.after(() => redis.stop());
  const args = ['--storage=redis', `--redis-url=${redis.url}`];
  const a = await startAuditServer(t, args);
  const b = await startAuditServer(t, args);
  assert.equal((await a.post('/audit-webhook', eventList([auditEvent({ uid: 'r-1', responseRV: '31', user: 'alice' })]))).status, 200);
  assert.equal((await b.post('/audit-webhook', eventList([auditEvent({ uid: 'r-2', responseRV: '32', user: 'bob' })]))).status, 200);
  await a.kill();
  const facts = await redisFacts(t, redis.url);
  assert.equal((await facts.find(q({ uid: 'r-1', resourceVersion: '31' })))?.fact.user.username, 'alice');
  assert.equal((await facts.find(q({ uid: 'r-2', resourceVersion: '32' })))?.fact.user.username, 'bob');
  assert.equal((await facts.stats('hosting')).count, 2);
});

test('facts expire after --audit-fact-ttl, and a restart does not bring them back', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'audit-ttl-'));
  t.after(() => rmSync(dataDir, { recursive: true, force: true, maxRetries: 5 })); // retried: a background snapshot may still be writing (src/storage/durable-log.ts)
  const srv = await startAuditServer(undefined, ['--audit-fact-ttl=2s'], { dataDir });
  const posted = Date.now();
  assert.equal((await srv.post('/audit-webhook', eventList([auditEvent({ uid: 'ttl-1', responseRV: '41' })]))).status, 200);
  await srv.stop();
  const open = async () => {
    const store = await createEmbeddedStore({ dataDir });
    t.after(() => store.close());
    return { store, facts: new StoreFacts({ store }) };
  };
  const first = await open();
  const live = await first.facts.find(q({ uid: 'ttl-1', resourceVersion: '41' }));
  if (Date.now() - posted < 1800) assert.equal(live?.tier, 'exact', 'found within the TTL');
  await first.store.close();
  await new Promise((r) => setTimeout(r, Math.max(0, posted + 2300 - Date.now())));
  const { facts } = await open();
  assert.equal(await facts.find(q({ uid: 'ttl-1', resourceVersion: '41' })), undefined);
  assert.deepEqual(await facts.stats('hosting'), { count: 0 });
});

test('redis: an outage answers 500 (kube-apiserver retries); the retry after it stores the facts once', async (t) => {
  const redis = await startRedis();
  t.after(() => redis.stop());
  const srv = await startAuditServer(t, ['--storage=redis', `--redis-url=${redis.url}`]);
  const list = eventList([
    auditEvent({ auditID: 'out-1', uid: 'o-1', responseRV: '51', user: 'alice' }),
    auditEvent({ auditID: 'out-2', verb: 'deletecollection', user: 'carol', deletedUids: ['o-2', 'o-3'] }),
  ]);
  await redis.kill();
  const r = await srv.post('/audit-webhook', list);
  assert.equal(r.status, 500, r.text);
  assert.deepEqual(
    { ...r.body, message: undefined, details: undefined },
    { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', reason: 'InternalError', code: 500, message: undefined, details: undefined },
  );
  assert.match(r.body.message, /could not be stored; retry the batch/);
  assert.equal(await metric(srv, 'reverser_audit_eventlists_total', { outcome: 'storage_error' }), 1);
  await redis.restart();
  const facts = await redisFacts(t, redis.url);
  // Nothing of the refused batch is there (the restarted Redis keeps no data, and the batch never reached it).
  assert.deepEqual(await facts.stats('hosting'), { count: 0 });
  await until(async () => (await srv.post('/audit-webhook', list)).status === 200, 'the retried batch to be stored once Redis is back', 20_000, 250);
  await srv.post('/audit-webhook', list);
  assert.equal((await facts.find(q({ uid: 'o-1', resourceVersion: '51' })))?.fact.user.username, 'alice');
  assert.equal((await facts.find(q({ uid: 'o-3', resourceVersion: '', removal: true })))?.fact.user.username, 'carol');
  assert.equal((await facts.stats('hosting')).count, 2);
});
