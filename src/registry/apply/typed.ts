// Operations on objects under a shape, after structured-merge-diff's typed package: the field set
// a value occupies, the merge of an applied configuration into a live object, and the removal of a
// set of fields (the difference between two values is in compare.ts). Lists merge by
// x-kubernetes-list-type: atomic lists are one value; `set` items are identified by their value,
// `map` items by their key fields.
import { FieldSet } from './fieldset.js';
import { plainItemsWork } from './plain-items.js';
import { type Path, type PathElement, field, keyElement, pathString, serialize } from './path.js';
import { type Shape, fieldShape, isNamedField, isPlainObject, resolve } from './schema.js';
import { type Work, YIELD_MASK, finish } from './work.js';

/** A value the merge cannot place (an item without its keys, a duplicate key): a 422 for the client. */
export class ApplyValueError extends Error {
  constructor(
    readonly path: string,
    readonly reason: 'Invalid' | 'Duplicate',
    message: string,
    readonly value?: unknown,
  ) {
    super(message);
  }
}

export type ListShape = Extract<Shape, { kind: 'list' }>;

/** How a list item is named: by its key fields (map lists) or by its value (set lists). */
export function itemElement(list: ListShape, item: unknown, path: Path, index: number): PathElement {
  // Only an error names the item: building its path for every item cost more than the lookup.
  const where = () => `${pathString(path)}[${index}]`;
  if (list.listType === 'map') {
    if (!isPlainObject(item)) throw new ApplyValueError(where(), 'Invalid', 'associative list with keys may not have non-map elements', item);
    const fields: Array<[string, unknown]> = [];
    for (const k of list.keys) if (item[k] !== undefined) fields.push([k, item[k]]);
    if (list.keys.length > 0 && fields.length === 0) {
      throw new ApplyValueError(where(), 'Invalid', `associative list with keys has an element that omits all key fields ${JSON.stringify(list.keys)}`, item);
    }
    return keyElement(fields);
  }
  if (item === null || typeof item === 'object') {
    throw new ApplyValueError(where(), 'Invalid', 'associative list without keys may only hold scalar values', item);
  }
  return { kind: 'v', value: item };
}

export function isEmptyContainer(v: unknown): boolean {
  return v === undefined || v === null || (Array.isArray(v) && v.length === 0) || (isPlainObject(v) && Object.keys(v).length === 0);
}

// ---------------------------------------------------------------------------------------------
// The field set of a value (ToFieldSet).

export function toFieldSet(value: unknown, shape: Shape): FieldSet {
  return finish(toFieldSetWork(value, shape));
}

/**
 * Every item of a `set` list as a member of the node at `path`, duplicated or not: one compact
 * node when they are plain strings (a list of finalizers; plain-items.ts), else one element each.
 */
export function* putSetItemsWork(s: ListShape, items: readonly unknown[], path: Path, set: FieldSet): Work<void> {
  const plain = yield* plainItemsWork(items);
  if (plain && set.putItems(path, plain)) return;
  const node = set.node(path);
  for (let i = 0; i < items.length; i++) {
    const pe = itemElement(s, items[i], path, i);
    node.members.set(serialize(pe), pe);
    if ((i & YIELD_MASK) === YIELD_MASK) yield;
  }
}

export function* toFieldSetWork(value: unknown, shape: Shape): Work<FieldSet> {
  const set = new FieldSet();
  yield* walkFields(value, shape, [], set);
  return set;
}

function* walkFields(v: unknown, shape: Shape, path: Path, set: FieldSet): Work<void> {
  const s = resolve(shape, v);
  if (s.kind === 'list') {
    if (s.listType === 'atomic' || !Array.isArray(v)) return set.insert(path);
    if (s.listType === 'set') {
      // Scalars only (itemElement refuses anything else): each item is one member of this node,
      // duplicated or not, so the items go straight into the node instead of down a path each.
      if (v.length === 0) return;
      return yield* putSetItemsWork(s, v, path, set);
    }
    const seen = new Map<string, number>();
    const pes = v.map((item, i) => itemElement(s, item, path, i));
    const keys = pes.map(serialize);
    for (const k of keys) seen.set(k, (seen.get(k) ?? 0) + 1);
    for (let i = 0; i < v.length; i++) {
      const p = [...path, pes[i]!];
      // A duplicated item is owned as a whole: its parts cannot be told apart.
      if (seen.get(keys[i]!)! > 1) set.insert(p);
      else {
        yield* walkFields(v[i], s.elem, p, set);
        set.insert(p);
      }
      if ((i & YIELD_MASK) === YIELD_MASK) yield;
    }
    return;
  }
  if (s.kind === 'map') {
    if (s.atomic || !isPlainObject(v)) return set.insert(path);
    for (const [k, child] of Object.entries(v)) {
      if (child === undefined) continue;
      const p = [...path, field(k)];
      yield* walkFields(child, fieldShape(s, k), p, set);
      // Struct fields are owned through their leaves; map entries and empty values are owned themselves.
      if (child === null || (isPlainObject(child) && Object.keys(child).length === 0) || !isNamedField(s, k)) set.insert(p);
    }
    return;
  }
  set.insert(path);
}

/** Adds the declared (struct) fields on the way to every member as members, so removing them removes whole subtrees. */
export function ensureNamedFieldsAreMembers(set: FieldSet, shape: Shape): FieldSet {
  // Only the way to a child gains members: a node without children (a list's items) is shared as is.
  if (set.children.size === 0) return set;
  const out = new FieldSet(new Map(set.members));
  for (const [k, c] of set.children) {
    let childShape: Shape = { kind: 'deduced' };
    if (c.pe.kind === 'f' && shape.kind === 'map') {
      childShape = fieldShape(shape, c.pe.name);
      if (isNamedField(shape, c.pe.name)) out.members.set(k, c.pe);
    } else if (c.pe.kind === 'k' && shape.kind === 'list') childShape = shape.elem;
    out.children.set(k, { pe: c.pe, set: ensureNamedFieldsAreMembers(c.set, childShape) });
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Merge (Merge): the applied configuration (rhs) laid over the live object (lhs).

export function merge(lhs: unknown, rhs: unknown, shape: Shape, path: Path = []): unknown {
  return finish(mergeWork(lhs, rhs, shape, path));
}

export function* mergeWork(lhs: unknown, rhs: unknown, shape: Shape, path: Path = []): Work<unknown> {
  if (rhs === undefined) return lhs;
  if (lhs === undefined) return rhs;
  const ls = resolve(shape, lhs);
  const rs = resolve(shape, rhs);
  if (ls.kind !== rs.kind || rs.kind === 'scalar' || rs.kind === 'deduced') return rhs;
  if (isEmptyContainer(lhs) && isEmptyContainer(rhs)) return rhs;
  if (rs.kind === 'list') return rs.listType === 'atomic' ? rhs : yield* mergeListItems(lhs as unknown[], rhs as unknown[], rs, path);
  if (rs.atomic) return rhs;
  const l = lhs as Record<string, unknown>;
  const r = rhs as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const k of new Set([...Object.keys(l), ...Object.keys(r)])) {
    const v = yield* mergeWork(ownValue(l, k), ownValue(r, k), fieldShape(rs, k), [...path, field(k)]);
    if (v !== undefined) setOwn(out, k, v);
  }
  return out;
}

/**
 * Whether a `set` list is applied exactly as it is stored, strings in ascending order (so unique):
 * their ordered union is the list itself. A re-apply of a 136,000-item list then costs one
 * comparison per item instead of four Map entries (test/security/list-work-cpu.test.ts counts them).
 */
function* sameSortedStrings(lhs: unknown[], rhs: unknown[]): Work<boolean> {
  if (lhs.length !== rhs.length) return false;
  for (let i = 0; i < rhs.length; i++) {
    const v = rhs[i];
    if (typeof v !== 'string' || lhs[i] !== v || (i > 0 && !((rhs[i - 1] as string) < v))) return false;
    if ((i & YIELD_MASK) === YIELD_MASK) yield;
  }
  return true;
}

/**
 * The ordered union of two associative lists, as upstream orders it: items of the applied list in
 * its order, live-only items kept where they were relative to the shared ones.
 */
function* mergeListItems(lhs: unknown[], rhs: unknown[], s: ListShape, path: Path): Work<unknown[]> {
  // Every lookup below is a Map/Set access by serialized element and the shared keys are walked
  // with an index: O(n) in the two lists' lengths (a `shift()` or `indexOf` per item was O(n²)).
  // Each pass yields every few hundred items: as one step, the passes over a re-applied list of
  // 136,000 finalizers held the event loop for 0.7-1 s on a loaded machine
  // (test/security/http-list-attacks.test.ts, the server-side apply's /healthz bound).
  if (s.listType === 'set' && (yield* sameSortedStrings(lhs, rhs))) return rhs.slice();
  const rPEs: PathElement[] = new Array(rhs.length);
  for (let i = 0; i < rhs.length; i++) {
    rPEs[i] = itemElement(s, rhs[i], path, i);
    if ((i & YIELD_MASK) === YIELD_MASK) yield;
  }
  const rObserved = new Map<string, unknown>();
  const rIndex = new Map<string, number>();
  for (let i = 0; i < rPEs.length; i++) {
    const pe = rPEs[i]!;
    const k = serialize(pe);
    if (rObserved.has(k)) throw new ApplyValueError(`${pathString(path)}[${i}]`, 'Duplicate', `duplicate entries for key ${pathString([pe])}`, rhs[i]);
    rObserved.set(k, rhs[i]);
    rIndex.set(k, i);
    if ((i & YIELD_MASK) === YIELD_MASK) yield;
  }
  const lKeys: string[] = new Array(lhs.length);
  const lObserved = new Map<string, unknown>();
  for (let i = 0; i < lhs.length; i++) {
    const k = serialize(itemElement(s, lhs[i], path, i));
    lKeys[i] = k;
    lObserved.set(k, lObserved.has(k) ? null : lhs[i]);
    if ((i & YIELD_MASK) === YIELD_MASK) yield;
  }
  const shared: string[] = [];
  let visited = 0;
  for (const k of rIndex.keys()) {
    if (lObserved.has(k)) shared.push(k);
    if ((++visited & YIELD_MASK) === YIELD_MASK) yield;
  }
  const rKeys = [...rIndex.keys()];
  let sharedAt = 0;
  let nextShared = shared[sharedAt++];
  const merged = new Set<string>();
  const out: unknown[] = [];
  function* item(k: string, l: unknown, r: unknown): Work<void> {
    const v = yield* mergeWork(l ?? undefined, r, s.elem, [...path, rPEs[rIndex.get(k) ?? -1] ?? { kind: 'v', value: null }]);
    if (v !== undefined) out.push(v);
  }
  let li = 0;
  let ri = 0;
  let steps = 0;
  while (li < lKeys.length || ri < rKeys.length) {
    if ((++steps & YIELD_MASK) === YIELD_MASK) yield;
    if (li < lKeys.length && ri < rKeys.length) {
      const k = lKeys[li]!;
      if (k === rKeys[ri]) {
        merged.add(k);
        yield* item(k, lObserved.get(k), rObserved.get(k));
        li++;
        ri++;
        nextShared = shared[sharedAt++];
        continue;
      }
      if (rObserved.has(k) && nextShared !== undefined && nextShared !== k) {
        li++;
        continue;
      }
    }
    if (li < lKeys.length) {
      const k = lKeys[li]!;
      if (!rObserved.has(k)) {
        out.push(lhs[li]);
        li++;
        continue;
      } else if (merged.has(k)) li++;
    }
    if (ri < rKeys.length) {
      const k = rKeys[ri]!;
      merged.add(k);
      yield* item(k, lObserved.get(k), rObserved.get(k));
      ri++;
      if (nextShared === k) nextShared = shared[sharedAt++];
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Removal (RemoveItems): the value without the given fields; a container left empty disappears.

export function removeItems(v: unknown, set: FieldSet, shape: Shape): unknown {
  return finish(removeItemsWork(v, set, shape));
}

export function* removeItemsWork(v: unknown, set: FieldSet, shape: Shape): Work<unknown> {
  const s = resolve(shape, v);
  if (set.empty()) return v;
  if (s.kind === 'list' && Array.isArray(v)) {
    if (s.listType === 'atomic' || v.length === 0) return v;
    const out: unknown[] = [];
    for (let i = 0; i < v.length; i++) {
      if ((i & YIELD_MASK) === YIELD_MASK) yield;
      const item = v[i];
      const pe = itemElement(s, item, [], i);
      if (set.hasMember(pe)) continue;
      const sub = set.withPrefix(pe);
      const kept = sub.empty() ? item : yield* removeItemsWork(item, sub, s.elem);
      if (kept !== undefined) out.push(kept);
    }
    return out.length ? out : undefined;
  }
  if (s.kind === 'map' && isPlainObject(v)) {
    if (s.atomic || Object.keys(v).length === 0) return v;
    const out: Record<string, unknown> = {};
    for (const [k, child] of Object.entries(v)) {
      const pe = field(k);
      if (set.hasMember(pe)) continue;
      const sub = set.withPrefix(pe);
      const kept = sub.empty() ? child : yield* removeItemsWork(child, sub, fieldShape(s, k));
      if (kept !== undefined) setOwn(out, k, kept);
    }
    return Object.keys(out).length ? out : undefined;
  }
  return v;
}

/**
 * Object keys are data here: `__proto__` is a valid ConfigMap data key. `out[k] = v` would set the
 * prototype for it (losing the key) and `o[k]` would read the prototype when the key is absent.
 */
export function setOwn(o: Record<string, unknown>, k: string, v: unknown): void {
  Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });
}

export function ownValue(o: Record<string, unknown>, k: string): unknown {
  return Object.hasOwn(o, k) ? o[k] : undefined;
}
