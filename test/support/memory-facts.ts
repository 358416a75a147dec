// A small in-memory AttributionFacts: a test double of the *facts source* (what kube-apiserver's
// audit webhook would have told the server), so the join, the windows and the CommitRequests — our
// own code — run for real against it. It answers the contract's tiers in their order; the
// Store-backed implementation (src/attribution) is tested on its own.
import type { AttributionFacts, AuditFact, FactMatch, FactQuery, RouteStats } from '../../src/attribution/types.js';

export class MemoryFacts implements AttributionFacts {
  readonly facts: AuditFact[] = [];
  private readonly listeners = new Set<(route: string) => void>();
  /** Number of find() calls (to show a change resolved at add time needs no second look). */
  finds = 0;

  async put(facts: AuditFact[]): Promise<void> {
    for (const f of facts) {
      if (!this.facts.some((x) => x.route === f.route && x.auditID === f.auditID)) this.facts.push(f);
    }
    for (const route of new Set(facts.map((f) => f.route))) for (const l of this.listeners) l(route);
  }

  async find(q: FactQuery): Promise<FactMatch | undefined> {
    this.finds++;
    const scope = this.facts.filter((f) => f.route === q.route && f.group === q.group && f.resource === q.resource);
    const newest = (xs: AuditFact[]) => xs[xs.length - 1];
    const exact = newest(scope.filter((f) => f.uid && f.uid === q.uid && f.resourceVersion && f.resourceVersion === q.resourceVersion));
    if (exact) return { fact: exact, tier: 'exact' };
    if (!q.removal) return undefined;
    const byUid = newest(scope.filter((f) => f.verb === 'delete' && f.uid && f.uid === q.uid));
    if (byUid) return { fact: byUid, tier: 'delete_uid' };
    const coll = newest(scope.filter((f) => f.verb === 'deletecollection' && f.uids?.includes(q.uid)));
    if (coll) return { fact: coll, tier: 'deletecollection_uid' };
    const byName = newest(scope.filter((f) => f.verb === 'delete' && f.namespace === q.namespace && f.name === q.name));
    if (byName) return { fact: byName, tier: 'delete_name' };
    // As the Store's facts: the object's last write, a fallback the join may use only after the grace.
    const lastWrite = newest(scope.filter((f) => f.verb !== 'delete' && f.verb !== 'deletecollection' && f.uid && f.uid === q.uid));
    if (lastWrite) return { fact: lastWrite, tier: 'latest_write' };
    return undefined;
  }

  async stats(route: string): Promise<RouteStats> {
    const xs = this.facts.filter((f) => f.route === route);
    return { count: xs.length, lastFactTime: xs.map((f) => f.time).sort().at(-1) };
  }

  onFacts(listener: (route: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}

let auditSeq = 0;

/** A fact as ingestion would keep it: `user` produced `resourceVersion` of the object `uid`. */
export function fact(p: { user: string; extra?: Record<string, string[]>; uid: string; resourceVersion: string; name: string; namespace?: string; verb?: AuditFact['verb']; route?: string; resource?: string; group?: string; time?: string }): AuditFact {
  return {
    route: p.route ?? 'hosting',
    auditID: `audit-${++auditSeq}`,
    verb: p.verb ?? 'update',
    group: p.group ?? '',
    resource: p.resource ?? 'configmaps',
    namespace: p.namespace ?? 'team-a',
    name: p.name,
    uid: p.uid,
    resourceVersion: p.resourceVersion,
    user: { username: p.user, ...(p.extra ? { extra: p.extra } : {}) },
    time: p.time ?? new Date().toISOString(),
  };
}
