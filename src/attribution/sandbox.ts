// Attribution facts from this server's own request path (the sandbox, docs/sandbox.md). When the
// source cluster of a GitTarget is the sandbox this server serves, the server itself received every
// edit and knows who made it: after each successful write of a sandbox object the handler records
// the same fact an audit event would give (decode.ts), into the same fact store (facts-store.ts),
// before it answers the client. No audit configuration, and no wait: the join (join.ts) finds
// the fact when the mirror sees the change.
//
// Routes: one per logical cluster, `sandbox:<cluster>` (`sandbox:_` for the default cluster). A
// colon is not allowed in spec.attribution.auditRoute (a DNS-1123 subdomain), so no GitTarget can
// name another workspace's sandbox facts, and the audit webhook's routes never alias them.
import { randomUUID } from 'node:crypto';
import type { AuditFact, AuditUser, AttributionFacts } from './types.js';
import type { ObservedWrite, RequestUser, WriteObserver } from '../apiserver/write-observer.js';
import { DISPLAY_NAME_EXTRA, EMAIL_EXTRA } from './decode.js';

export const SANDBOX_ROUTE_PREFIX = 'sandbox:';

/** The fact route of the sandbox of logical cluster `cluster` (storage DEFAULT_CLUSTER `_` for a plain deployment). */
export function sandboxRoute(cluster: string): string {
  return `${SANDBOX_ROUTE_PREFIX}${cluster}`;
}

export function isSandboxRoute(route: string): boolean {
  return route.startsWith(SANDBOX_ROUTE_PREFIX);
}

/** The identity a fact keeps: as decode.ts keeps an audit event's (only the claim extras). */
function factUser(u: RequestUser): AuditUser {
  const out: AuditUser = { username: u.username };
  if (u.uid) out.uid = u.uid;
  if (u.groups?.length) out.groups = [...u.groups];
  const extra: Record<string, string[]> = {};
  for (const k of [DISPLAY_NAME_EXTRA, EMAIL_EXTRA]) {
    const first = u.extra?.[k]?.[0];
    if (first !== undefined) extra[k] = [first];
  }
  if (Object.keys(extra).length) out.extra = extra;
  return out;
}

/** The fact of one observed write (undefined when it names no object: nothing to join on). */
export function factOfWrite(w: ObservedWrite, now: Date = new Date()): AuditFact | undefined {
  const m = w.object?.metadata ?? {};
  const fact: AuditFact = {
    route: sandboxRoute(w.cluster),
    auditID: randomUUID(),
    verb: w.verb,
    group: w.group,
    resource: w.resource,
    namespace: w.namespace || m.namespace || '',
    name: m.name ?? '',
    uid: w.verb === 'deletecollection' ? '' : (m.uid ?? ''),
    resourceVersion: w.verb === 'deletecollection' ? '' : (m.resourceVersion ?? ''),
    user: factUser(w.user),
    time: now.toISOString(),
  };
  if (w.impersonator) fact.impersonator = factUser(w.impersonator);
  if (w.verb === 'deletecollection') {
    fact.uids = (w.removed ?? []).map((o) => o.metadata.uid ?? '').filter((u) => u !== '');
    return fact.uids.length ? fact : undefined;
  }
  if (!fact.uid || (w.verb !== 'delete' && !fact.resourceVersion)) return undefined;
  return fact;
}

/** The write observer (src/apiserver/write-observer.ts) of sandbox writes: the fact goes to the shared fact store. */
export function sandboxFactRecorder(facts: AttributionFacts): WriteObserver {
  return async (w) => {
    const f = factOfWrite(w);
    if (f) await facts.put([f]);
  };
}
