// prom-client's metric classes and default metrics without its package index. The index loads
// lib/defaultMetrics.js, whose process CPU collector (lib/metrics/processCpuTotal.js) requires
// @opentelemetry/api (51 CommonJS modules) at load, only to read a trace span when exemplars are
// enabled, which they never are here; that was ~30-70 ms of CPU before /readyz
// (docs/benchmarks.md "Side by side with the Go operator"). The classes come from the same files
// the index re-exports (prom-client is pinned in package.json), and the process CPU counters are
// the collector's, without exemplars. test/unit/startup-modules.test.ts checks that a started
// server has not loaded @opentelemetry/api, test/unit/prom-defaults.test.ts that the default
// metrics are prom-client's own, names, help and types.
import { createRequire } from 'node:module';
import type * as Prom from 'prom-client';

const load = createRequire(import.meta.url);

export const Counter: typeof Prom.Counter = load('prom-client/lib/counter');
export type Counter<T extends string = string> = Prom.Counter<T>;
export const Gauge: typeof Prom.Gauge = load('prom-client/lib/gauge');
export type Gauge<T extends string = string> = Prom.Gauge<T>;
export const Histogram: typeof Prom.Histogram = load('prom-client/lib/histogram');
export type Histogram<T extends string = string> = Prom.Histogram<T>;
export const Registry: typeof Prom.Registry = load('prom-client/lib/registry');
export type Registry = Prom.Registry;

type Collector = (register: Registry, config: Prom.DefaultMetricsCollectorConfiguration<'text/plain; version=0.0.4; charset=utf-8'>) => void;

/** process_cpu_{user,system}_seconds_total and process_cpu_seconds_total, as processCpuTotal.js sets them. */
function processCpuTotal(register: Registry): void {
  let last = process.cpuUsage();
  const user = new Counter({
    name: 'process_cpu_user_seconds_total',
    help: 'Total user CPU time spent in seconds.',
    registers: [register],
    // This one metric's collect sets all three, as prom-client's collector does.
    collect() {
      const now = process.cpuUsage();
      const u = now.user - last.user;
      const s = now.system - last.system;
      last = now;
      user.inc(u / 1e6);
      system.inc(s / 1e6);
      total.inc((u + s) / 1e6);
    },
  });
  const system = new Counter({ name: 'process_cpu_system_seconds_total', help: 'Total system CPU time spent in seconds.', registers: [register] });
  const total = new Counter({ name: 'process_cpu_seconds_total', help: 'Total user and system CPU time spent in seconds.', registers: [register] });
}

/** prom-client's collectDefaultMetrics (lib/defaultMetrics.js), in its order, for one registry. */
export function collectDefaultMetrics(config: { register: Registry; eventLoopMonitoringPrecision: number }): void {
  const names = ['processStartTime', 'osMemoryHeap', 'processOpenFileDescriptors', 'processMaxFileDescriptors', 'eventLoopLag'];
  if (typeof (process as { getActiveResourcesInfo?: unknown }).getActiveResourcesInfo === 'function') names.push('processResources');
  names.push('processHandles', 'processRequests', 'heapSizeAndUsed', 'heapSpacesSizeAndUsed', 'version', 'gc');
  processCpuTotal(config.register);
  for (const n of names) (load(`prom-client/lib/metrics/${n}`) as Collector)(config.register, config);
}
