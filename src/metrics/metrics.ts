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
  collectDefaultMetrics({ register: registry });
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
