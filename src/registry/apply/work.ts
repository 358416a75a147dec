// Long list work in slices. The merge, comparison and field-set walks of src/registry/apply/ (and
// the strategic merge patch of src/apiserver/strategic-merge-patch.ts) are generators that yield
// every few hundred list items; `inSlices` runs one on the event loop a few milliseconds at a time,
// handing the loop to other requests in between (as src/apiserver/patch.ts does between JSON-patch
// operations), and `finish` runs one to the end at once for callers whose input is small.
import { LEAF, knownJSON } from './leaf.js';

import { nextTurn } from './turns.js';

/** Work that yields (nothing) now and then and returns a T. */
export type Work<T> = Generator<undefined, T, undefined>;

/** Items a list loop handles between two yields (a power of two minus one: `(i & YIELD_MASK) === YIELD_MASK`). */
export const YIELD_MASK = 255;

/** Milliseconds of work before the event loop is given to others. */
export const SLICE_MS = 5;

export function finish<T>(w: Work<T>): T {
  let r = w.next();
  while (!r.done) r = w.next();
  return r.value;
}

export async function inSlices<T>(w: Work<T>, sliceMs = SLICE_MS): Promise<T> {
  let started = performance.now();
  let r = w.next();
  while (!r.done) {
    if (performance.now() - started > sliceMs) {
      // After a whole slice, wait for this work's turn (turns.ts): one heavy slice per turn.
      await nextTurn();
      started = performance.now();
    }
    r = w.next();
  }
  return r.value;
}

/**
 * Hands the event loop to other requests once, between two steps of a write that are each
 * synchronous and proportional to the object (up to 3 MiB): the wait is then the longest step,
 * not their sum.
 */
export function breathe(): Promise<void> {
  return new Promise<void>((resolve) => setImmediate(resolve));
}

/**
 * A deep copy of JSON data (what the store holds) as work that yields every few hundred items or
 * keys: structuredClone of a stored 3 MiB list and its managedFields held the event loop for
 * about 100 ms at once. Values that are not objects are shared, as structuredClone would copy them.
 */
export function* cloneWork<T>(v: T): Work<T> {
  // The fieldsV1 leaf (leaf.ts) is frozen and shared by design: 136,000 copies of it for a 3 MiB list would change nothing.
  if (v === null || typeof v !== 'object' || v === LEAF) return v;
  if (Array.isArray(v)) {
    const out: unknown[] = new Array(v.length);
    for (let i = 0; i < v.length; i++) {
      const x: unknown = v[i];
      out[i] = x !== null && typeof x === 'object' ? yield* cloneWork(x) : x;
      if ((i & YIELD_MASK) === YIELD_MASK) yield;
    }
    return out as T;
  }
  // So is a wide fieldsV1 node whose text is known (src/storage/known-json.ts): immutable too, and
  // a copy of its 136,000 keys cost 100-200 ms (the keys of a new object are hashed one by one).
  if (knownJSON(v) !== undefined) return v;
  const src = v as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  let i = 0;
  for (const k of Object.keys(src)) {
    const x = src[k];
    const c = x !== null && typeof x === 'object' ? yield* cloneWork(x) : x;
    // defineProperty for `__proto__` (a valid key of JSON data): assignment would set the prototype.
    if (k === '__proto__') Object.defineProperty(out, k, { value: c, enumerable: true, writable: true, configurable: true });
    else out[k] = c;
    if ((++i & YIELD_MASK) === YIELD_MASK) yield;
  }
  return out as T;
}

/**
 * deepEqual of src/registry/metadata.ts (keys whose value is undefined do not count) as work that
 * yields every few hundred items or keys: comparing two copies of a 3 MiB list and its managedFields
 * (a server-side apply that changes nothing) held the event loop for hundreds of milliseconds.
 */
export function* deepEqualWork(a: unknown, b: unknown): Work<boolean> {
  if (a === b) return true;
  if (typeof a !== typeof b || a === null || b === null || typeof a !== 'object') return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const same = function* (x: unknown, y: unknown): Work<boolean> {
    if (x === y) return true;
    // Not both objects: deepEqual is false for two values that are not ===.
    if (x === null || y === null || typeof x !== 'object' || typeof y !== 'object') return false;
    return yield* deepEqualWork(x, y);
  };
  if (Array.isArray(a)) {
    const bb = b as unknown[];
    if (a.length !== bb.length) return false;
    for (let i = 0; i < a.length; i++) {
      const x: unknown = a[i];
      const y: unknown = bb[i];
      if (x !== y && !(yield* same(x, y))) return false;
      if ((i & YIELD_MASK) === YIELD_MASK) yield;
    }
    return true;
  }
  // Two wide fieldsV1 nodes with the same text (src/storage/known-json.ts) are equal: no walk.
  const text = knownJSON(a);
  if (text !== undefined && text === knownJSON(b)) return true;
  const ao = a as Record<string, unknown>;
  const bo = b as Record<string, unknown>;
  // The keys whose value is defined are counted while they are compared, not filtered first: two
  // filters over the 136,000 keys of a fieldsV1 node held the event loop for 100-300 ms.
  const ka = Object.keys(ao);
  yield;
  let defined = 0;
  for (let i = 0; i < ka.length; i++) {
    const k = ka[i]!;
    const x = ao[k];
    if ((i & YIELD_MASK) === YIELD_MASK) yield;
    if (x === undefined) continue;
    defined++;
    const y = bo[k];
    if (x !== y && !(yield* same(x, y))) return false;
  }
  // Every defined key of `a` has its equal in `b`: equal when `b` has no other defined key.
  const kb = Object.keys(bo);
  yield;
  for (let i = 0; i < kb.length; i++) {
    if (bo[kb[i]!] !== undefined) defined--;
    if ((i & YIELD_MASK) === YIELD_MASK) yield;
  }
  return defined === 0;
}

/** cloneWork run in slices. */
export function cloneInSlices<T>(v: T): Promise<T> {
  return inSlices(cloneWork(v));
}
