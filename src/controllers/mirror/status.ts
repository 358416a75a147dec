// GitTarget status as the mirror owns it: Validated, SourceReachable, Synced, status.streams,
// observedGeneration, and Ready (True only when Validated, SourceReachable, RepositoryReady and Synced
// all are). RepositoryReady, lastCommit and pendingChanges belong to the windows controller; they
// are read here, never written. Every write goes through the registry (controllers/client.ts) from the latest stored object and
// changes only these fields, so two controllers writing one status never undo each other.
import type { KubeObject, ObjectKey, ResourceRef } from '../../storage/types.js';
import { updateStatus, type Condition } from '../status.js';
import type { SystemClient } from '../client.js';
import { NO_EVENTS, regardingOf, type EventRecorder } from '../events/recorder.js';
import { NOTHING_TO_MIRROR } from './target.js';

export type { Condition };

export interface MirrorStatus {
  generation: number;
  validated: Omit<Condition, 'type'>;
  sourceReachable: Omit<Condition, 'type'>;
  synced: Omit<Condition, 'type'>;
  streams: { ready: number; total: number };
  /** spec.suspend: Ready is False with reason Suspended whatever the rest says. */
  suspended?: boolean;
}

const GITTARGETS: ResourceRef = { group: 'configbutler.ai', resource: 'gittargets' };
const OWN = ['Validated', 'SourceReachable', 'Synced', 'Ready'];
const READY_INPUTS = ['Validated', 'SourceReachable', 'RepositoryReady', 'Synced'];

/**
 * Ready from its four inputs: the first one not True gives the reason and the message. When nothing
 * matches spec.resources (Synced's reason NothingToMirror), Ready is True with that reason and
 * Synced's message (what it waits for); with no spec.resources at all the repository is never
 * touched, so RepositoryReady is not needed.
 */
export function readyCondition(conds: Condition[], suspended: boolean): Omit<Condition, 'type'> {
  if (suspended) return { status: 'False', reason: 'Suspended', message: 'spec.suspend is true: nothing is mirrored or committed' };
  const synced = conds.find((x) => x.type === 'Synced');
  const nothing = synced?.status === 'True' && synced.reason === NOTHING_TO_MIRROR;
  for (const t of READY_INPUTS) {
    const c = conds.find((x) => x.type === t);
    if (!c && t === 'RepositoryReady' && nothing) continue;
    if (!c) return { status: 'False', reason: t === 'RepositoryReady' ? 'RepositoryNotChecked' : `${t}Unknown`, message: `${t} has not been reported yet` };
    if (c.status !== 'True') return { status: 'False', reason: c.reason, message: `${t}: ${c.message}` };
  }
  if (nothing) return { status: 'True', reason: NOTHING_TO_MIRROR, message: synced!.message };
  return { status: 'True', reason: 'Ready', message: 'the source is mirrored into the repository' };
}

/** Ready first, then its inputs, then anything else: stable for readers and diffs. */
const CONDITION_ORDER = ['Ready', 'Validated', 'SourceReachable', 'RepositoryReady', 'Synced'];

/**
 * A GitTarget's conditions in CONDITION_ORDER. Both writers of the status keep it
 * (windows/target-status.ts too): when the windows controller appended RepositoryReady last, the
 * mirror's next write only moved it back, one write per new GitTarget that changed nothing else.
 */
export function inConditionOrder<C extends { type: string }>(conds: C[]): C[] {
  const rank = (c: C) => CONDITION_ORDER.indexOf(c.type) + 1 || 99;
  return [...conds].sort((a, b) => rank(a) - rank(b));
}

/** The status `obj` should have; undefined when it already has it. */
export function mergeStatus(obj: KubeObject, s: MirrorStatus, now: string): Record<string, unknown> | undefined {
  const status = { ...((obj.status as Record<string, unknown>) ?? {}) };
  const old = Array.isArray(status.conditions) ? (status.conditions as Condition[]) : [];
  const mine: Condition[] = [
    { type: 'Validated', ...s.validated },
    { type: 'SourceReachable', ...s.sourceReachable },
    { type: 'Synced', ...s.synced },
  ];
  const others = old.filter((c) => !OWN.includes(c.type));
  const ready: Condition = { type: 'Ready', ...readyCondition([...mine, ...others], !!s.suspended) };
  const next = [...others, ...mine, ready].map((c) => {
    const prev = old.find((o) => o.type === c.type);
    if (!OWN.includes(c.type)) return c;
    return {
      type: c.type,
      status: c.status,
      observedGeneration: s.generation,
      lastTransitionTime: prev && prev.status === c.status && prev.lastTransitionTime ? prev.lastTransitionTime : now,
      reason: c.reason,
      message: c.message.slice(0, 32768),
    };
  });
  status.conditions = inConditionOrder(next);
  status.observedGeneration = s.generation;
  status.streams = { ready: s.streams.ready, total: s.streams.total, summary: `${s.streams.ready}/${s.streams.total}` };
  const same = JSON.stringify(status) === JSON.stringify(obj.status ?? {});
  return same ? undefined : status;
}

/**
 * Writes the mirror's part of a GitTarget's status (CAS, retried on conflict). A write that makes
 * SourceReachable False, or changes why, is a Warning SourceUnreachable event (once written, so a
 * retried CAS does not count twice).
 */
export async function writeMirrorStatus(client: SystemClient, key: ObjectKey, uid: string, s: MirrorStatus, events: EventRecorder = NO_EVENTS): Promise<void> {
  let unreachable: KubeObject | undefined;
  // A GitTarget deleted meanwhile resolves undefined: nothing to write.
  await updateStatus(client, GITTARGETS, key, uid, (status, obj) => {
    const next = mergeStatus(obj, s, new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'));
    if (!next) return false;
    const before = ((obj.status as { conditions?: Condition[] } | undefined)?.conditions ?? []).find((c) => c.type === 'SourceReachable');
    unreachable = s.sourceReachable.status === 'False' && (before?.status !== 'False' || before.message !== s.sourceReachable.message) ? obj : undefined;
    for (const k of Object.keys(status)) delete status[k];
    Object.assign(status, next);
    return true;
  });
  if (unreachable) events.record(regardingOf(unreachable), 'Warning', 'SourceUnreachable', 'Watch', `${s.sourceReachable.reason}: ${s.sourceReachable.message}`);
}
