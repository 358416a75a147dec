// The windows controller's side of per-edit attribution: draining a GitTarget's staging list as
// facts arrive (or graces end), and the AuditAttribution condition that makes missing facts
// visible. Whichever replica holds the GitTarget's lease runs these; the facts and the record are
// in the Store, so any replica reaches the same answer.
import { attributionOf, DEFAULT_NO_FACTS_GRACE_MS, provisional, queryOf, UNRESOLVED, type Attribution, type AttributionConfig, type JoinTier } from '../../attribution/join.js';
import { isSandboxRoute } from '../../attribution/sandbox.js';
import type { Logger } from '../../metrics/logger.js';
import type { KubeObject } from '../../storage/types.js';
import { getCondition, setCondition, type Condition } from '../status.js';
import type { CommitPolicy } from './policy.js';
import { unchanged, type WindowRecord, type WindowRecords } from './record.js';
import { drainStaging, toLookUp } from './staging.js';
import type { TargetKey } from './types.js';

export const AUDIT_ATTRIBUTION = 'AuditAttribution';
/** A True AuditAttribution's message (fact count, last time) is refreshed at most this often. */
const AUDIT_MESSAGE_REFRESH_MS = 30_000;
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
    // A removal found only by its object's last write waits for its own delete evidence until the
    // grace ends; only then is the last writer the best answer left (docs/attribution.md).
    if (m && (!provisional(m) || e.deadline <= now)) found.set(e.seq, attributionOf(m));
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
 * The AuditAttribution condition of a GitTarget with an audit route, and when to look again. It
 * speaks only of facts that named this GitTarget's own changes — a route is shared (every tenant of
 * the hosting cluster posts to "hosting"), and the count or timing of other tenants' facts is not
 * this GitTarget's business. True/FactsArriving once facts named its changes; False/NoFactsReceived
 * when a change of its own waited the no-facts grace without its fact; Unknown before either.
 */
export function auditCondition(cfg: AttributionConfig, route: string, rec: WindowRecord | undefined, now: number): { condition: Condition; recheckAt?: number } {
  const a = rec?.attribution;
  const awaiting = a?.awaitingFactsSince;
  const grace = cfg.noFactsGraceMs ?? DEFAULT_NO_FACTS_GRACE_MS;
  const last = a?.lastNamedFactTime ? `the last fact naming one at ${a.lastNamedFactTime}` : 'no fact has named one yet';
  if (awaiting !== undefined && now - awaiting >= grace) {
    return {
      condition: {
        type: AUDIT_ATTRIBUTION,
        status: 'False',
        reason: 'NoFactsReceived',
        message: `edits were mirrored since ${iso(awaiting)} but no audit fact on route "${route}" named them within ${Math.round(grace / 1000)}s (${last}); their commits are authored "unknown (attribution unresolved)": check kube-apiserver's audit webhook and policy`,
      },
    };
  }
  const recheckAt = awaiting !== undefined ? awaiting + grace : undefined;
  if (a?.named) {
    return { condition: { type: AUDIT_ATTRIBUTION, status: 'True', reason: 'FactsArriving', message: `audit facts on route "${route}" named ${a.named} of this GitTarget's changes, ${last}` }, recheckAt };
  }
  return { condition: { type: AUDIT_ATTRIBUTION, status: 'Unknown', reason: 'NoFactsYet', message: `no audit fact on route "${route}" has named a change of this GitTarget yet` }, recheckAt };
}

type StatusEdit = (fn: (status: Record<string, unknown>, obj: KubeObject) => boolean) => Promise<void>;

/**
 * Writes a GitTarget's AuditAttribution (absent without a route, and for the sandbox's route). A transition is written at
 * once; a True condition's message (count, last fact) at most every AUDIT_MESSAGE_REFRESH_MS, so
 * facts arriving do not rewrite the GitTarget each time.
 */
export class AuditConditionWriter {
  private readonly writtenAt = new Map<string, number>();

  constructor(
    private readonly records: WindowRecords,
    private readonly cfg: AttributionConfig | undefined,
    private readonly log: Logger,
    /** The windows controller's clock (runtime/clock.ts). */
    private readonly now: () => number = Date.now,
  ) {}

  /** Returns when to evaluate again (ms since epoch), or undefined. */
  async write(key: string, gt: KubeObject, target: TargetKey, route: string | undefined, edit: StatusEdit): Promise<number | undefined> {
    const current = getCondition(gt, AUDIT_ATTRIBUTION);
    // The sandbox's facts come from this server's own request path: there is no audit delivery to watch.
    if (!route || !this.cfg || isSandboxRoute(route)) {
      if (current) {
        await edit((status) => {
          const conds = (status.conditions as Condition[] | undefined) ?? [];
          if (!conds.some((c) => c.type === AUDIT_ATTRIBUTION)) return false;
          status.conditions = conds.filter((c) => c.type !== AUDIT_ATTRIBUTION);
          return true;
        });
      }
      return undefined;
    }
    const now = this.now();
    const { condition, recheckAt } = auditCondition(this.cfg, route, await this.records.get(target), now);
    const transition = !current || current.status !== condition.status || current.reason !== condition.reason;
    const last = this.writtenAt.get(key) ?? 0;
    if (transition || (now - last >= AUDIT_MESSAGE_REFRESH_MS && current?.message !== condition.message)) {
      this.writtenAt.set(key, now);
      // Loud once per transition: a route nobody posts to loses every author until it is fixed.
      if (transition && condition.status === 'False') this.log.warn("no audit facts arrive for a GitTarget's route", { gitTarget: `${target.namespace}/${target.name}`, route, message: condition.message });
      await edit((status, obj) => setCondition(status, condition, obj.metadata.generation));
    } else if (current?.message !== condition.message) {
      return Math.min(recheckAt ?? Infinity, last + AUDIT_MESSAGE_REFRESH_MS);
    }
    return recheckAt;
  }

  forget(key: string): void {
    this.writtenAt.delete(key);
  }
}

function iso(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}
