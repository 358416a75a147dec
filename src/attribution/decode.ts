// From kube-apiserver's audit EventList (audit.k8s.io/v1, webhook batch mode) to attribution facts:
// the accept gate (docs/attribution.md), in order, and the identity backfill. An event that fails
// a check is counted under that check's outcome and dropped; the rest of its list still counts.
//
// Decisions of our own:
// - Subresources: only `scale` is accepted (it changes spec.replicas, which the mirror keeps).
//   `status` and every other subresource are rejected: the mirror drops status, so a status write
//   never becomes a mirrored change that needs an author, and accepting them would let a
//   controller's status write claim a resourceVersion.
// - A create/update/patch needs the object's uid and the resourceVersion it produced (the join's
//   exact key); a delete needs a uid or a name; without them the event is `no_identity`.
// - deletecollection keeps at most DELETECOLLECTION_UID_CAP uids from its response.

import * as status from '../api/status.js';
import type { AuditFact, AuditUser, FactVerb } from './types.js';

export const AUDIT_API_VERSION = 'audit.k8s.io/v1';
/** A deletecollection fact keeps at most this many uids (the rest are joined by the weaker tiers). */
export const DELETECOLLECTION_UID_CAP = 10_000;
/** The identity extras a fact keeps (OIDC claim mappings, docs/attribution.md); others are dropped. */
export const DISPLAY_NAME_EXTRA = 'configbutler.ai/claims/display-name';
export const EMAIL_EXTRA = 'configbutler.ai/claims/email';
const MAX_GROUPS = 64;
const MAX_FIELD = 1024;

export const EVENT_OUTCOMES = [
  'accepted',
  'malformed',
  'stage',
  'read_only_or_unknown_verb',
  'failed_request',
  'dry_run',
  'unchanged_resource_version',
  'non_scale_subresource',
  'no_user',
  'no_identity',
] as const;
export type EventOutcome = (typeof EVENT_OUTCOMES)[number];

const VERBS: ReadonlySet<string> = new Set<FactVerb>(['create', 'update', 'patch', 'delete', 'deletecollection']);

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string => (typeof v === 'string' ? v : '');
const meta = (o: unknown): Obj => (isObj(o) && isObj(o.metadata) ? o.metadata : {});

/** The events of an EventList body (already JSON-decoded within the depth limit); 400 otherwise. */
export function eventListItems(body: unknown): unknown[] {
  if (!isObj(body)) throw status.badRequest('the request body is not an audit EventList: expected a JSON object');
  if (body.apiVersion !== AUDIT_API_VERSION || body.kind !== 'EventList') {
    throw status.badRequest(
      `the request body is not an audit EventList: expected apiVersion "${AUDIT_API_VERSION}" and kind "EventList", got ${JSON.stringify(str(body.apiVersion))} and ${JSON.stringify(str(body.kind))} (configure the webhook backend in batch mode with --audit-webhook-version=${AUDIT_API_VERSION})`,
    );
  }
  if (body.items === undefined || body.items === null) return [];
  if (!Array.isArray(body.items)) throw status.badRequest('the request body is not an audit EventList: items must be a list');
  return body.items;
}

function dryRunAll(requestURI: string): boolean {
  const q = requestURI.indexOf('?');
  if (q < 0) return false;
  return new URLSearchParams(requestURI.slice(q + 1)).getAll('dryRun').includes('All');
}

function cut(s: string): string {
  return s.length > MAX_FIELD ? s.slice(0, MAX_FIELD) : s;
}

/** The effective user: the impersonated one when present (docs/attribution.md). */
function effectiveUser(ev: Obj): AuditUser | undefined {
  const u = isObj(ev.impersonatedUser) && str(ev.impersonatedUser.username) ? ev.impersonatedUser : isObj(ev.user) ? ev.user : undefined;
  const username = u ? str(u.username) : '';
  if (!u || username === '') return undefined;
  const user: AuditUser = { username: cut(username) };
  if (str(u.uid)) user.uid = cut(str(u.uid));
  if (Array.isArray(u.groups)) {
    const groups = u.groups.filter((g): g is string => typeof g === 'string').slice(0, MAX_GROUPS).map(cut);
    if (groups.length) user.groups = groups;
  }
  if (isObj(u.extra)) {
    const extra: Record<string, string[]> = {};
    for (const k of [DISPLAY_NAME_EXTRA, EMAIL_EXTRA]) {
      const v = u.extra[k];
      const first = Array.isArray(v) ? v.find((x): x is string => typeof x === 'string') : undefined;
      if (first !== undefined) extra[k] = [cut(first)];
    }
    if (Object.keys(extra).length) user.extra = extra;
  }
  return user;
}

/** uids of the objects a deletecollection's response lists (a List, or a Status without items). */
function listedUids(response: unknown): string[] {
  if (!isObj(response) || !Array.isArray(response.items)) return [];
  const out: string[] = [];
  for (const item of response.items) {
    const uid = str(meta(item).uid);
    if (uid) out.push(cut(uid));
    if (out.length >= DELETECOLLECTION_UID_CAP) break;
  }
  return out;
}

function eventTime(ev: Obj): string {
  for (const t of [str(ev.stageTimestamp), str(ev.requestReceivedTimestamp)]) if (t && Number.isFinite(Date.parse(t))) return t;
  return new Date().toISOString();
}

/** The accept gate for one event of `route`. */
export function factFromEvent(item: unknown, route: string): { outcome: EventOutcome; fact?: AuditFact } {
  if (!isObj(item) || !str(item.auditID)) return { outcome: 'malformed' };
  const ev = item;
  if (ev.stage !== 'ResponseComplete') return { outcome: 'stage' };
  const verb = str(ev.verb);
  // Non-resource requests carry HTTP verbs (post, put, ...) and no objectRef: they stop here.
  if (!VERBS.has(verb)) return { outcome: 'read_only_or_unknown_verb' };
  const code = isObj(ev.responseStatus) ? ev.responseStatus.code : undefined;
  if (typeof code !== 'number' || code >= 300) return { outcome: 'failed_request' };
  if (dryRunAll(str(ev.requestURI))) return { outcome: 'dry_run' };
  const ref: Obj = isObj(ev.objectRef) ? ev.objectRef : {};
  const subresource = str(ref.subresource);
  if (subresource !== '' && subresource !== 'scale') return { outcome: 'non_scale_subresource' };

  const req = ev.requestObject;
  const res = ev.responseObject;
  const responseRV = str(meta(res).resourceVersion);
  if (verb === 'create' || verb === 'update' || verb === 'patch') {
    // Needs level RequestResponse for the request and response objects; without them the request
    // side falls back to the objectRef (what the URL or body named), as docs/attribution.md says.
    const requestRV = str(meta(req).resourceVersion) || str(ref.resourceVersion);
    if (responseRV !== '' && requestRV === responseRV) return { outcome: 'unchanged_resource_version' };
  }
  const user = effectiveUser(ev);
  if (!user) return { outcome: 'no_user' };

  // Backfill (docs/attribution.md): the response describes the object for writes; for a delete it is the
  // deleted object or a Status naming it, and the request (DeleteOptions) may carry a uid precondition.
  const resMeta = meta(res);
  const reqMeta = meta(req);
  const namespace = str(ref.namespace) || str(resMeta.namespace) || str(reqMeta.namespace);
  const name = str(ref.name) || str(resMeta.name) || str(reqMeta.name);
  let uid = str(ref.uid) || str(resMeta.uid);
  if (!uid && verb === 'delete') {
    uid = (isObj(res) && isObj(res.details) ? str(res.details.uid) : '') || (isObj(req) && isObj(req.preconditions) ? str(req.preconditions.uid) : '');
  }
  if (!uid && verb !== 'delete' && verb !== 'deletecollection') uid = str(reqMeta.uid);
  if (!str(ref.resource)) return { outcome: 'no_identity' };
  const fact: AuditFact = {
    route,
    auditID: cut(str(ev.auditID)),
    verb: verb as FactVerb,
    group: cut(str(ref.apiGroup)),
    resource: cut(str(ref.resource)),
    namespace: cut(namespace),
    name: cut(name),
    uid: verb === 'deletecollection' ? '' : cut(uid),
    resourceVersion: verb === 'deletecollection' || res === undefined || (isObj(res) && res.kind === 'Status') ? '' : cut(responseRV),
    user,
    time: eventTime(ev),
  };
  if (verb === 'deletecollection') {
    fact.uids = listedUids(res);
  } else if (verb === 'delete') {
    if (!fact.uid && !fact.name) return { outcome: 'no_identity' };
  } else if (!fact.uid || !fact.resourceVersion) {
    return { outcome: 'no_identity' };
  }
  return { outcome: 'accepted', fact };
}
