// Kubernetes Events about our objects (GitTarget, CommitRequest), for `kubectl describe`: the
// controllers call record() and go on — it never waits, throws or fails a reconcile. Events are
// correlated as client-go's recorder does (correlator.ts) and written in the background to a sink
// (sinks.ts): the hosting cluster's events.k8s.io/v1 (or a kcp workspace's), the sandbox's own
// events, or nowhere. Writes about one object run in the order recorded (a series patch follows the
// create it patches); writes about different objects run up to MAX_IN_FLIGHT at once, so a burst
// (one snapshot `Committed` per new GitTarget, thousands at scale) is not paid one round trip after
// another. Notes never carry Secret data or tokens: every note passes through redact() and is cut to
// the 1 kB events.k8s.io allows.
import { hostname } from 'node:os';
import type { Logger } from '../../metrics/logger.js';
import { Counter, type Registry } from '../../metrics/prom.js';
import type { KubeObject } from '../../storage/types.js';
import { Permits, clusterOf } from '../runtime/index.js';
import { EventCorrelator } from './correlator.js';

export const REPORTING_CONTROLLER = 'configbutler.ai/reverser-apiserver';
/** events.k8s.io/v1 limits `note` to 1 kB. */
const MAX_NOTE_BYTES = 1024;
/** Events waiting for the sink beyond this are dropped (and said once): a slow sink never grows memory. */
const MAX_QUEUED = 1000;
/** Sink writes in flight at once (about different objects; one object's run in order). */
export const MAX_IN_FLIGHT = 8;

/** What became of a recorded event, the label of reverser_events_total. */
export type EventOutcome = 'created' | 'patched' | 'skipped' | 'dropped' | 'failed';

/** The object an Event is about (events.k8s.io `regarding`), with its logical cluster. */
export interface Regarding {
  cluster: string;
  apiVersion: string;
  kind: string;
  namespace: string;
  name: string;
  uid: string;
}

export type EventType = 'Normal' | 'Warning';

/** An events.k8s.io/v1 Event as the recorder builds it. */
export interface EventsV1Event {
  apiVersion: 'events.k8s.io/v1';
  kind: 'Event';
  metadata: { name: string; namespace: string };
  eventTime: string;
  reportingController: string;
  reportingInstance: string;
  action: string;
  reason: string;
  regarding: Omit<Regarding, 'cluster'>;
  note: string;
  type: EventType;
  series?: EventSeries;
}

export interface EventSeries {
  count: number;
  lastObservedTime: string;
}

/** Where Events go. `cluster` is the logical cluster of the regarding object. */
export interface EventSink {
  /** Says where, for the one log line at start. */
  readonly where: string;
  create(cluster: string, ev: EventsV1Event): Promise<void>;
  /** Updates the series of an Event created before; 'gone' when it no longer exists (expired). */
  patchSeries(cluster: string, namespace: string, name: string, series: EventSeries): Promise<'ok' | 'gone'>;
}

export interface EventRecorder {
  record(regarding: Regarding, type: EventType, reason: string, action: string, note: string): void;
}

/** Records nothing (no hosting cluster, no sandbox; and tests that do not look at events). */
export const NO_EVENTS: EventRecorder = { record() {} };

export function regardingOf(obj: KubeObject): Regarding {
  return { cluster: clusterOf(obj), apiVersion: obj.apiVersion, kind: obj.kind, namespace: obj.metadata.namespace ?? '', name: obj.metadata.name ?? '', uid: obj.metadata.uid ?? '' };
}

/** Credentials in URLs (`https://user:token@host`) and bearer tokens never reach an Event. */
export function redact(note: string): string {
  let out = note
    .replace(/([a-z][a-z0-9+.-]*:\/\/)[^/@\s]*@/gi, '$1***@')
    .replace(/\b(bearer|basic|token)\s+[A-Za-z0-9._~+/=-]{8,}/gi, '$1 ***');
  if (Buffer.byteLength(out) > MAX_NOTE_BYTES) {
    out = Buffer.from(out).subarray(0, MAX_NOTE_BYTES - 3).toString('utf8').replace(/\uFFFD+$/, '') + '...';
  }
  return out;
}

/** metav1.MicroTime: RFC 3339 with microseconds. */
export function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

let nameSeq = 0;
/** `<object name>.<hex>` as client-go names Events (UnixNano in hex; a counter keeps two in one ms apart). */
function eventName(objectName: string, ms: number): string {
  const nanos = BigInt(ms) * 1_000_000n + BigInt(nameSeq++ % 1_000_000);
  return `${objectName}.${nanos.toString(16)}`;
}

export interface RecorderOptions {
  /** Counts reverser_events_total{outcome} on this registry (the server's /metrics). */
  metrics?: Registry;
  /** Sink writes in flight at once (default MAX_IN_FLIGHT). */
  inFlight?: number;
}

export class CorrelatingRecorder implements EventRecorder {
  private readonly correlator: EventCorrelator;
  /** The last write queued per object: the next write about it runs after it. */
  private readonly byObject = new Map<string, Promise<void>>();
  /** Every write not settled yet (flush()). */
  private readonly pending = new Set<Promise<void>>();
  /** The in-flight slots, handed out first come first served (runtime/permits.ts). */
  private readonly slots: Permits;
  private queued = 0;
  private droppedSaid = false;
  private failureSaid = new Set<string>();
  private readonly outcomes?: Counter<'outcome'>;

  constructor(
    private readonly sink: EventSink,
    private readonly log: Logger,
    private readonly instance: string = hostname(),
    private readonly now: () => number = Date.now,
    opts: RecorderOptions = {},
  ) {
    this.correlator = new EventCorrelator(now);
    this.slots = new Permits(Math.max(1, opts.inFlight ?? MAX_IN_FLIGHT));
    if (opts.metrics) {
      this.outcomes = new Counter({
        name: 'reverser_events_total',
        help: 'Kubernetes Events recorded by the controllers, by outcome: created, patched (a repeat raised a series count), skipped (spam filter), dropped (the queue was full), failed (the sink refused).',
        labelNames: ['outcome'],
        registers: [opts.metrics],
      });
      for (const o of ['created', 'patched', 'skipped', 'dropped', 'failed'] as const) this.outcomes.inc({ outcome: o }, 0);
    }
  }

  private count(outcome: EventOutcome): void {
    this.outcomes?.inc({ outcome });
  }

  record(regarding: Regarding, type: EventType, reason: string, action: string, note: string): void {
    const objectKey = [regarding.cluster, regarding.apiVersion, regarding.kind, regarding.namespace, regarding.name, regarding.uid].join('/');
    const c = this.correlator.correlate({ objectKey, type, reason, action, note: redact(note) });
    if (c.op === 'skip') return this.count('skipped');
    if (this.queued >= MAX_QUEUED) {
      if (!this.droppedSaid) this.log.warn('events dropped: the event sink is not keeping up', { sink: this.sink.where, queued: this.queued });
      this.droppedSaid = true;
      return this.count('dropped');
    }
    this.queued++;
    const at = this.now();
    const write = async (): Promise<void> => {
      try {
        // A repeat patches the Event written for its key, known now that the writes before it ran
        // (a burst of repeats recorded before the first write finished still makes one Event).
        const written = c.op === 'series' ? this.correlator.nameOf(c.key) : undefined;
        if (c.op === 'series' && written !== undefined) {
          const series = { count: c.count, lastObservedTime: microTime(c.last) };
          if ((await this.sink.patchSeries(regarding.cluster, regarding.namespace, written, series)) === 'ok') return this.count('patched');
          this.correlator.forget(c.key);
        }
        const name = eventName(regarding.name, at);
        const { cluster: _c, ...ref } = regarding;
        const ev: EventsV1Event = {
          apiVersion: 'events.k8s.io/v1',
          kind: 'Event',
          metadata: { name, namespace: regarding.namespace },
          eventTime: microTime(c.first),
          reportingController: REPORTING_CONTROLLER,
          reportingInstance: this.instance,
          action,
          reason,
          regarding: ref,
          note: c.note,
          type,
          ...(c.op === 'series' ? { series: { count: c.count, lastObservedTime: microTime(c.last) } } : {}),
        };
        await this.sink.create(regarding.cluster, ev);
        this.correlator.created(c.key, name);
        this.count('created');
      } catch (e) {
        this.count('failed');
        // Said once per distinct failure (a missing RBAC grant fails every event the same way).
        const msg = (e as Error)?.message ?? String(e);
        if (!this.failureSaid.has(msg) && this.failureSaid.size < 100) {
          this.failureSaid.add(msg);
          this.log.warn('could not write an event', { sink: this.sink.where, reason, regarding: `${regarding.kind} ${regarding.namespace}/${regarding.name}`, error: msg });
        }
      } finally {
        this.queued--;
      }
    };
    // Correlation keys include the object, so ordering per object keeps a key's create before its patches.
    const before = this.byObject.get(objectKey) ?? Promise.resolve();
    const done: Promise<void> = before.then(() => this.slot(write));
    this.byObject.set(objectKey, done);
    this.pending.add(done);
    void done.then(() => {
      this.pending.delete(done);
      if (this.byObject.get(objectKey) === done) this.byObject.delete(objectKey);
    });
  }

  /** Runs `fn` in one of the in-flight slots (waiting for one first); `fn` never rejects. */
  private async slot(fn: () => Promise<void>): Promise<void> {
    const release = await this.slots.take();
    try {
      await fn();
    } finally {
      release();
    }
  }

  /** Resolves once every event recorded so far was handed to the sink (tests, shutdown). */
  async flush(): Promise<void> {
    while (this.pending.size > 0) await Promise.all([...this.pending]);
  }
}
