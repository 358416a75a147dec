// The audit listener's accept gate and answers, against a real server process on a real Redis:
// each rejection by its outcome, the impersonated user, deletecollection uids, idempotent re-posts,
// and the metav1.Status of every refused request (400, 404, 405, 413, 415).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startRedis, type RedisServer } from '../support/redis.js';
import { auditEvent, eventList, metric, startAuditServer, type AuditServer } from './ingest-support.js';
import { StoreFacts } from '../../src/attribution/facts-store.js';
import { createRedisStore } from '../../src/storage/redis/store.js';
import type { Store } from '../../src/storage/types.js';
import type { FactQuery } from '../../src/attribution/types.js';

let redis: RedisServer;
let srv: AuditServer;
let facts: StoreFacts;
let factStore: Store;

test.before(async () => {
  redis = await startRedis();
  srv = await startAuditServer(undefined, ['--storage=redis', `--redis-url=${redis.url}`, '--redis-key-prefix=gate', '--audit-max-request-bytes=65536']);
  // What every replica on this Redis reads: the same StoreFacts the server writes with.
  factStore = await createRedisStore({ url: redis.url, keyPrefix: 'gate' });
  facts = new StoreFacts({ store: factStore });
});
test.after(async () => {
  await factStore?.close();
  await srv?.stop();
  await redis?.stop();
});

const q = (over: Partial<FactQuery>): FactQuery => ({
  route: 'hosting', group: '', resource: 'configmaps', namespace: 'team-a', name: 'cm', uid: 'uid-1', resourceVersion: '101', removal: false, ...over,
});

test('each accept-gate check rejects its event by outcome; the accepted one becomes a fact', async () => {
  const before = async (o: string) => metric(srv, 'reverser_audit_events_total', { outcome: o });
  const outcomes = ['accepted', 'stage', 'read_only_or_unknown_verb', 'failed_request', 'dry_run', 'unchanged_resource_version', 'non_scale_subresource', 'no_user', 'no_identity', 'malformed'];
  const start = Object.fromEntries(await Promise.all(outcomes.map(async (o) => [o, await before(o)] as const)));
  const list = eventList([
    auditEvent({ uid: 'g-ok', responseRV: '501', user: 'alice' }),
    auditEvent({ uid: 'g-stage', stage: 'RequestReceived' }),
    auditEvent({ uid: 'g-get', verb: 'get' }),
    auditEvent({ uid: 'g-409', code: 409 }),
    auditEvent({ uid: 'g-dry', dryRun: true }),
    auditEvent({ uid: 'g-same', requestRV: '502', responseRV: '502' }),
    auditEvent({ uid: 'g-status', subresource: 'status' }),
    auditEvent({ uid: 'g-nouser', user: '' }),
    { ...auditEvent({ uid: 'g-noref' }), objectRef: undefined, responseObject: undefined },
    { kind: 'Event' },
  ]);
  const r = await srv.post('/audit-webhook', list);
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.body, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', details: {}, code: 200 });
  for (const o of outcomes) assert.equal((await before(o)) - start[o], 1, `outcome ${o}`);
  assert.equal((await facts.find(q({ uid: 'g-ok', resourceVersion: '501' })))?.fact.user.username, 'alice');
  for (const uid of ['g-stage', 'g-get', 'g-409', 'g-dry', 'g-status', 'g-nouser']) {
    assert.equal(await facts.find(q({ uid, resourceVersion: '101', removal: true })), undefined, uid);
  }
  assert.equal(await facts.find(q({ uid: 'g-same', resourceVersion: '502' })), undefined);
});

test('a scale write is a fact; metadata-level events fall back to objectRef and still need a uid', async () => {
  const scale = auditEvent({ uid: 's-1', verb: 'patch', resource: 'deployments', apiGroup: 'apps', subresource: 'scale', responseRV: '601', user: 'scaler' });
  const meta = auditEvent({ uid: 's-2', metadataOnly: true });
  const r = await srv.post('/audit-webhook/hosting', eventList([scale, meta]));
  assert.equal(r.status, 200);
  const m = await facts.find(q({ group: 'apps', resource: 'deployments', uid: 's-1', resourceVersion: '601' }));
  assert.deepEqual([m?.tier, m?.fact.verb, m?.fact.user.username], ['exact', 'patch', 'scaler']);
});

test('the impersonated user is the author; only the display-name and email extras are kept', async () => {
  const ev = auditEvent({
    uid: 'imp-1',
    responseRV: '701',
    user: 'admin',
    impersonate: 'bob',
    extra: { 'configbutler.ai/claims/email': ['admin@example.com'] },
  });
  (ev.impersonatedUser as Record<string, unknown>).extra = {
    'configbutler.ai/claims/display-name': ['Bob Builder'],
    'configbutler.ai/claims/email': ['bob@example.com'],
    'authentication.kubernetes.io/credential-id': ['X509SHA256=secret-ish'],
  };
  assert.equal((await srv.post('/audit-webhook', eventList([ev]))).status, 200);
  const m = await facts.find(q({ uid: 'imp-1', resourceVersion: '701' }));
  assert.deepEqual(m?.fact.user, {
    username: 'bob',
    groups: ['system:authenticated'],
    extra: { 'configbutler.ai/claims/display-name': ['Bob Builder'], 'configbutler.ai/claims/email': ['bob@example.com'] },
  });
});

test('deletecollection is one fact with the uids of its response; a delete is found by uid and by name; routes are separate', async () => {
  const dc = auditEvent({ verb: 'deletecollection', user: 'carol', deletedUids: ['dc-1', 'dc-2', 'dc-3'] });
  const del = auditEvent({ verb: 'delete', name: 'gone', uid: 'del-1', user: 'dave' });
  assert.equal((await srv.post('/audit-webhook/edge-1.example', eventList([dc, del]))).status, 200);
  const route = 'edge-1.example';
  for (const uid of ['dc-1', 'dc-2', 'dc-3']) {
    const m = await facts.find(q({ route, uid, name: 'x', resourceVersion: '', removal: true }));
    assert.deepEqual([m?.tier, m?.fact.user.username, m?.fact.uids], ['deletecollection_uid', 'carol', ['dc-1', 'dc-2', 'dc-3']], uid);
  }
  let m = await facts.find(q({ route, uid: 'del-1', name: 'gone', resourceVersion: '', removal: true }));
  assert.deepEqual([m?.tier, m?.fact.user.username], ['delete_uid', 'dave']);
  m = await facts.find(q({ route, uid: '', name: 'gone', resourceVersion: '', removal: true }));
  assert.deepEqual([m?.tier, m?.fact.user.username], ['delete_name', 'dave']);
  assert.equal(await facts.find(q({ uid: 'dc-1', resourceVersion: '', removal: true })), undefined, 'the hosting route has none of them');
  assert.deepEqual(await facts.stats(route), { count: 2, lastFactTime: '2026-11-30T08:00:00.012Z' });
});

test('a duplicate post is one fact', async () => {
  const list = eventList([auditEvent({ auditID: 'dup-1', uid: 'dup', responseRV: '801', user: 'erin' })]);
  const route = 'dups';
  for (let i = 0; i < 3; i++) assert.equal((await srv.post(`/audit-webhook/${route}`, list)).status, 200);
  assert.equal((await facts.stats(route)).count, 1);
  assert.equal((await facts.find(q({ route, uid: 'dup', resourceVersion: '801' })))?.fact.user.username, 'erin');
});

test('refused requests: 400, 404, 405, 413, 415 as metav1.Status; nothing stored', async () => {
  const route = 'refused';
  const status = (code: number, reason: string) => ({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', reason, code });
  const cases: [string, string, unknown, number, string, string?][] = [
    ['POST', `/audit-webhook/${route}`, '{"kind":', 400, 'BadRequest'],
    ['POST', `/audit-webhook/${route}`, { kind: 'EventList', apiVersion: 'audit.k8s.io/v1beta1', items: [] }, 400, 'BadRequest'],
    ['POST', `/audit-webhook/${route}`, { kind: 'Event', apiVersion: 'audit.k8s.io/v1' }, 400, 'BadRequest'],
    ['POST', `/audit-webhook/${route}`, { kind: 'EventList', apiVersion: 'audit.k8s.io/v1', items: {} }, 400, 'BadRequest'],
    ['POST', `/audit-webhook/${route}`, '[]', 400, 'BadRequest'],
    ['POST', `/audit-webhook/${route}`, undefined, 400, 'BadRequest'],
    ['POST', `/audit-webhook/${route}`, '['.repeat(101) + ']'.repeat(101), 400, 'BadRequest'],
    ['POST', `/audit-webhook/${route}/extra`, eventList([]), 404, 'NotFound'],
    ['POST', `/audit-webhook/${route}/`, eventList([]), 404, 'NotFound'],
    ['POST', '/audit-webhook/Not_A_Route', eventList([]), 404, 'NotFound'],
    ['POST', '/audit-webhookx', eventList([]), 404, 'NotFound'],
    ['POST', '/apis', eventList([]), 404, 'NotFound'],
    ['GET', `/audit-webhook/${route}`, undefined, 405, 'MethodNotAllowed'],
    ['PUT', '/audit-webhook', eventList([]), 405, 'MethodNotAllowed'],
    ['POST', `/audit-webhook/${route}`, Buffer.alloc(70_000, 0x20), 413, 'RequestEntityTooLarge'],
    ['POST', `/audit-webhook/${route}`, 'kind: EventList', 415, 'UnsupportedMediaType', 'application/yaml'],
  ];
  for (const [method, path, body, code, reason, contentType] of cases) {
    const r = await srv.post(path, body, { method, contentType });
    const what = `${method} ${path} ${typeof body === 'string' ? body.slice(0, 20) : ''}`;
    assert.equal(r.status, code, `${what}: ${r.text}`);
    const { message, details, ...rest } = r.body ?? {};
    assert.deepEqual(rest, status(code, reason), what);
    assert.equal(typeof message, 'string', what);
  }
  // A 100-deep body is refused by the same guard as the API's bodies.
  const deep = await srv.post(`/audit-webhook/${route}`, '['.repeat(101) + ']'.repeat(101));
  assert.match(deep.body.message, /deeper than 100 levels/);
  assert.deepEqual(await facts.stats(route), { count: 0 });
  assert.ok((await metric(srv, 'reverser_audit_eventlists_total', { outcome: 'decode_error' })) >= 7);
  assert.ok((await metric(srv, 'reverser_audit_eventlists_total', { outcome: 'too_large' })) >= 1);
});

test("kube-apiserver's ?timeout= query is ignored; routes and users never become metric series", async () => {
  const series = async () => (await srv.get('/metrics')).text.split('\n').filter((l) => l.startsWith('reverser_audit_')).length;
  const before = await series();
  for (let i = 0; i < 40; i++) {
    const r = await srv.post(`/audit-webhook/route-${i}?timeout=30s`, eventList([auditEvent({ uid: `card-${i}`, responseRV: String(900 + i), user: `user-${i}` })]));
    assert.equal(r.status, 200, r.text);
  }
  assert.equal((await facts.find(q({ route: 'route-7', uid: 'card-7', resourceVersion: '907' })))?.fact.user.username, 'user-7');
  // Histogram buckets and counters exist from the first post on; 40 routes and users add none.
  assert.equal(await series(), before);
});
