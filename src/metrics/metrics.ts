// Prometheus metrics of the API server, served at /metrics. Names follow kube-apiserver's where
// the meaning is the same, so existing dashboards read them.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export interface ServerMetrics {
  registry: Registry;
  requests: Counter<'verb' | 'resource' | 'code'>;
  requestDuration: Histogram<'verb' | 'resource'>;
  watches: Gauge<'resource'>;
}

export function createServerMetrics(): ServerMetrics {
  const registry = new Registry();
  // The event-loop lag histogram samples with a timer: at prom-client's default 10 ms that is 100
  // wake-ups a second, ~3 ms of CPU a second at rest (measured: `npm run bench -- peer`,
  // docs/benchmarks.md). Every 250 ms still sees any stall that long, and a shorter one in
  // proportion to its length.
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 250 });
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
