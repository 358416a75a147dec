// The uniqueness rules x-kubernetes-list-type implies, enforced on every write as CRD validation
// does: a `set` holds each value once, a `map` list each key once. Without them an item could not
// be addressed in managedFields (k:{...} / v:...) and apply could not merge it.
import type { FieldError } from '../../api/field-errors.js';
import { goJSON } from './path.js';
import { type Shape, fieldShape, isPlainObject, resolve } from './schema.js';

export function listTypeErrors(value: unknown, shape: Shape, path = ''): FieldError[] {
  const s = resolve(shape, value);
  const out: FieldError[] = [];
  if (s.kind === 'map' && isPlainObject(value) && !s.atomic) {
    for (const [k, v] of Object.entries(value)) out.push(...listTypeErrors(v, fieldShape(s, k), path ? `${path}.${k}` : k));
  } else if (s.kind === 'list' && Array.isArray(value) && s.listType !== 'atomic') {
    const seen = new Set<string>();
    value.forEach((item, i) => {
      const where = `${path}[${i}]`;
      let key: unknown = item;
      if (s.listType === 'map') {
        if (!isPlainObject(item)) return;
        key = Object.fromEntries(s.keys.filter((k) => item[k] !== undefined).map((k) => [k, item[k]]));
      } else if (item !== null && typeof item === 'object') {
        return; // the schema reports the wrong item type
      }
      const id = goJSON(key);
      if (seen.has(id)) out.push({ type: 'FieldValueDuplicate', field: where, value: key });
      seen.add(id);
      out.push(...listTypeErrors(item, s.elem, where));
    });
  }
  return out;
}
