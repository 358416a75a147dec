// The event recorder against the sandbox's real events registry (embedded store): a flood of the
// same failure is one Event whose series counts it (the spam filter's budget, then one per refill
// carrying the true count), similar events aggregate into one "(combined from similar events)"
// Event, two objects have separate budgets, and no credential reaches a note.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createStore } from '../../src/storage/index.js';
import { Registries } from '../../src/registry/registries.js';
import { SANDBOX_RESOURCES } from '../../src/api/resources.js';
import { CorrelatingRecorder, SandboxEventSink, type Regarding } from '../../src/controllers/events/index.js';
import { SPAM_BURST, SPAM_REFILL_MS } from '../../src/controllers/events/correlator.js';
import { redact } from '../../src/controllers/events/recorder.js';
import { createLogger } from '../../src/metrics/logger.js';
import { tempDir } from './harness.js';

const gt = (name: string): Regarding => ({ cluster: '_', apiVersion: 'configbutler.ai/v1alpha1', kind: 'GitTarget', namespace: 'team-a', name, uid: `uid-${name}` });

async function setup(t: import('node:test').TestContext) {
  const store = await createStore({ storage: 'embedded', dataDir: tempDir(t, 'events-') });
  t.after(() => store.close());
  const registries = new Registries(store, SANDBOX_RESOURCES);
  let now = Date.parse('2026-12-01T12:00:00Z');
  const recorder = new CorrelatingRecorder(new SandboxEventSink(registries), createLogger('error'), 'replica-1', () => now);
  const events = async (name?: string) => {
    const { items } = await store.list({ group: '', resource: 'events' }, { cluster: '_', namespace: 'team-a' });
    return (items as any[]).filter((e) => !name || e.involvedObject.name === name);
  };
  return { recorder, events, advance: (ms: number) => (now += ms) };
}

test('a flood of 1000 equal push failures is one Event with a count; the spam filter holds the rest until its refill', { timeout: 30_000 }, async (t) => {
  const { recorder, events, advance } = await setup(t);
  for (let i = 0; i < 1000; i++) recorder.record(gt('tenants'), 'Warning', 'PushFailed', 'Push', 'Unreachable: connect ECONNREFUSED 127.0.0.1:9');
  await recorder.flush();
  let list = await events();
  assert.equal(list.length, 1);
  const e = list[0];
  assert.deepEqual(
    { type: e.type, reason: e.reason, message: e.message, action: e.action, involvedObject: e.involvedObject, reportingComponent: e.reportingComponent, reportingInstance: e.reportingInstance, series: e.series },
    {
      type: 'Warning', reason: 'PushFailed', message: 'Unreachable: connect ECONNREFUSED 127.0.0.1:9', action: 'Push',
      involvedObject: { apiVersion: 'configbutler.ai/v1alpha1', kind: 'GitTarget', namespace: 'team-a', name: 'tenants', uid: 'uid-tenants' },
      reportingComponent: 'configbutler.ai/reverser-apiserver', reportingInstance: 'replica-1',
      series: { count: SPAM_BURST, lastObservedTime: '2026-12-01T12:00:00.000000Z' },
    },
  );
  assert.equal(e.eventTime, '2026-12-01T12:00:00.000000Z');
  assert.match(e.metadata.name, /^tenants\.[0-9a-f]+$/);
  // One refill later the next failure is sent, with every failure counted meanwhile.
  advance(SPAM_REFILL_MS);
  recorder.record(gt('tenants'), 'Warning', 'PushFailed', 'Push', 'Unreachable: connect ECONNREFUSED 127.0.0.1:9');
  await recorder.flush();
  list = await events();
  assert.equal(list.length, 1);
  assert.deepEqual(list[0].series, { count: 1001, lastObservedTime: '2026-12-01T12:05:00.000000Z' });
});

test('similar events (same reason, other notes) aggregate after 10 into one combined Event; objects have their own budgets', { timeout: 30_000 }, async (t) => {
  const { recorder, events } = await setup(t);
  for (let i = 1; i <= 12; i++) recorder.record(gt('a'), 'Warning', 'PushFailed', 'Push', `Rejected: attempt ${i}`);
  for (let i = 0; i < 30; i++) recorder.record(gt('b'), 'Normal', 'Committed', 'Commit', `Committed ${i}`);
  await recorder.flush();
  const a = (await events('a')).map((e) => [e.message, e.series?.count ?? 1]).sort();
  assert.deepEqual(a, [
    ['(combined from similar events): Rejected: attempt 10', 3],
    ...[1, 2, 3, 4, 5, 6, 7, 8, 9].map((i) => [`Rejected: attempt ${i}`, 1]),
  ].sort());
  // b: 9 distinct, then one combined Event counting the rest up to the budget of 25.
  const b = await events('b');
  assert.equal(b.length, 10);
  assert.equal(b.find((e) => e.message.startsWith('(combined'))?.series?.count, SPAM_BURST - 9);
});

test('notes never carry credentials', () => {
  assert.equal(redact('push to https://alice:s3cr3t-t0ken@git.example.com/org/repo.git failed'), 'push to https://***@git.example.com/org/repo.git failed');
  assert.equal(redact('401 with Authorization: Bearer eyJhbGciOiJSUzI1NiJ9.payload.sig'), '401 with Authorization: Bearer ***');
  assert.equal(Buffer.byteLength(redact('x'.repeat(5000))), 1024);
});
