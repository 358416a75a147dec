// Changes of a GitTarget with an audit route wait here, in the window record (never only in
// memory), for the fact that names their author. The list is FIFO: a change leaves, into its
// author's window, once a fact matched it or its grace ended (then authored "unresolved"), and
// never before an older one. A change whose fact is already there when it is added skips the list
// when nothing older waits, so it costs no latency. All functions are record transitions, run
// inside one compare-and-swap.
import { UNRESOLVED, type Attribution, type JoinTier } from '../../attribution/join.js';
import type { CommitPolicy } from './policy.js';
import type { StagedAttribution, StagedEntry, WindowRecord } from './record.js';
import { addChanges, applySnapshot } from './transitions.js';
import type { PendingChange } from './types.js';

function staged(a: Attribution): StagedAttribution {
  const s: StagedAttribution = { authorKey: a.authorKey, author: { name: a.author.name, email: a.author.email }, kind: a.kind, tier: a.tier };
  if (a.factTime) s.factTime = a.factTime;
  return s;
}

/**
 * WindowSink.add on a target with an audit route. `resolved` holds the attributions of a prefix
 * of `changes` (looked up before this transition). Returns the tiers of the changes that joined a
 * window now.
 */
export function stageChanges(r: WindowRecord, changes: PendingChange[], resolved: Attribution[], policy: CommitPolicy, now: number, graceMs: number): JoinTier[] {
  const staging = (r.staging ??= []);
  const moved: JoinTier[] = [];
  let lastFact: string | undefined;
  let i = 0;
  if (staging.length === 0) {
    for (; i < resolved.length && i < changes.length; i++) {
      addChanges(r, [changes[i]], policy, now, resolved[i]);
      moved.push(resolved[i].tier);
      const t = resolved[i].factTime;
      if (t && (!lastFact || t > lastFact)) lastFact = t;
    }
  }
  for (; i < changes.length; i++) {
    const e: StagedEntry = { seq: r.nextSeq++, stagedAt: now, deadline: now + graceMs, change: changes[i] };
    if (resolved[i]) e.resolved = staged(resolved[i]);
    staging.push(e);
  }
  noteFacts(r, moved, now, lastFact);
  if (staging.length === 0) delete r.staging;
  return moved;
}

/** A snapshot queued behind staged changes (it leaves when it reaches the head). */
export function stageSnapshot(r: WindowRecord, id: string, changes: PendingChange[], now: number): void {
  (r.staging ??= []).push({ seq: r.nextSeq++, stagedAt: now, deadline: now, snapshot: { id, changes } });
}

/**
 * Moves staged entries from the head into windows, in order: those a fact names now (`found`, by
 * seq) or named at add time, a snapshot, and those whose grace ended (unresolved). Stops at the
 * first change still within its grace. Returns the tiers of the changes moved.
 */
export function drainStaging(r: WindowRecord, found: ReadonlyMap<number, Attribution>, policy: CommitPolicy, now: number): JoinTier[] {
  const moved: JoinTier[] = [];
  let lastFact: string | undefined;
  const staging = r.staging ?? [];
  while (staging.length) {
    const e = staging[0];
    if (e.snapshot) {
      applySnapshot(r, e.snapshot, now);
      staging.shift();
      continue;
    }
    const a = e.resolved ?? found.get(e.seq) ?? (e.deadline <= now ? UNRESOLVED : undefined);
    if (!a) break;
    if (e.change) addChanges(r, [e.change], policy, now, a);
    moved.push(a.tier);
    if (a.factTime && (!lastFact || a.factTime > lastFact)) lastFact = a.factTime;
    staging.shift();
  }
  noteFacts(r, moved, now, lastFact);
  if (staging.length === 0) delete r.staging;
  return moved;
}

/**
 * The GitTarget lost its audit route (spec.attribution.auditRoute removed): what still waits is
 * committed as without a route (unattributed, or as named when a fact already named it), in order.
 */
export function flushStaging(r: WindowRecord, policy: CommitPolicy, now: number): void {
  for (const e of r.staging ?? []) {
    if (e.snapshot) applySnapshot(r, e.snapshot, now);
    else if (e.change) addChanges(r, [e.change], policy, now, e.resolved);
  }
  delete r.staging;
}

/** Staged changes the join should look up now: from the head, those not yet resolved. */
export function toLookUp(r: WindowRecord): StagedEntry[] {
  const out: StagedEntry[] = [];
  for (const e of r.staging ?? []) {
    if (e.snapshot || e.resolved) continue;
    out.push(e);
  }
  return out;
}

/** When the head of the staging list gives up waiting (ms), or undefined when nothing waits. */
export function nextStagingDeadline(r: WindowRecord): number | undefined {
  const head = (r.staging ?? []).find((e) => !e.snapshot && !e.resolved);
  return head?.deadline;
}

/**
 * AuditAttribution bookkeeping, from this GitTarget's own changes only (never the route's other
 * facts: they are other tenants'): a change that had to wait for its fact starts the "no facts"
 * clock (if not running); a change a fact named stops it and is counted.
 */
function noteFacts(r: WindowRecord, moved: JoinTier[], now: number, lastFact: string | undefined): void {
  const a = (r.attribution ??= {});
  const named = moved.filter((t) => t !== 'unresolved').length;
  if (named > 0) {
    delete a.awaitingFactsSince;
    a.named = (a.named ?? 0) + named;
  }
  if (lastFact && (!a.lastNamedFactTime || lastFact > a.lastNamedFactTime)) a.lastNamedFactTime = lastFact;
  if ((r.staging ?? []).some((e) => e.change && !e.resolved) && a.awaitingFactsSince === undefined) a.awaitingFactsSince = now;
}
