// Prometheus metrics of the API server, served at /metrics. Names follow kube-apiserver's where
// the meaning is the same, so existing dashboards read them.
import { createHistogram, performance } from 'node:perf_hooks';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export interface ServerMetrics {
  registry: Registry;
  requests: Counter<'verb' | 'resource' | 'code'>;
  requestDuration: Histogram<'verb' | 'resource'>;
  watches: Gauge<'resource'>;
}

/** How often the event-loop lag histogram samples (a timer's wake-ups: 20 a second). */
const LAG_SAMPLE_MS = 50;
const LAG_GAUGES = { min: 'min', max: 'max', mean: 'mean', p50: 50, p90: 90, p99: 99 } as const;

/**
 * prom-client sets every `nodejs_eventloop_lag_*` gauge from the `collect` of
 * `nodejs_eventloop_lag_seconds`, from node's histogram (perf_hooks.monitorEventLoopDelay) sampled
 * at eventLoopMonitoringPrecision. Two things make that histogram a poor fit here: it records the
 * time between samples, the interval included (prom-client's default 10 ms adds 10 ms to every
 * reading and costs 100 wake-ups a second, ~3 ms of CPU a second at rest: `npm run bench -- peer`,
 * docs/benchmarks.md), and its reset at each scrape forgets the previous sample's time, so the
 * first interval after a scrape is never recorded: a stall that begins right after a scrape is
 * not seen at all (found by test/unit/eventloop-lag-metrics.test.ts).
 * So the gauges are set from a sampler of our own: a timer every 50 ms (~0.6 ms of CPU a second)
 * records how late it fired, which is 0 on an idle loop and a lower bound of a stall (short of it
 * by at most the 50 ms it may have begun before the timer was due). prom-client's own histogram
 * is left to sample once a minute; its readings are overwritten.
 */
function reportLagFromOwnSampler(registry: Registry): void {
  const driver = registry.getSingleMetric('nodejs_eventloop_lag_seconds') as (Gauge & { collect?: () => unknown }) | undefined;
  const collect = driver?.collect;
  if (!driver || !collect) return;
  const histogram = createHistogram();
  let last = performance.now();
  setInterval(() => {
    const now = performance.now();
    // record() takes integers ≥ 1 (nanoseconds): 1 ns stands for "on time".
    histogram.record(Math.max(1, Math.round((now - last - LAG_SAMPLE_MS) * 1e6)));
    last = now;
  }, LAG_SAMPLE_MS).unref();
  const seconds = (ns: number) => (Number.isFinite(ns) && ns > 1 ? ns / 1e9 : 0);
  driver.collect = function collectFromOwnSampler(this: unknown) {
    collect.call(this);
    for (const [name, what] of Object.entries(LAG_GAUGES)) {
      const ns = histogram.count === 0 ? 0 : typeof what === 'number' ? histogram.percentile(what) : histogram[what];
      (registry.getSingleMetric(`nodejs_eventloop_lag_${name}_seconds`) as Gauge | undefined)?.set(seconds(ns));
    }
    histogram.reset();
  };
}

/** prom-client default gauges whose collection walks every active handle (see createServerMetrics). */
export const ACTIVE_HANDLE_GAUGES = ['nodejs_active_handles', 'nodejs_active_handles_total', 'nodejs_active_requests', 'nodejs_active_requests_total', 'nodejs_active_resources', 'nodejs_active_resources_total'];

export function createServerMetrics(): ServerMetrics {
  const registry = new Registry();
  // prom-client's own lag histogram is replaced by reportLagFromOwnSampler's (below).
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 60_000 });
  reportLagFromOwnSampler(registry);
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
