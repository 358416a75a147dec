// The event recorder at scale, against a real redis-server and the sandbox's real registries (as
// `serve --sandbox --storage=redis` writes its Events, src/controllers/events/sinks.ts):
// - the CPU of one Event create does not grow with the Events and namespaces already stored (the
//   10,000-tenant bench wrote one `Committed` Event per new GitTarget; docs/benchmarks.md);
// - writes about different objects run up to MAX_IN_FLIGHT at once, one object's in order;
// - a full queue drops, and says so in reverser_events_total{outcome="dropped"}.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createStore, type Store } from '../../src/storage/index.js';
import { Registries } from '../../src/registry/registries.js';
import { SANDBOX_RESOURCES } from '../../src/api/resources.js';
import { CorrelatingRecorder, SandboxEventSink, type EventSink, type Regarding } from '../../src/controllers/events/index.js';
import { MAX_IN_FLIGHT, type EventSeries, type EventsV1Event } from '../../src/controllers/events/recorder.js';
import { createLogger } from '../../src/metrics/logger.js';
import { Registry } from '../../src/metrics/prom.js';
import { startRedis } from '../support/redis.js';
import { withDeadline } from '../support/deadline.js';

const gt = (i: number, namespace = `t${i}`): Regarding => ({ cluster: '_', apiVersion: 'configbutler.ai/v1alpha1', kind: 'GitTarget', namespace, name: `gt-${i}`, uid: `uid-${i}` });

async function redisStore(t: import('node:test').TestContext): Promise<Store> {
  const redis = await startRedis();
  t.after(() => redis.stop());
  const store = await createStore({ storage: 'redis', redisUrl: redis.url, redisKeyPrefix: 'ev' });
  t.after(() => store.close());
  return store;
}

/** `n` namespaces t<from>.. with one Event each, written straight to the store, 200 at a time. */
async function seed(store: Store, from: number, n: number): Promise<void> {
  const at = '2026-12-01T12:00:00.000000Z';
  for (let i = from; i < from + n; i += 200) {
    const batch: Promise<unknown>[] = [];
    for (let j = i; j < Math.min(from + n, i + 200); j++) {
      const ns = `t${j}`;
      batch.push(store.create({ group: '', resource: 'namespaces' }, { cluster: '_', namespace: '', name: ns }, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns }, status: { phase: 'Active' } }));
      batch.push(
        store.create({ group: '', resource: 'events' }, { cluster: '_', namespace: ns, name: `seed.${j}` }, {
          apiVersion: 'v1', kind: 'Event', metadata: { name: `seed.${j}`, namespace: ns },
          involvedObject: { apiVersion: 'configbutler.ai/v1alpha1', kind: 'GitTarget', namespace: ns, name: `seed-${j}`, uid: `seed-${j}` },
          reason: 'Committed', message: `Committed ${j}`, type: 'Normal', eventTime: at, action: 'Commit',
        }),
      );
    }
    await Promise.all(batch);
  }
}

const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

test('the CPU of an Event create with 10,000 Events and namespaces stored is within 3x of with 100', { timeout: 240_000 }, async (t) => {
  const store = await redisStore(t);
  const registries = new Registries(store, SANDBOX_RESOURCES, { namespaceLifecycle: { rootCAPem: 'CA' } });
  const recorder = new CorrelatingRecorder(new SandboxEventSink(registries), createLogger('error'), 'replica-1');
  let next = 0;
  // CPU per Event over `n` creates about `n` new GitTargets in the seeded namespaces (median of 3 rounds).
  const perCreate = async (namespaces: number, n: number): Promise<number> => {
    const rounds: number[] = [];
    for (let r = 0; r < 3; r++) {
      const c0 = cpuMs();
      for (let k = 0; k < n; k++, next++) recorder.record(gt(next, `t${next % namespaces}`), 'Normal', 'Committed', 'Commit', `Committed ${next.toString(16)} to main: snapshot`);
      await withDeadline(recorder.flush(), `${n} Events written`, 60_000);
      rounds.push((cpuMs() - c0) / n);
    }
    return rounds.sort((a, b) => a - b)[1]!;
  };
  await seed(store, 0, 100);
  await perCreate(100, 300); // warm-up: the registries' first writes compile schemas and load caches, the JIT settles
  const small = await perCreate(100, 200);
  await seed(store, 100, 9_900);
  const large = await perCreate(10_000, 200);
  const { items } = await store.list({ group: '', resource: 'events' }, { cluster: '_' });
  assert.equal(items.length, 10_000 + 3 * 300 + 3 * 200 + 3 * 200);
  t.diagnostic(`CPU per Event create: ${small.toFixed(2)} ms with 100 stored, ${large.toFixed(2)} ms with 10,000 (ratio ${(large / small).toFixed(2)})`);
  assert.ok(large <= 3 * small + 0.5, `CPU per Event create grew with the stored Events: ${small.toFixed(2)} ms at 100, ${large.toFixed(2)} ms at 10,000`);
});

/** The real sandbox sink, with the writes in flight counted and (while `hold` is set) held at the door. */
class CountingSink implements EventSink {
  readonly where = 'counting';
  inFlight = 0;
  maxInFlight = 0;
  readonly log: string[] = [];
  hold: Promise<void> | undefined;
  constructor(private readonly inner: EventSink) {}
  private async run<T>(what: string, fn: () => Promise<T>): Promise<T> {
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    try {
      if (this.hold) await this.hold;
      await new Promise((r) => setTimeout(r, 2)); // a round trip's worth, so overlap shows
      const out = await fn();
      this.log.push(what);
      return out;
    } finally {
      this.inFlight--;
    }
  }
  create(cluster: string, ev: EventsV1Event): Promise<void> {
    return this.run(`create ${ev.regarding.name} ${ev.note}`, () => this.inner.create(cluster, ev));
  }
  patchSeries(cluster: string, namespace: string, name: string, series: EventSeries): Promise<'ok' | 'gone'> {
    return this.run(`patch ${name.split('.')[0]} ${series.count}`, () => this.inner.patchSeries(cluster, namespace, name, series));
  }
}

test('writes about different objects overlap up to MAX_IN_FLIGHT; one object\'s run in order, its create before its patches', { timeout: 60_000 }, async (t) => {
  const store = await redisStore(t);
  await seed(store, 0, 1);
  const sink = new CountingSink(new SandboxEventSink(new Registries(store, SANDBOX_RESOURCES, { namespaceLifecycle: { rootCAPem: 'CA' } })));
  const recorder = new CorrelatingRecorder(sink, createLogger('error'), 'replica-1');
  for (let i = 0; i < 40; i++) recorder.record(gt(i, 't0'), 'Normal', 'Committed', 'Commit', 'Committed abc to main');
  // Three equal events about one object: one create, then two series patches, in that order.
  for (let k = 0; k < 3; k++) recorder.record(gt(99, 't0'), 'Warning', 'PushFailed', 'Push', 'Unreachable');
  await withDeadline(recorder.flush(), 'the Events written', 30_000);
  assert.equal(sink.maxInFlight, MAX_IN_FLIGHT);
  assert.deepEqual(sink.log.filter((l) => l.startsWith('create gt-99') || l.startsWith('patch gt-99')), ['create gt-99 Unreachable', 'patch gt-99 2', 'patch gt-99 3']);
  const { items } = await store.list({ group: '', resource: 'events' }, { cluster: '_', namespace: 't0' });
  assert.equal(items.length, 1 + 40 + 1);
  assert.deepEqual((items as any[]).find((e) => e.involvedObject.name === 'gt-99').series.count, 3);
});

test('a full queue drops Events and counts them in reverser_events_total{outcome="dropped"}', { timeout: 60_000 }, async (t) => {
  const store = await redisStore(t);
  await seed(store, 0, 1);
  const sink = new CountingSink(new SandboxEventSink(new Registries(store, SANDBOX_RESOURCES, { namespaceLifecycle: { rootCAPem: 'CA' } })));
  let open!: () => void;
  sink.hold = new Promise((r) => (open = r));
  const metrics = new Registry();
  const recorder = new CorrelatingRecorder(sink, createLogger('error'), 'replica-1', undefined, { metrics });
  for (let i = 0; i < 1005; i++) recorder.record(gt(i, 't0'), 'Normal', 'Committed', 'Commit', 'Committed abc to main');
  open();
  await withDeadline(recorder.flush(), 'the queued Events written', 30_000);
  const text = await metrics.metrics();
  const value = (outcome: string) => Number(new RegExp(`^reverser_events_total\\{outcome="${outcome}"\\} (\\d+)$`, 'm').exec(text)?.[1]);
  assert.deepEqual({ created: value('created'), dropped: value('dropped'), failed: value('failed'), patched: value('patched') }, { created: 1000, dropped: 5, failed: 0, patched: 0 });
  const { items } = await store.list({ group: '', resource: 'events' }, { cluster: '_', namespace: 't0' });
  assert.equal(items.length, 1 + 1000);
});
