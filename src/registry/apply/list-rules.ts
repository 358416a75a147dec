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
 * One Set lookup per item and one shared output array (no spread of a child's errors into
 * push(), which throws RangeError past about 100,000 arguments): O(n) in the value's size, and
 * a generator that yields every few hundred items (src/registry/apply/work.ts).
 */
export function* listTypeErrorsWork(value: unknown, shape: Shape, path = '', out: FieldError[] = []): Work<FieldError[]> {
  const s = resolve(shape, value);
  if (s.kind === 'map' && isPlainObject(value) && !s.atomic) {
    for (const [k, v] of Object.entries(value)) yield* listTypeErrorsWork(v, fieldShape(s, k), path ? `${path}.${k}` : k, out);
  } else if (s.kind === 'list' && Array.isArray(value) && s.listType !== 'atomic') {
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
