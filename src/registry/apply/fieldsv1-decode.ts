// Decoding fieldsV1 (managedFields' JSON form of a field set, fieldset.ts) into a FieldSet, in
// slices. A wide node of plain list items decodes to the compact node its encoding came from
// (plain-items.ts itemsOfFieldsV1Work), and a wide node already decoded once is not decoded again
// (decoded-nodes.ts).
import { FieldSet, WIDE_NODE } from './fieldset.js';
import { type PathElement, deserialize, serialize } from './path.js';
import { knownJSON } from '../../storage/known-json.js';
import { type Work, YIELD_MASK, finish } from './work.js';
import { itemsOfFieldsV1Work } from './plain-items.js';
import { decodedOf, rememberDecoded } from './decoded-nodes.js';

/**
 * A `v:` key of a string that JSON and Go's encoding write alike without escapes (no quote,
 * backslash, control character, <, >, &, U+2028/2029 or surrogate): its value is the text between
 * the quotes and the key is already what serialize() gives (as is an `f:` key), so neither JSON.parse nor goJSON runs
 * for it (the common case: a decoded list of 136,000 finalizers).
 */
const PLAIN_STRING_VALUE = /^v:"[^"\\\u0000-\u001f<>&\u2028\u2029\ud800-\udfff]*"$/;

/** The field set a fieldsV1 object encodes; throws on one kube would refuse. */
export function fromFieldsV1(v: unknown): FieldSet {
  return finish(fromFieldsV1Work(v));
}

/** fromFieldsV1 in slices: a stored list of 100,000 items has as many fieldsV1 keys to decode. */
export function* fromFieldsV1Work(v: unknown): Work<FieldSet> {
  const out = new FieldSet();
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new Error('fieldsV1 must be a JSON object');
  const o = v as Record<string, unknown>;
  const known = decodedOf<FieldSet>(o);
  if (known) return known;
  const keys = Object.keys(o);
  if (keys.length >= WIDE_NODE) {
    const items = yield* itemsOfFieldsV1Work(o, keys);
    if (items) {
      const set = FieldSet.ofItems(items);
      if (knownJSON(o) !== undefined) rememberDecoded(o, set);
      return set;
    }
  }
  let i = 0;
  // Keys, not entries: entries of a 100,000-key map are as many arrays made at once.
  for (const k of keys) {
    if ((++i & YIELD_MASK) === YIELD_MASK) yield;
    if (k === '.') continue;
    const sub = o[k];
    const plain = PLAIN_STRING_VALUE.test(k);
    const pe: PathElement = plain ? { kind: 'v', value: k.slice(3, -1) } : deserialize(k);
    if (sub === null || typeof sub !== 'object' || Array.isArray(sub)) throw new Error(`fieldsV1 entry ${JSON.stringify(k)} must be an object`);
    let empty = true;
    let dot = false;
    let other = false;
    if (knownJSON(sub) !== undefined) {
      // A wide node (WIDE_NODE keys or more): `for...in` would list all of them before its first
      // step (30-70 ms for a 3 MiB list's items), and "." is one lookup.
      empty = false;
      other = true;
      dot = Object.prototype.hasOwnProperty.call(sub, '.');
    } else {
      for (const x in sub) {
        empty = false;
        if (x === '.') dot = true;
        else other = true;
        if (dot && other) break;
      }
    }
    const id = plain || pe.kind === 'f' ? k : serialize(pe);
    if (empty || dot) out.members.set(id, pe);
    if (other) {
      const child = yield* fromFieldsV1Work(sub);
      if (!child.empty()) out.children.set(id, { pe, set: child });
    }
  }
  if (keys.length >= WIDE_NODE && knownJSON(o) !== undefined) rememberDecoded(o, out);
  return out;
}
