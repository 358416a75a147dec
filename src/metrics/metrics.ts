// Prometheus metrics of the API server, served at /metrics. Names follow kube-apiserver's where
// the meaning is the same, so existing dashboards read them.
import { monitorEventLoopDelay, performance, type IntervalHistogram } from 'node:perf_hooks';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from './prom.js';

export interface ServerMetrics {
  registry: Registry;
  requests: Counter<'verb' | 'resource' | 'code'>;
  requestDuration: Histogram<'verb' | 'resource'>;
  watches: Gauge<'resource'>;
}

/** How often node's event-loop delay monitor samples while /metrics is scraped (a libuv timer, no JS). */
const LAG_SAMPLE_MS = 50;
const LAG_GAUGES = { min: 'min', max: 'max', mean: 'mean', p50: 50, p90: 90, p99: 99 } as const;

/**
 * prom-client sets every `nodejs_eventloop_lag_*` gauge from the `collect` of
 * `nodejs_eventloop_lag_seconds`, from node's histogram (perf_hooks.monitorEventLoopDelay) sampled
 * at eventLoopMonitoringPrecision. Used as prom-client uses it, that histogram reads wrong in two
 * ways: it records the time between samples, the interval included (an idle loop read 10 ms at
 * prom-client's default precision, 250 ms at 250 ms), and its reset at each scrape forgets the
 * previous sample's time, so the first interval after a scrape is never recorded: a stall that
 * begins right after a scrape was not seen at all (test/unit/eventloop-lag-metrics.test.ts).
 *
 * So the gauges are set from a monitor of our own, read with both mended:
 * - the interval is subtracted from every reading, so an idle loop reads ~0 and a stall reads at
 *   least its length less the 50 ms interval;
 * - after each reset, one JS timer due one interval later stands in for the interval the reset
 *   lost: how late it fires is recorded beside the histogram (one timer per scrape);
 * - the monitor samples from the first scrape on: nobody reads the gauges before one, and a
 *   server that nobody scrapes wakes for nothing (its 20 timer wake-ups a second in JS were a
 *   third of the CPU at rest: `npm run bench -- peer`, docs/benchmarks.md). The first scrape
 *   reads 0.
 * prom-client's own histogram is left to sample once a minute; its readings are overwritten.
 */
function reportLagFromOwnMonitor(registry: Registry): void {
  const driver = registry.getSingleMetric('nodejs_eventloop_lag_seconds') as (Gauge & { collect?: () => unknown }) | undefined;
  const collect = driver?.collect;
  if (!driver || !collect) return;
  let monitor: IntervalHistogram | undefined;
  /** How late the stand-in timer for the interval lost at the last reset fired (ms), once it has. */
  let afterReset: number | undefined;
  let standIn: NodeJS.Timeout | undefined;
  const intervalNs = LAG_SAMPLE_MS * 1e6;
  const lateNs = (ns: number) => Math.max(0, ns - intervalNs);
  driver.collect = function collectFromOwnMonitor(this: unknown) {
    collect.call(this);
    const h = monitor;
    const extra = afterReset === undefined ? [] : [afterReset * 1e6];
    const n = (h?.count ?? 0) + extra.length;
    const values: Record<keyof typeof LAG_GAUGES, number> = { min: 0, max: 0, mean: 0, p50: 0, p90: 0, p99: 0 };
    if (n > 0) {
      const hasH = !!h && h.count > 0;
      values.min = Math.min(...(hasH ? [lateNs(h!.min)] : []), ...extra);
      values.max = Math.max(...(hasH ? [lateNs(h!.max)] : []), ...extra);
      values.mean = ((hasH ? lateNs(h!.mean) * h!.count : 0) + extra.reduce((a, b) => a + b, 0)) / n;
      for (const p of [50, 90, 99] as const) values[`p${p}`] = hasH ? lateNs(h!.percentile(p)) : extra[0]!;
    }
    for (const name of Object.keys(LAG_GAUGES) as (keyof typeof LAG_GAUGES)[]) {
      (registry.getSingleMetric(`nodejs_eventloop_lag_${name}_seconds`) as Gauge | undefined)?.set(values[name] / 1e9);
    }
    if (!monitor) {
      monitor = monitorEventLoopDelay({ resolution: LAG_SAMPLE_MS });
      monitor.enable();
    }
    monitor.reset();
    afterReset = undefined;
    clearTimeout(standIn);
    const due = performance.now() + LAG_SAMPLE_MS;
    standIn = setTimeout(() => (afterReset = Math.max(0, performance.now() - due)), LAG_SAMPLE_MS);
    standIn.unref();
  };
}

/** prom-client default gauges whose collection walks every active handle (see createServerMetrics). */
export const ACTIVE_HANDLE_GAUGES = ['nodejs_active_handles', 'nodejs_active_handles_total', 'nodejs_active_requests', 'nodejs_active_requests_total', 'nodejs_active_resources', 'nodejs_active_resources_total'];

export function createServerMetrics(): ServerMetrics {
  const registry = new Registry();
  // prom-client's own lag histogram is replaced by reportLagFromOwnMonitor's (above).
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 60_000 });
  reportLagFromOwnMonitor(registry);
  // Gone: the active handle, request and resource gauges list every handle at each scrape
  // (process._getActiveHandles(), getActiveResourcesInfo()) and group them by type, so a scrape
  // cost O(open connections): with 3,000 connections held open by an attacker, ~4.5 ms of CPU of
  // a ~10 ms scrape (CPU profile of bench/attack "Idle connections"). process_open_fds says
  // how many are open; kube-apiserver has no such gauges either.
  for (const name of ACTIVE_HANDLE_GAUGES) registry.removeSingleMetric(name);
  return {
    registry,
    requests: new Counter({
      name: 'apiserver_request_total',
      help: 'Requests by Kubernetes verb, resource and HTTP response code.',
      labelNames: ['verb', 'resource', 'code'],
      registers: [registry],
    }),
    requestDuration: new Histogram({
      name: 'apiserver_request_duration_seconds',
      help: 'Request latency by verb and resource (watches excluded).',
      labelNames: ['verb', 'resource'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    }),
    watches: new Gauge({
      name: 'apiserver_longrunning_requests',
      help: 'Open watch streams by resource.',
      labelNames: ['resource'],
      registers: [registry],
    }),
  };
}

const RESOURCE_VERBS = new Set(['get', 'list', 'watch', 'create', 'update', 'patch', 'delete', 'deletecollection']);
const HTTP_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'CONNECT', 'TRACE']);

/** What a request looked like, as far as labels may tell: nothing in here is trusted. */
export interface RequestShape {
  method: string;
  isResourceRequest?: boolean;
  verb?: string;
  apiGroup?: string;
  apiVersion?: string;
  resource?: string;
}

/**
 * Label values of one request, from closed sets only. Anything a client typed (resource names,
 * paths, methods, verbs) that is not one of the served values becomes the fixed value `other`:
 * every distinct label value is a new time series held in memory until the process ends, and
 * these labels are set before authentication (kube-apiserver cleans its labels the same way).
 */
export function requestLabels(r: RequestShape, group: string, version: string, served: ReadonlySet<string>): { verb: string; resource: string } {
  if (!r.isResourceRequest) {
    const m = r.method.toUpperCase();
    return { verb: HTTP_METHODS.has(m) ? m : 'other', resource: '' };
  }
  const verb = r.verb && RESOURCE_VERBS.has(r.verb) ? r.verb : 'other';
  const known = r.apiGroup === group && r.apiVersion === version && !!r.resource && served.has(r.resource);
  return { verb, resource: known ? r.resource! : 'other' };
}
