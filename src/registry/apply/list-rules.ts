// The uniqueness rules x-kubernetes-list-type implies, enforced on every write as CRD validation
// does: a `set` holds each value once, a `map` list each key once. Without them an item could not
// be addressed in managedFields (k:{...} / v:...) and apply could not merge it.
import type { FieldError } from '../../api/field-errors.js';
import { goJSON } from './path.js';
import { type Shape, fieldShape, isPlainObject, resolve } from './schema.js';
import { type Work, YIELD_MASK, finish } from './work.js';

export function listTypeErrors(value: unknown, shape: Shape, path = '', out: FieldError[] = []): FieldError[] {
  return finish(listTypeErrorsWork(value, shape, path, out));
}

/**
 * Whether two lists hold the same scalars in the same order (an item that is an object never
 * counts as the same): a list an update left as it was, which was checked when it was stored.
 */
export function sameScalarItems(a: unknown, b: unknown): boolean {
  if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x: unknown = a[i];
    if (x !== b[i] || (x !== null && typeof x === 'object')) return false;
  }
  return true;
}

/** Whether every item is a string sorting after the one before it (so none repeats), by comparisons only. */
export function* increasingStringsWork(list: readonly unknown[]): Work<boolean> {
  for (let i = 0; i < list.length; i++) {
    const x = list[i];
    if (typeof x !== 'string' || (i > 0 && !((list[i - 1] as string) < x))) return false;
    if ((i & YIELD_MASK) === YIELD_MASK) yield;
  }
  return true;
}

/**
 * One Set lookup per item and one shared output array (no spread of a child's errors into
 * push(), which throws RangeError past about 100,000 arguments): O(n) in the value's size, and
 * a generator that yields every few hundred items (src/registry/apply/work.ts).
 *
 * `old` is the stored value at the same place on an update: a `set` list whose scalars are all
 * still there in the same order is not hashed again (a status write of an object holding a 3 MiB
 * list of finalizers hashed 136,000 items to find what the create had found).
 */
export function* listTypeErrorsWork(value: unknown, shape: Shape, path = '', out: FieldError[] = [], old?: unknown): Work<FieldError[]> {
  const s = resolve(shape, value);
  if (s.kind === 'map' && isPlainObject(value) && !s.atomic) {
    const was = isPlainObject(old) ? old : undefined;
    for (const [k, v] of Object.entries(value)) yield* listTypeErrorsWork(v, fieldShape(s, k), path ? `${path}.${k}` : k, out, was && Object.hasOwn(was, k) ? was[k] : undefined);
  } else if (s.kind === 'list' && Array.isArray(value) && s.listType !== 'atomic') {
    if (s.listType === 'set' && sameScalarItems(value, old)) return out;
    // Strings each sorting after the one before (how clients send finalizers) cannot repeat: the
    // comparisons prove it without hashing 136,000 of them into a Set.
    if (s.listType === 'set' && (yield* increasingStringsWork(value))) return out;
    const seen = new Set<unknown>();
    for (let i = 0; i < value.length; i++) {
      if ((i & YIELD_MASK) === YIELD_MASK) yield;
      const item = value[i];
      let key: unknown = item;
      let id: unknown;
      if (s.listType === 'map') {
        if (!isPlainObject(item)) continue;
        key = Object.fromEntries(s.keys.filter((k) => item[k] !== undefined).map((k) => [k, item[k]]));
        id = goJSON(key);
      } else if (item !== null && typeof item === 'object') {
        continue; // the schema reports the wrong item type
      } else {
        // A scalar is its own identity: a Set tells equal scalars exactly where their Go JSON is
        // equal (0 and -0 alike), without building a string per item; NaN and ±Infinity encode
        // as null, so they count as null.
        id = typeof item === 'number' && !Number.isFinite(item) ? null : item;
      }
      if (seen.has(id)) out.push({ type: 'FieldValueDuplicate', field: `${path}[${i}]`, value: key });
      seen.add(id);
      // A set's items are scalars: nothing below them to check.
      if (s.listType === 'map') yield* listTypeErrorsWork(item, s.elem, `${path}[${i}]`, out);
    }
  }
  return out;
}
