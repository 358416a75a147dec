// The uniqueness rules x-kubernetes-list-type implies, enforced on every write as CRD validation
// does: a `set` holds each value once, a `map` list each key once. Without them an item could not
// be addressed in managedFields (k:{...} / v:...) and apply could not merge it.
import type { FieldError } from '../../api/field-errors.js';
import { goJSON } from './path.js';
import { type Shape, fieldShape, isPlainObject, resolve } from './schema.js';

export function listTypeErrors(value: unknown, shape: Shape, path = '', out: FieldError[] = []): FieldError[] {
  // One Set lookup per item and one shared output array (no spread of a child's errors into
  // push(), which throws RangeError past about 100,000 arguments): O(n) in the value's size.
  const s = resolve(shape, value);
  if (s.kind === 'map' && isPlainObject(value) && !s.atomic) {
    for (const [k, v] of Object.entries(value)) listTypeErrors(v, fieldShape(s, k), path ? `${path}.${k}` : k, out);
  } else if (s.kind === 'list' && Array.isArray(value) && s.listType !== 'atomic') {
    const seen = new Set<string>();
    value.forEach((item, i) => {
      let key: unknown = item;
      if (s.listType === 'map') {
        if (!isPlainObject(item)) return;
        key = Object.fromEntries(s.keys.filter((k) => item[k] !== undefined).map((k) => [k, item[k]]));
      } else if (item !== null && typeof item === 'object') {
        return; // the schema reports the wrong item type
      }
      const id = goJSON(key);
      if (seen.has(id)) out.push({ type: 'FieldValueDuplicate', field: `${path}[${i}]`, value: key });
      seen.add(id);
      // A set's items are scalars: nothing below them to check.
      if (s.listType === 'map') listTypeErrors(item, s.elem, `${path}[${i}]`, out);
    });
  }
  return out;
}
