// A /metrics scrape must not cost O(open connections): prom-client's active handle, request and
// resource gauges list every handle at each scrape and group them by type, so an attacker holding
// 3,000 connections made each scrape ~4.5 ms of CPU more (bench/attack "Idle connections";
// src/metrics/metrics.ts removes them). The test holds 1,000 loopback connections open (2,000
// handles), checks the gauges are gone, and reports the scrape's CPU (process.cpuUsage) with and
// without them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { ACTIVE_HANDLE_GAUGES, createServerMetrics } from '../../src/metrics/metrics.js';
import { withDeadline } from '../support/deadline.js';

const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

test('a scrape lists no active handles, whatever the number of open connections', { timeout: 60_000 }, async (t) => {
  const metrics = createServerMetrics();
  const server = net.createServer(() => {});
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as net.AddressInfo).port;
  const sockets: net.Socket[] = [];
  try {
    const scrape = async (n: number) => {
      const c = cpuMs();
      let text = '';
      for (let i = 0; i < n; i++) text = await metrics.registry.metrics();
      return { ms: (cpuMs() - c) / n, text };
    };
    await scrape(3);
    const idle = await scrape(10);
    await withDeadline(
      Promise.all(Array.from({ length: 1000 }, () => new Promise<void>((resolve, reject) => sockets.push(net.connect(port, '127.0.0.1', resolve).on('error', reject))))),
      '1,000 loopback connections',
      30_000,
    );
    const busy = await scrape(10);
    for (const name of ACTIVE_HANDLE_GAUGES) assert.ok(!new RegExp(`^${name}[ {]`, 'm').test(busy.text), `${name} is still scraped`);
    assert.match(busy.text, /^process_open_fds \d+/m);
    t.diagnostic(`scrape CPU: ${idle.ms.toFixed(2)} ms with no connections, ${busy.ms.toFixed(2)} ms with 1,000 held open (both ends in this process)`);
  } finally {
    sockets.forEach((s) => s.destroy());
    server.close();
  }
});
