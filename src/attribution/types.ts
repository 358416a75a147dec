// The contract between the audit ingestion (which turns kube-apiserver's audit EventLists into
// facts: who produced which version of which object) and the join (which names the author of each
// mirrored change from those facts). Ingestion owns the endpoint and the fact storage; the join
// owns the waiting, the per-author windows and the GitTarget's AuditAttribution condition.

import type { RequestUser, WriteVerb } from '../apiserver/write-observer.js';

/** The route of the hosting cluster: GitTargets without a kubeconfig source read facts from it. */
export const HOSTING_ROUTE = 'hosting';

/** The verbs that change objects: those of the request path's write observer (src/apiserver/write-observer.ts). */
export type FactVerb = WriteVerb;

/** The effective identity of an audited request (the impersonated user when there was one): a request's user. */
export type AuditUser = RequestUser;

/** One accepted audit event: a request that completed and changed an object. */
export interface AuditFact {
  /** The audit route the event was posted to (one per source cluster). */
  route: string;
  auditID: string;
  verb: FactVerb;
  /** API group ('' for core) and plural resource of the object. */
  group: string;
  resource: string;
  namespace: string;
  name: string;
  /** The object's uid; '' when the event does not say (a deletecollection fact). */
  uid: string;
  /** The resourceVersion the request produced; '' when the event does not say. */
  resourceVersion: string;
  /** deletecollection only: the uids its response listed. */
  uids?: string[];
  user: AuditUser;
  /** Who authenticated when the request impersonated `user` (audit's `user` beside `impersonatedUser`). */
  impersonator?: AuditUser;
  /** RFC 3339 (the event's stageTimestamp). */
  time: string;
}

/** What the join knows about one mirrored change when it asks who made it. */
export interface FactQuery {
  route: string;
  group: string;
  resource: string;
  namespace: string;
  name: string;
  uid: string;
  /** The resourceVersion of the change as the mirror observed it ('' for a deletion seen without one). */
  resourceVersion: string;
  /** A deletion: weaker keys apply (delete fact by uid, deletecollection uids, then namespace+name). */
  removal: boolean;
}

/** Which key matched (also the `tier` label of the join's metrics). */
export type FactTier = 'exact' | 'delete_uid' | 'deletecollection_uid' | 'delete_name' | 'latest_write';

export interface FactMatch {
  fact: AuditFact;
  tier: FactTier;
}

export interface RouteStats {
  /** Facts accepted for the route within the retention (TTL). */
  count: number;
  /** RFC 3339 of the newest accepted fact. */
  lastFactTime?: string;
}

/**
 * The durable fact store, shared by every replica through the Store (facts survive a restart and
 * expire after their TTL). `put` is idempotent: the same event posted twice is one fact.
 */
export interface AttributionFacts {
  put(facts: AuditFact[]): Promise<void>;
  /** The strongest match for a change, or undefined when no fact (yet) says who made it. */
  find(q: FactQuery): Promise<FactMatch | undefined>;
  stats(route: string): Promise<RouteStats>;
  /** A local hint that facts for `route` arrived (a waiter re-runs find); returns an unsubscribe. */
  onFacts(listener: (route: string) => void): () => void;
}
