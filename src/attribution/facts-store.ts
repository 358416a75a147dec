// AttributionFacts on the Store's expiring records (storage/types.ts putRecords): every replica on
// the same backend sees the same facts, a restart keeps them, and they expire after the TTL
// (--audit-fact-ttl). One record space per audit route; within it, each fact is filed under every
// key the join may ask for (docs/attribution.md), all in one atomic batch per post:
//
//   e:<group/resource>:<uid>:<rv>   exact: this request produced this version (first claim wins)
//   w:<group/resource>:<uid>        the latest write (create/update/patch) by resourceVersion
//   d:<group/resource>:<uid>        the object's delete (latest by resourceVersion)
//   n:<group/resource>:<ns>:<name>  the same delete, by namespace and name
//   c:<group/resource>:<auditID>    a deletecollection fact (with the uids its response listed)
//   m:<group/resource>:<uid>        a uid that deletecollection removed → the key of its c: record
//
// Write facts and removal facts never share a key, so a deletion fact is never replaced by a write
// fact (docs/attribution.md). `find` is one MGET, plus one GET when a deletecollection matched.

import { recordKey } from '../storage/keys.js';
import type { RecordWrite, Store } from '../storage/types.js';
import type { AttributionFacts, AuditFact, FactMatch, FactQuery, FactTier, RouteStats } from './types.js';
import type { AuditMetrics } from './metrics.js';

export const DEFAULT_FACT_TTL_MS = 10 * 60_000;

const DIGITS = /^\d+$/;

function gr(f: { group: string; resource: string }): string {
  return `${f.group}/${f.resource}`;
}

const isRemoval = (verb: string) => verb === 'delete' || verb === 'deletecollection';

export interface StoreFactsOptions {
  store: Store;
  /** How long a fact lives (default 10 minutes). */
  ttlMs?: number;
  metrics?: AuditMetrics;
}

export class StoreFacts implements AttributionFacts {
  private readonly listeners = new Set<(route: string) => void>();
  readonly ttlMs: number;

  constructor(private readonly opts: StoreFactsOptions) {
    this.ttlMs = opts.ttlMs ?? DEFAULT_FACT_TTL_MS;
  }

  /** The record writes that file one fact (exported for tests of the layout). */
  static writes(f: AuditFact): RecordWrite[] {
    const value = JSON.stringify(f);
    const t = gr(f);
    const rvOrder = DIGITS.test(f.resourceVersion) ? f.resourceVersion : undefined;
    const out: RecordWrite[] = [];
    const ordered = (key: string): RecordWrite => (rvOrder ? { key, value, order: rvOrder } : { key, value });
    if (f.verb === 'deletecollection') {
      const own = recordKey('c', t, f.auditID);
      out.push({ key: own, value });
      for (const uid of f.uids ?? []) out.push({ key: recordKey('m', t, uid), value: own });
      return out;
    }
    // Order '0' for every claim: the first one stays (a no-op patch answered with the version
    // another request produced must not take that version over).
    if (f.uid && f.resourceVersion) out.push({ key: recordKey('e', t, f.uid, f.resourceVersion), value, order: '0' });
    if (isRemoval(f.verb)) {
      if (f.uid) out.push(ordered(recordKey('d', t, f.uid)));
      if (f.name) out.push(ordered(recordKey('n', t, f.namespace, f.name)));
    } else if (f.uid) {
      out.push(ordered(recordKey('w', t, f.uid)));
    }
    return out;
  }

  async put(facts: AuditFact[]): Promise<void> {
    const byRoute = new Map<string, AuditFact[]>();
    for (const f of facts) {
      let l = byRoute.get(f.route);
      if (!l) byRoute.set(f.route, (l = []));
      l.push(f);
    }
    for (const [route, list] of byRoute) {
      const writes: RecordWrite[] = [];
      const ids: string[] = [];
      let time = 0;
      for (const f of list) {
        writes.push(...StoreFacts.writes(f));
        ids.push(`${f.auditID}/${f.uid}`);
        const t = Date.parse(f.time);
        if (Number.isFinite(t) && t > time) time = t;
      }
      const end = this.opts.metrics?.factPutDuration.startTimer();
      try {
        await this.opts.store.putRecords(route, { writes, ids, time: time || Date.now(), ttlMs: this.ttlMs });
        end?.({ result: 'ok' });
      } catch (e) {
        end?.({ result: 'error' });
        throw e;
      }
      for (const f of list) this.opts.metrics?.facts.inc({ verb: f.verb });
      for (const l of this.listeners) {
        try {
          l(route);
        } catch {
          /* a listener's failure is its own */
        }
      }
    }
  }

  async find(q: FactQuery): Promise<FactMatch | undefined> {
    const t = gr(q);
    const asks: [FactTier, string][] = [];
    if (q.uid && q.resourceVersion) asks.push(['exact', recordKey('e', t, q.uid, q.resourceVersion)]);
    // A create or update never falls through to weaker keys: only its exact version says who made it.
    if (q.removal) {
      if (q.uid) asks.push(['delete_uid', recordKey('d', t, q.uid)], ['deletecollection_uid', recordKey('m', t, q.uid)]);
      if (q.name) asks.push(['delete_name', recordKey('n', t, q.namespace, q.name)]);
      if (q.uid) asks.push(['latest_write', recordKey('w', t, q.uid)]);
    }
    if (asks.length === 0) return undefined;
    const values = await this.opts.store.getRecords(q.route, asks.map(([, k]) => k));
    for (let i = 0; i < asks.length; i++) {
      const v = values[i];
      if (v === undefined) continue;
      const tier = asks[i]![0];
      let fact: AuditFact | undefined;
      if (tier === 'deletecollection_uid') {
        const [own] = await this.opts.store.getRecords(q.route, [v]);
        fact = own === undefined ? undefined : parse(own);
      } else {
        fact = parse(v);
      }
      if (!fact) continue;
      // A delete of an earlier object of the same name is not this object's delete.
      if (tier === 'delete_name' && q.uid && fact.uid && fact.uid !== q.uid) continue;
      return { fact, tier };
    }
    return undefined;
  }

  async stats(route: string): Promise<RouteStats> {
    const s = await this.opts.store.recordStats(route);
    return s.lastTime === undefined ? { count: s.count } : { count: s.count, lastFactTime: new Date(s.lastTime).toISOString() };
  }

  onFacts(listener: (route: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}

function parse(v: string): AuditFact | undefined {
  try {
    const f = JSON.parse(v) as AuditFact;
    return f && typeof f === 'object' && typeof f.user?.username === 'string' ? f : undefined;
  } catch {
    return undefined;
  }
}
