// The windows controller's side of per-edit attribution: draining a GitTarget's staging list as
// facts arrive (or graces end), and the AuditAttribution condition that makes missing facts
// visible. Whichever replica holds the GitTarget's lease runs these; the facts and the record are
// in the Store, so any replica reaches the same answer.
import { attributionOf, DEFAULT_NO_FACTS_GRACE_MS, queryOf, UNRESOLVED, type Attribution, type AttributionConfig, type JoinTier } from '../../attribution/join.js';
import type { Condition } from '../status.js';
import type { CommitPolicy } from './policy.js';
import { unchanged, type WindowRecord, type WindowRecords } from './record.js';
import { drainStaging, toLookUp } from './staging.js';
import type { TargetKey } from './types.js';

export const AUDIT_ATTRIBUTION = 'AuditAttribution';
/** While changes wait, facts posted to another replica are noticed within this (a local post wakes the drain at once). */
export const STAGING_POLL_MS = 500;

/**
 * Looks up the staged changes (from the head; past one still within its grace nothing can move)
 * and moves what may move. Returns the join tiers of the changes that joined a window.
 */
export async function drainTarget(records: WindowRecords, cfg: AttributionConfig, target: TargetKey, route: string, policy: CommitPolicy, now: number): Promise<JoinTier[]> {
  const rec = await records.get(target);
  if (!rec?.staging?.length) return [];
  const found = new Map<number, Attribution>();
  for (const e of toLookUp(rec)) {
    const q = e.change ? queryOf(e.change, route) : undefined;
    const m = q ? await cfg.facts.find(q) : undefined;
    if (m) found.set(e.seq, attributionOf(m));
    else if (!q) found.set(e.seq, UNRESOLVED);
    else if (e.deadline > now) break;
  }
  return records.mutate(target, (r) => {
    const before = r.staging?.length ?? 0;
    const moved = drainStaging(r, found, policy, now);
    return moved.length === 0 && (r.staging?.length ?? 0) === before ? unchanged(moved) : moved;
  });
}

/**
 * The AuditAttribution condition of a GitTarget with an audit route, and when to look again.
 * True/FactsArriving when the route has facts; False/NoFactsReceived when edits were mirrored and
 * no fact arrived for the no-facts grace; Unknown before either is known.
 */
export async function auditCondition(
  records: WindowRecords,
  cfg: AttributionConfig,
  target: TargetKey,
  route: string,
  rec: WindowRecord | undefined,
  now: number,
): Promise<{ condition: Condition; recheckAt?: number }> {
  const stats = await cfg.facts.stats(route);
  let awaiting = rec?.attribution?.awaitingFactsSince;
  // A fact the route received since we last looked means facts arrive: the clock stops. (Compared
  // by value, not by time: kube-apiserver's clock is not ours.)
  if (rec && stats.lastFactTime && stats.lastFactTime !== rec.attribution?.lastFactSeen) {
    const waitingChanges = (rec.staging ?? []).some((e) => e.change && !e.resolved);
    await records.mutate(target, (r) => {
      const a = (r.attribution ??= {});
      if (a.lastFactSeen === stats.lastFactTime) return unchanged(undefined);
      a.lastFactSeen = stats.lastFactTime;
      if (waitingChanges) a.awaitingFactsSince = now;
      else delete a.awaitingFactsSince;
      return undefined;
    });
    awaiting = waitingChanges ? now : undefined;
  }
  const grace = cfg.noFactsGraceMs ?? DEFAULT_NO_FACTS_GRACE_MS;
  const last = stats.lastFactTime ? `the last at ${stats.lastFactTime}` : 'none received yet';
  if (awaiting !== undefined && now - awaiting >= grace) {
    return {
      condition: {
        type: AUDIT_ATTRIBUTION,
        status: 'False',
        reason: 'NoFactsReceived',
        message: `edits were mirrored since ${iso(awaiting)} but no audit fact arrived on route "${route}" within ${Math.round(grace / 1000)}s (${last}); their commits are authored "unknown (attribution unresolved)": check kube-apiserver's audit webhook and policy`,
      },
    };
  }
  const recheckAt = awaiting !== undefined ? awaiting + grace : undefined;
  if (stats.count > 0) {
    return { condition: { type: AUDIT_ATTRIBUTION, status: 'True', reason: 'FactsArriving', message: `${stats.count} audit facts on route "${route}" within their retention, ${last}` }, recheckAt };
  }
  return { condition: { type: AUDIT_ATTRIBUTION, status: 'Unknown', reason: 'NoFactsYet', message: `no audit fact received on route "${route}" yet` }, recheckAt };
}

function iso(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}
