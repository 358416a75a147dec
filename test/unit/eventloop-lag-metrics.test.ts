// The server's event-loop lag gauges (src/metrics/metrics.ts) read the delay itself: an idle loop
// reads ~0, not the 50 ms interval between samples that node's histogram includes, and a stall
// reads at least its length less that interval, also when it begins right after a scrape (whose
// reset of node's histogram drops the interval in progress).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { createServerMetrics } from '../../src/metrics/metrics.js';

/** One scrape: every `nodejs_eventloop_lag_*_seconds` gauge by its middle name (max, p50, ...). */
async function scrape(metrics: ReturnType<typeof createServerMetrics>): Promise<Record<string, number>> {
  const text = await metrics.registry.metrics();
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^nodejs_eventloop_lag_(\w+)_seconds (\S+)$/gm)) out[m[1]!] = Number(m[2]);
  for (const g of ['min', 'max', 'mean', 'p50', 'p90', 'p99']) assert.ok(Number.isFinite(out[g]), `nodejs_eventloop_lag_${g}_seconds is served`);
  return out;
}

test('event-loop lag: idle reads near 0; a 400 ms stall reads at least 350 ms (a lower bound within the 50 ms sampling interval)', { timeout: 30_000 }, async () => {
  const metrics = createServerMetrics();
  const first = await scrape(metrics); // the monitor samples from the first scrape on
  assert.equal(first.max, 0, 'nothing sampled before the first scrape');
  await sleep(1_100);
  const idle = await scrape(metrics);
  // A loaded machine adds its own delay to a few samples; the median stays well under the 50 ms
  // interval, which it would read at least were the interval not taken off.
  assert.ok(idle.max < 0.2, `idle max ${idle.max}`);
  assert.ok(idle.p50 < 0.025, `idle p50 ${idle.p50}`);
  const end = Date.now() + 400;
  while (Date.now() < end) { /* stall the loop right after a scrape */ }
  await sleep(600);
  const stalled = await scrape(metrics);
  assert.ok(stalled.max >= 0.34 && stalled.max < 5, `stalled max ${stalled.max}`);
  assert.ok((await scrape(metrics)).p99 < 0.2, 'reset after each scrape');
});
