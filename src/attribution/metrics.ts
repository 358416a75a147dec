// Metrics of audit ingestion, on the server's /metrics. Every label comes from a closed set: never
// a route, a user, a resource or anything else a poster chooses (each distinct value is a time
// series held until the process ends).
import { Counter, Histogram, type Registry } from '../metrics/prom.js';
import type { EventOutcome } from './decode.js';

/** Outcome of one POST to the audit listener. */
export type EventListOutcome = 'accepted' | 'decode_error' | 'too_large' | 'unsupported_media_type' | 'storage_error' | 'not_found' | 'method_not_allowed';

export interface AuditMetrics {
  eventLists: Counter<'outcome'>;
  events: Counter<'outcome'>;
  /** Facts stored, by verb (create, update, patch, delete, deletecollection). */
  facts: Counter<'verb'>;
  factPutDuration: Histogram<'result'>;
  eventListSize: Histogram<string>;
}

export function createAuditMetrics(registry: Registry): AuditMetrics {
  return {
    eventLists: new Counter({
      name: 'reverser_audit_eventlists_total',
      help: 'POSTs to the audit listener by outcome (accepted, decode_error, too_large, unsupported_media_type, storage_error, not_found, method_not_allowed).',
      labelNames: ['outcome'],
      registers: [registry],
    }),
    events: new Counter({
      name: 'reverser_audit_events_total',
      help: 'Audit events by outcome: accepted as a fact, or the accept-gate check that rejected them.',
      labelNames: ['outcome'],
      registers: [registry],
    }),
    facts: new Counter({
      name: 'reverser_audit_facts_stored_total',
      help: 'Attribution facts written to the store, by verb (a re-posted event counts again; the store keeps it once).',
      labelNames: ['verb'],
      registers: [registry],
    }),
    factPutDuration: new Histogram({
      name: 'reverser_audit_fact_store_duration_seconds',
      help: 'Time to store the facts of one EventList (one atomic batch), by result (ok, error).',
      labelNames: ['result'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5],
      registers: [registry],
    }),
    eventListSize: new Histogram({
      name: 'reverser_audit_eventlist_events',
      help: 'Events per accepted EventList.',
      buckets: [1, 5, 10, 50, 100, 500, 1000, 5000, 10000],
      registers: [registry],
    }),
  };
}

export type { EventOutcome };
