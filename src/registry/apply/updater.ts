// Ownership bookkeeping of structured-merge-diff's merge.Updater: who owns which field after an
// update (every changed field moves to the writer) and after an apply (the applier owns exactly what
// it sent; what it stopped sending is removed unless someone else owns it; taking a field another
// manager owns with a different value is a conflict unless forced).
import { FieldSet } from './fieldset.js';
import { type Managed, type ManagerEntry } from './managed-fields.js';
import type { Path } from './path.js';
import type { Shape } from './schema.js';
import { ensureNamedFieldsAreMembers, mergeWork, removeItemsWork, toFieldSetWork } from './typed.js';
import { type Comparison, compareWork } from './compare.js';
import { type Work, deepEqualWork } from './work.js';

export interface Conflict {
  managerId: string;
  manager: ManagerEntry;
  path: Path;
}

export class ConflictsError extends Error {
  constructor(readonly conflicts: Conflict[]) {
    super(`${conflicts.length} apply conflict(s)`);
  }
}

/** Fields a write never records ownership of: `status` for the main resource, all but `status` for /status. */
export type ResetFields = FieldSet;

function filtered(c: Comparison, reset: ResetFields): Comparison {
  return { added: c.added.recursiveDifference(reset), modified: c.modified.recursiveDifference(reset), removed: c.removed.recursiveDifference(reset) };
}

/**
 * Moves changed fields away from every manager but `self` (a conflict when not forced) and drops
 * removed fields from everyone. Mutates `managed`; returns the comparison.
 */
function* settle(live: unknown, next: unknown, shape: Shape, managed: Managed, self: string, force: boolean, reset: ResetFields): Work<Comparison> {
  const c = filtered(yield* compareWork(live, next, shape), reset);
  const changed = c.modified.union(c.added);
  const conflicts: Conflict[] = [];
  const taken = new Map<string, FieldSet>();
  for (const id of [...managed.keys()].sort()) {
    if (id === self) continue;
    const e = managed.get(id)!;
    const clash = e.set.intersection(changed);
    if (!clash.empty()) {
      taken.set(id, clash);
      for (const path of clash.paths()) conflicts.push({ managerId: id, manager: e, path });
    }
  }
  if (!force && conflicts.length) throw new ConflictsError(conflicts);
  for (const [id, e] of [...managed]) {
    if (id === self) continue;
    let set = e.set;
    const clash = taken.get(id);
    if (clash) set = set.difference(clash);
    if (!c.removed.empty()) set = set.difference(c.removed);
    if (set.empty()) managed.delete(id);
    else managed.set(id, { ...e, set });
  }
  return c;
}

/** An update by `self` (create, PUT, non-apply PATCH): the fields it changed, filtered by `reset`. */
export function* updateOwnership(live: unknown, next: unknown, shape: Shape, managed: Managed, self: string, reset: ResetFields): Work<FieldSet> {
  const c = yield* settle(live, next, shape, managed, self, true, reset);
  return c.modified.union(c.added).recursiveDifference(reset);
}

export interface ApplyOutcome {
  /** The merged object, or undefined when it equals the live object (a no-op). */
  object: unknown;
}

/**
 * Apply: merges `config` into `live`, makes `self` the owner of exactly the config's fields, prunes
 * what `self` applied last time and no longer sends (unless another manager owns it), and settles
 * ownership against the other managers. Mutates `managed`.
 */
export function* applyOwnership(
  live: unknown,
  config: unknown,
  shape: Shape,
  managed: Managed,
  self: string,
  entry: Omit<ManagerEntry, 'set'>,
  force: boolean,
  reset: ResetFields,
  /** `live` is the empty stub of an object that does not exist yet. */
  creating = false,
): Work<ApplyOutcome> {
  const merged = yield* mergeWork(live, config, shape);
  const lastSet = managed.get(self)?.set;
  const set = (yield* toFieldSetWork(config, shape)).recursiveDifference(reset);
  managed.set(self, { ...entry, set });
  let next = merged;
  if (lastSet && !lastSet.empty()) {
    // Remove what self applied last time unless it is still owned by anyone (self's new set
    // included). Declared fields count as owned when something below them is, so a removed
    // struct disappears whole while a partly owned one stays.
    let owned = new FieldSet();
    for (const e of managed.values()) owned = owned.union(e.set);
    const remove = ensureNamedFieldsAreMembers(lastSet, shape).difference(ensureNamedFieldsAreMembers(owned, shape));
    next = (yield* removeItemsWork(merged, remove, shape)) ?? {};
  }
  // settle's comparison only moves fields away from other managers. An object being created has
  // none, and its comparison would only walk the config's items once more (toFieldSetWork above
  // has already refused any it cannot place, with the same error): a 3 MiB list, skipped.
  if (!creating || [...managed.keys()].some((id) => id !== self)) yield* settle(live, next, shape, managed, self, force, reset);
  return { object: (yield* deepEqualWork(live, next)) ? undefined : next };
}

