// Event correlation as client-go's recorder does it (k8s.io/client-go/tools/record/events_cache.go,
// EventCorrelator), so a flood of the same failure is one Event with a count, not thousands:
// 1. aggregate: events alike but for their note (same object, type, reason, controller) — after
//    MAX_SIMILAR distinct notes within AGGREGATE_WINDOW_MS they become one event whose note starts
//    "(combined from similar events): ";
// 2. observe: an event equal to one already emitted (same key) is a repeat: the emitted Event's
//    series count rises (events.k8s.io/v1 `series`), and the sink patches it instead of creating;
// 3. spam filter: a token bucket per object (SPAM_BURST events, then one per SPAM_REFILL_MS);
//    an observation over the budget is not sent, but is counted, so the next one sent carries the
//    true count.
// State is per replica, in memory, bounded (CACHE_SIZE entries, least recently used dropped).

export const AGGREGATE_WINDOW_MS = 10 * 60_000;
export const MAX_SIMILAR = 10;
export const SPAM_BURST = 25;
export const SPAM_REFILL_MS = 5 * 60_000;
const CACHE_SIZE = 4096;
export const COMBINED_PREFIX = '(combined from similar events): ';

/** What the recorder was asked to record (events.k8s.io/v1 terms). */
export interface EventInput {
  /** The object's identity: logical cluster, apiVersion, kind, namespace, name, uid. */
  objectKey: string;
  type: 'Normal' | 'Warning';
  reason: string;
  action: string;
  note: string;
}

export type Correlated =
  | { op: 'create'; key: string; note: string; first: number }
  | { op: 'series'; key: string; note: string; count: number; first: number; last: number }
  | { op: 'skip' };

interface Observed {
  count: number;
  first: number;
  last: number;
  /** metadata.name of the Event the sink created (set once created). */
  name?: string;
}

/** A Map used as an LRU: re-inserted on use, the oldest dropped past the limit. */
class Lru<V> {
  private readonly m = new Map<string, V>();
  constructor(private readonly limit: number) {}
  get(k: string): V | undefined {
    const v = this.m.get(k);
    if (v !== undefined) {
      this.m.delete(k);
      this.m.set(k, v);
    }
    return v;
  }
  set(k: string, v: V): void {
    this.m.delete(k);
    this.m.set(k, v);
    if (this.m.size > this.limit) this.m.delete(this.m.keys().next().value as string);
  }
}

export class EventCorrelator {
  private readonly similar = new Lru<{ notes: Set<string>; last: number }>(CACHE_SIZE);
  private readonly observed = new Lru<Observed>(CACHE_SIZE);
  private readonly buckets = new Lru<{ tokens: number; at: number }>(CACHE_SIZE);

  constructor(private readonly now: () => number = Date.now) {}

  correlate(e: EventInput): Correlated {
    const now = this.now();
    // 1. Aggregate similar events (same everything but the note).
    const aggKey = [e.objectKey, e.type, e.reason, e.action].join('\u0000');
    let sim = this.similar.get(aggKey);
    if (!sim || now - sim.last > AGGREGATE_WINDOW_MS) sim = { notes: new Set(), last: now };
    sim.notes.add(e.note);
    sim.last = now;
    this.similar.set(aggKey, sim);
    const combined = sim.notes.size >= MAX_SIMILAR;
    const note = combined ? COMBINED_PREFIX + e.note : e.note;
    const key = combined ? aggKey : `${aggKey}\u0000${e.note}`;
    // 2. Observe: a repeat of an emitted event raises its count.
    let obs = this.observed.get(key);
    const repeat = obs !== undefined && now - obs.last <= AGGREGATE_WINDOW_MS;
    if (!repeat) obs = { count: 1, first: now, last: now };
    else {
      obs!.count++;
      obs!.last = now;
    }
    this.observed.set(key, obs!);
    // 3. The spam filter, per object.
    if (!this.take(e.objectKey, now)) return { op: 'skip' };
    if (!repeat) return { op: 'create', key, note, first: obs!.first };
    // A repeat whose Event was never created (over budget, or the sink failed) is created with its count.
    return { op: 'series', key, note, count: obs!.count, first: obs!.first, last: now };
  }

  /** The sink created the Event of `key` under `name` (repeats patch it). */
  created(key: string, name: string): void {
    const obs = this.observed.get(key);
    if (obs) obs.name = name;
  }

  /** The name of the Event created for `key`, if one was (looked up when the write runs, after earlier writes). */
  nameOf(key: string): string | undefined {
    return this.observed.get(key)?.name;
  }

  /** The Event of `key` is gone (expired on the server): the next repeat creates a new one. */
  forget(key: string): void {
    const obs = this.observed.get(key);
    if (obs) obs.name = undefined;
  }

  private take(objectKey: string, now: number): boolean {
    let b = this.buckets.get(objectKey);
    if (!b) b = { tokens: SPAM_BURST, at: now };
    const refill = Math.floor((now - b.at) / SPAM_REFILL_MS);
    if (refill > 0) b = { tokens: Math.min(SPAM_BURST, b.tokens + refill), at: b.at + refill * SPAM_REFILL_MS };
    if (b.tokens >= SPAM_BURST) b.at = now;
    const ok = b.tokens > 0;
    if (ok) b.tokens--;
    this.buckets.set(objectKey, b);
    return ok;
  }
}
