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
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new Error('fieldsV1 must be a JSON object');
  const o = v as Record<string, unknown>;
  return decodedOf<FieldSet>(o) ?? (yield* decodeNode(o, Object.keys(o)));
}

/**
 * The set of fieldsV1 node `o` whose keys are `keys`. Each node's keys are listed once, by its
 * parent, which needs them to know whether the node is also a member ("."), is empty, or has
 * children: a `for...in` there and `Object.keys` here listed a wide node (a 3 MiB list's items,
 * 30-70 ms each) twice. A wide node decoded before is not listed at all (decoded-nodes.ts).
 */
function* decodeNode(o: Record<string, unknown>, keys: readonly string[]): Work<FieldSet> {
  if (keys.length >= WIDE_NODE) {
    const items = yield* itemsOfFieldsV1Work(o, keys);
    if (items) {
      const set = FieldSet.ofItems(items);
      if (knownJSON(o) !== undefined) rememberDecoded(o, set);
      return set;
    }
  }
  const out = new FieldSet();
  let i = 0;
  // Keys, not entries: entries of a 100,000-key map are as many arrays made at once.
  for (const k of keys) {
    if ((++i & YIELD_MASK) === YIELD_MASK) yield;
    if (k === '.') continue;
    const sub = o[k];
    const plain = PLAIN_STRING_VALUE.test(k);
    const pe: PathElement = plain ? { kind: 'v', value: k.slice(3, -1) } : deserialize(k);
    if (sub === null || typeof sub !== 'object' || Array.isArray(sub)) throw new Error(`fieldsV1 entry ${JSON.stringify(k)} must be an object`);
    const node = sub as Record<string, unknown>;
    const id = plain || pe.kind === 'f' ? k : serialize(pe);
    // A wide node decoded before has children (WIDE_NODE keys besides "."), and "." is one lookup.
    const known = decodedOf<FieldSet>(node);
    const subKeys = known ? undefined : Object.keys(node);
    const dot = subKeys ? subKeys.includes('.') : Object.prototype.hasOwnProperty.call(node, '.');
    const children = subKeys ? subKeys.length > (dot ? 1 : 0) : true;
    if (dot || !children) out.members.set(id, pe);
    if (children) {
      const child = known ?? (yield* decodeNode(node, subKeys!));
      if (!child.empty()) out.children.set(id, { pe, set: child });
    }
  }
  if (keys.length >= WIDE_NODE && knownJSON(o) !== undefined) rememberDecoded(o, out);
  return out;
}
