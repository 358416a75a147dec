// The server's event-loop lag gauges (src/metrics/metrics.ts) read the delay itself: an idle loop
// reads ~0, not the interval between samples that node's histogram includes, and a stall reads
// at least its length less the 50 ms sampling interval.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { createServerMetrics } from '../../src/metrics/metrics.js';

async function gauge(metrics: ReturnType<typeof createServerMetrics>, name: string): Promise<number> {
  const text = await metrics.registry.metrics();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  assert.ok(line, `${name} is served`);
  return Number(line.split(' ')[1]);
}

test('event-loop lag: idle reads near 0; a 400 ms stall reads at least 350 ms (a lower bound within the 50 ms sampling interval)', { timeout: 30_000 }, async () => {
  const metrics = createServerMetrics();
  await gauge(metrics, 'nodejs_eventloop_lag_max_seconds'); // reset after start-up
  await sleep(1_100);
  const idle = await gauge(metrics, 'nodejs_eventloop_lag_max_seconds');
  // Without the interval taken off this reads ≥ the interval. A loaded machine adds its own delay.
  assert.ok(idle < 0.2, `idle max ${idle}`);
  const end = Date.now() + 400;
  while (Date.now() < end) { /* stall the loop */ }
  await sleep(600);
  const stalled = await gauge(metrics, 'nodejs_eventloop_lag_max_seconds');
  assert.ok(stalled >= 0.34 && stalled < 5, `stalled max ${stalled}`);
  assert.ok(await gauge(metrics, 'nodejs_eventloop_lag_p99_seconds') < 0.2, 'reset after each scrape');
});
