// What the versions of one stored object can share. Stored objects are immutable (watch-cache.ts),
// so two versions may hold the same instance wherever they are equal; the watch history holds a
// version per write (a new GitTarget's ~5 status writes while it starts), and each freshly parsed
// version (the Redis follower parses every logged write, the embedded store's replay every logged
// one) would otherwise hold its own copy of everything the write did not change: the spec, the
// labels, and the managedFields, whose fieldsV1 leaves are one empty object per owned field
// (docs/architecture.md, "What one GitTarget holds").

import type { KubeObject } from './types.js';
import { knownJSON } from './known-json.js';

// The value of every member that is not also a parent in fieldsV1 (`"v:\"a\"": {}`): one frozen
// object shared by all of them instead of one per member (136,000 for a 3 MiB list), encoded by
// src/registry/apply/fieldset.ts, shared rather than copied by src/registry/apply/work.ts cloneWork
// and written without a look inside by src/apiserver/respond.ts. Nothing writes into fieldsV1 once
// encoded; frozen, a write would throw instead of changing them all.
export const LEAF: Record<string, never> = Object.freeze({});

/**
 * Values visited per object (array items and object members). A GitTarget has a few hundred (~20 µs
 * to share); an object past this keeps the rest of its own copy, about 1 ms of work at most.
 */
export const SHARE_BUDGET = 20_000;

/** Where a value sits: only under metadata.managedFields[*].fieldsV1 is an empty object a leaf. */
const enum At {
  Top,
  Metadata,
  ManagedFields,
  Entry,
  FieldsV1,
  Other,
}

function below(at: At, key: string): At {
  switch (at) {
    case At.Top:
      return key === 'metadata' ? At.Metadata : At.Other;
    case At.Metadata:
      return key === 'managedFields' ? At.ManagedFields : At.Other;
    case At.Entry:
      return key === 'fieldsV1' ? At.FieldsV1 : At.Other;
    case At.FieldsV1:
      return At.FieldsV1;
    default:
      return At.Other;
  }
}

/**
 * `next`, a version of an object that nothing else references yet (just parsed, or just built for
 * the store), made to share with `prev`, the stored version before it (undefined when none): every
 * subtree equal to prev's at the same path, keys in the same order, becomes prev's instance, and
 * every empty fieldsV1 leaf becomes LEAF. Changed in place and returned. What is shared serializes
 * to the same JSON, so no reader can tell. `budget` bounds the values visited (each array item and
 * object member counts one): past it, what is left of `next` stays as it is. Both stores call this
 * in a synchronous step, so they pass SHARE_BUDGET: an object that large (a 3 MiB list) would hold
 * the event loop for as long again as its JSON.parse.
 */
export function shareWithPrevious(next: KubeObject, prev: KubeObject | undefined, budget = SHARE_BUDGET): KubeObject {
  const left = { n: budget };
  return share(next, prev, At.Top, left) as KubeObject;
}

/**
 * Above this many bytes of JSON a parsed object is kept as parsed: the share walk would begin with
 * listing the keys of its largest member (~25–45 ms for a fieldsV1 of 136,000 keys, on top of the
 * ~150 ms JSON.parse of that 3 MiB list), and objects that large are few.
 */
export const SHARE_MAX_JSON = 256 * 1024;

/** JSON.parse of a stored object's JSON, shared with `prev` (shareWithPrevious) when not too large. */
export function parseShared(json: string, prev: KubeObject | undefined): KubeObject {
  const obj = JSON.parse(json) as KubeObject;
  return json.length > SHARE_MAX_JSON ? obj : shareWithPrevious(obj, prev);
}

function share(a: unknown, b: unknown, at: At, left: { n: number }): unknown {
  // Already shared (the registry reuses a stored fieldsV1 it did not change), or frozen (tests
  // deep-freeze stored objects): nothing to replace inside, and a frozen one cannot be written.
  // So is an object whose JSON text is known (known-json.ts: a wide fieldsV1 node encoded here).
  if (a === null || typeof a !== 'object' || a === b || Object.isFrozen(a) || knownJSON(a) !== undefined) return a;
  if (left.n < 0) return a;
  if (Array.isArray(a)) {
    const bs = Array.isArray(b) ? (b as unknown[]) : undefined;
    let same = bs !== undefined && bs.length === a.length;
    const inner = at === At.ManagedFields ? At.Entry : At.Other;
    // Past the budget the rest stays as parsed, and the loop stops (a 136,000-item list is not walked).
    if ((left.n -= a.length) < 0) return a;
    for (let i = 0; i < a.length; i++) {
      const v = share(a[i], bs?.[i], inner, left);
      a[i] = v;
      if (same && v !== bs![i]) same = false;
    }
    return same ? bs : a;
  }
  const o = a as Record<string, unknown>;
  const keys = Object.keys(o);
  if (keys.length === 0 && at === At.FieldsV1) return LEAF;
  if ((left.n -= keys.length) < 0) return a;
  const bo = b !== null && typeof b === 'object' && !Array.isArray(b) ? (b as Record<string, unknown>) : undefined;
  const bKeys = bo ? Object.keys(bo) : undefined;
  let same = bKeys !== undefined && bKeys.length === keys.length;
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i]!;
    const v = share(o[k], bo?.[k], below(at, k), left);
    o[k] = v;
    if (same && (bKeys![i] !== k || v !== bo![k])) same = false;
  }
  return same ? bo : o;
}
