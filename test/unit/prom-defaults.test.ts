// src/metrics/prom.ts assembles prom-client's default metrics without the package index (which
// loads @opentelemetry/api): the same metrics, in the same order, with the same help and types as
// prom-client's own collectDefaultMetrics, and process CPU counters that count.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as promIndex from 'prom-client';
import { Registry, collectDefaultMetrics } from '../../src/metrics/prom.js';

const shape = async (r: { getMetricsAsJSON(): Promise<Array<{ name: string; help: string; type: unknown }>> }) =>
  (await r.getMetricsAsJSON()).map((m) => `${m.name} ${String(m.type)} ${m.help}`);

test('the default metrics are prom-client\'s own: names, types and help, in order', async () => {
  const ours = new Registry();
  collectDefaultMetrics({ register: ours, eventLoopMonitoringPrecision: 60_000 });
  const theirs = new promIndex.Registry();
  promIndex.collectDefaultMetrics({ register: theirs, eventLoopMonitoringPrecision: 60_000 });
  const expected = await shape(theirs);
  assert.ok(expected.length >= 20 && expected[0]!.startsWith('process_cpu_user_seconds_total counter'), expected.join('\n'));
  assert.deepEqual(await shape(ours), expected);
  assert.ok(ours instanceof promIndex.Registry, 'the same Registry class as the index exports');
});

test('the process CPU counters count user + system CPU', async () => {
  const r = new Registry();
  collectDefaultMetrics({ register: r, eventLoopMonitoringPrecision: 60_000 });
  const read = async () => {
    const text = await r.metrics();
    const v = (n: string) => Number(new RegExp(`^${n} ([0-9.e+-]+)$`, 'm').exec(text)?.[1]);
    return { user: v('process_cpu_user_seconds_total'), system: v('process_cpu_system_seconds_total'), total: v('process_cpu_seconds_total') };
  };
  const before = await read();
  const c0 = process.cpuUsage();
  for (const end = performance.now() + 100; performance.now() < end; ) Math.sqrt(Math.random());
  const burnt = process.cpuUsage(c0);
  const after = await read();
  assert.ok(after.user - before.user >= (burnt.user / 1e6) * 0.9, `user CPU counted: ${JSON.stringify({ before, after, burnt })}`);
  assert.ok(Math.abs(after.total - (after.user + after.system)) < 1e-6, `total is user + system: ${JSON.stringify(after)}`);
});
