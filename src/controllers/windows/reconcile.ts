// A snapshot (a complete listing of the source) meeting the pending changes of the window record.
// After a restart or a replica takeover the mirror re-lists everything and submits it as a
// snapshot; what the open window already holds must stay in it — its author, its attached
// CommitRequest, its OnRequest mode — and only what changed while nobody watched may become a
// commit of its own (the "resync", docs/git-engine.md). Pure functions of the record; the callers
// run them inside one compare-and-swap (transitions.ts) or, for a chunked snapshot, before writing
// the chunks and again inside the CAS (sink.ts).
import { openWindow } from './policy.js';
import { changeKey, type Window, type WindowRecord } from './record.js';
import type { PendingChange } from './types.js';

/** A key leaving the open window because the re-list saw it changed since; `was` is the window's canonical change. */
export interface Leaving {
  key: string;
  was: string;
}

export interface Reconciled {
  /** The snapshot's changes that the open window does not already say. */
  changes: PendingChange[];
  /** Keys of the open window whose object changed while nobody watched: the resync commits them. */
  leaving: Leaving[];
  /** How many of the snapshot's changes the open window already held, equal. */
  kept: number;
}

/** JSON with object keys sorted: a listed object and the same object from a watch event compare equal. */
export function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o)
      .filter((k) => o[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(o[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

/** What a pending change says about its file (its provenance — uid, resourceVersion — is not content). */
export function contentOf(c: PendingChange): string {
  return c.op === 'write' ? `write:${canonical(c.object)}` : 'delete';
}

/**
 * Compares a snapshot with the open window of `r` (closed windows are committed before the
 * snapshot, so the git engine's diff against the branch already sees them). Per object:
 * - the open window holds the same content: it stays there, the snapshot drops it;
 * - the open window holds other content: the object changed again while nobody watched. Nobody can
 *   say which part of its state is whose, so it leaves the window and the resync commits its
 *   current state (never the window's older state after it, which would revert the unseen change);
 * - the open window does not hold it: the snapshot keeps it (the engine commits it only if it
 *   differs from the branch).
 */
export function reconcile(r: WindowRecord, changes: PendingChange[]): Reconciled {
  const open = openWindow(r);
  if (!open || open.changes.length === 0) return { changes, leaving: [], kept: 0 };
  const pending = new Map(open.changes.map((c) => [c.key, contentOf(c.change)]));
  const out: PendingChange[] = [];
  const leaving: Leaving[] = [];
  let kept = 0;
  for (const c of changes) {
    const key = changeKey(c);
    const was = pending.get(key);
    if (was === undefined) out.push(c);
    else if (was === contentOf(c)) kept++;
    else {
      out.push(c);
      leaving.push({ key, was });
    }
  }
  return { changes: out, leaving, kept };
}

/** Removes the leaving keys from the open window, each only if it still holds what was compared. */
export function dropLeaving(open: Window | undefined, leaving: Leaving[]): void {
  if (!open || leaving.length === 0) return;
  const was = new Map(leaving.map((l) => [l.key, l.was]));
  open.changes = open.changes.filter((c) => was.get(c.key) !== contentOf(c.change));
}

/**
 * Whether snapshot `id` is a re-list of a selection that already landed: ids are
 * `<scope>-<listing>` (the mirror's `g<generation>-<digest>`), and a landed snapshot of the same
 * scope means the folder was materialized from this selection before.
 */
export function isResync(r: WindowRecord, id: string): boolean {
  const scope = scopeOf(id);
  return scope !== undefined && r.snapshots.some((s) => s.outcome !== 'Failed' && s.id !== id && scopeOf(s.id) === scope);
}

function scopeOf(id: string): string | undefined {
  const dash = id.indexOf('-');
  return dash > 0 ? id.slice(0, dash) : undefined;
}
