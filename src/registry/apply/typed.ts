// Operations on objects under a shape, after structured-merge-diff's typed package: the field set
// a value occupies, the difference between two values, the merge of an applied configuration into
// a live object, and the removal of a set of fields. Lists merge by x-kubernetes-list-type: atomic
// lists are one value; `set` items are identified by their value, `map` items by their key fields.
import { deepEqual } from '../metadata.js';
import { FieldSet } from './fieldset.js';
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

type ListShape = Extract<Shape, { kind: 'list' }>;

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

function isEmptyContainer(v: unknown): boolean {
  return v === undefined || v === null || (Array.isArray(v) && v.length === 0) || (isPlainObject(v) && Object.keys(v).length === 0);
}

// ---------------------------------------------------------------------------------------------
// The field set of a value (ToFieldSet).

export function toFieldSet(value: unknown, shape: Shape): FieldSet {
  return finish(toFieldSetWork(value, shape));
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
      const node = set.node(path);
      for (let i = 0; i < v.length; i++) {
        const pe = itemElement(s, v[i], path, i);
        node.members.set(serialize(pe), pe);
        if ((i & YIELD_MASK) === YIELD_MASK) yield;
      }
      return;
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
// Comparison (Compare): which fields were added, modified or removed from lhs to rhs.

export interface Comparison {
  added: FieldSet;
  modified: FieldSet;
  removed: FieldSet;
}

export function compare(lhs: unknown, rhs: unknown, shape: Shape): Comparison {
  return finish(compareWork(lhs, rhs, shape));
}

export function* compareWork(lhs: unknown, rhs: unknown, shape: Shape): Work<Comparison> {
  const c: Comparison = { added: new FieldSet(), modified: new FieldSet(), removed: new FieldSet() };
  yield* compareAt(lhs, rhs, shape, [], c);
  return c;
}

function leaf(lhs: unknown, rhs: unknown, path: Path, c: Comparison): void {
  if (lhs === undefined) c.added.insert(path);
  else if (rhs === undefined) c.removed.insert(path);
  else if (!deepEqual(lhs, rhs)) c.modified.insert(path);
}

function* compareAt(lhs: unknown, rhs: unknown, shape: Shape, path: Path, c: Comparison): Work<void> {
  const ls = resolve(shape, lhs);
  const rs = resolve(shape, rhs);
  const s = lhs === undefined ? rs : ls;
  if (lhs !== undefined && rhs !== undefined && ls.kind !== rs.kind) return leaf(lhs, rhs, path, c);
  const bothEmpty = isEmptyContainer(lhs) && isEmptyContainer(rhs);
  if (s.kind === 'scalar' || s.kind === 'deduced' || bothEmpty || (s.kind === 'list' && s.listType === 'atomic') || (s.kind === 'map' && s.atomic)) {
    return leaf(lhs, rhs, path, c);
  }
  if (s.kind === 'list') yield* compareListItems(lhs as unknown[] | undefined, rhs as unknown[] | undefined, s, path, c);
  else {
    const l = (lhs ?? {}) as Record<string, unknown>;
    const r = (rhs ?? {}) as Record<string, unknown>;
    for (const k of new Set([...Object.keys(l), ...Object.keys(r)])) {
      if (l[k] === undefined && r[k] === undefined) continue;
      yield* compareAt(l[k], r[k], fieldShape(s, k), [...path, field(k)], c);
    }
  }
  if (lhs === undefined) c.added.insert(path);
  else if (rhs === undefined) c.removed.insert(path);
}

function* compareListItems(lhs: unknown[] | undefined, rhs: unknown[] | undefined, s: ListShape, path: Path, c: Comparison): Work<void> {
  if (s.listType === 'set') return yield* compareSetItems(lhs ?? [], rhs ?? [], s, path, c);
  // Items by their serialized element (the element's identity, see path.ts), in first-seen order:
  // one Map lookup per item, so a list of n items costs O(n), not O(n²).
  const order = new Map<string, PathElement>();
  function* index(items: unknown[] | undefined): Work<Map<string, unknown[]>> {
    const m = new Map<string, unknown[]>();
    const list = items ?? [];
    for (let i = 0; i < list.length; i++) {
      const item = list[i];
      const pe = itemElement(s, item, path, i);
      const k = serialize(pe);
      const same = m.get(k);
      if (same) same.push(item);
      else {
        m.set(k, [item]);
        if (!order.has(k)) order.set(k, pe);
      }
      if ((i & YIELD_MASK) === YIELD_MASK) yield;
    }
    return m;
  }
  const l = yield* index(lhs);
  const r = yield* index(rhs);
  let i = 0;
  for (const [k, pe] of order) {
    const ll = l.get(k) ?? [];
    const rl = r.get(k) ?? [];
    const p = [...path, pe];
    if (ll.length <= 1 && rl.length <= 1) yield* compareAt(ll[0], rl[0], s.elem, p, c);
    else if (ll.length >= 2 && rl.length >= 2) {
      if (!deepEqual(ll, rl)) c.modified.insert(p);
    } else if (ll.length >= 2) {
      if (rl.length) yield* compareAt(undefined, rl[0], s.elem, p, c);
      c.removed.insert(p);
    } else {
      if (ll.length) yield* compareAt(ll[0], undefined, s.elem, p, c);
      c.added.insert(p);
    }
    if ((++i & YIELD_MASK) === YIELD_MASK) yield;
  }
}

/** How often an element occurs in each list of a `set` comparison. */
interface Occurrences {
  pe: PathElement;
  l: number;
  r: number;
}

/**
 * The element of JSON null, which NaN and ±Infinity (YAML's .nan, .inf) share with it: the only
 * element whose items can differ (deepEqual), so the only one whose items are kept.
 */
const NULL_ELEMENT = serialize({ kind: 'v', value: null });

/**
 * compareListItems for a `set` list, whose items are scalars (itemElement refuses the rest): the
 * outcome of the general loop, where compareAt of two scalars is leaf(). Items with the same
 * element are equal (the element is their canonical JSON) but for NULL_ELEMENT's, so apart from
 * those only how often each element occurs on each side matters: one Map of counts instead of two
 * Maps of item arrays and an order Map, a third of the hashing and no array per item on a
 * 136,000-item list. Each item is recorded as a member of the list's node directly instead of
 * being inserted down its path.
 */
function* compareSetItems(lhs: unknown[], rhs: unknown[], s: ListShape, path: Path, c: Comparison): Work<void> {
  // The same items in the same order (an update that left the list alone, the status write after
  // a server-side apply): nothing added, modified or removed, and nothing to hash. itemElement
  // still refuses an item that is not a scalar, as the general loop would.
  if (lhs.length === rhs.length) {
    let same = true;
    for (let i = 0; i < lhs.length; i++) {
      const x = lhs[i];
      if (x !== rhs[i] || x === null || typeof x === 'object') {
        same = false;
        break;
      }
    }
    if (same) return;
  }
  // One side empty (a create, a list dropped whole): every distinct item of the other is added or
  // removed, however often it occurs, so the items go straight into that node.
  if (lhs.length === 0 || rhs.length === 0) {
    const [items, into] = lhs.length === 0 ? [rhs, c.added] : [lhs, c.removed];
    const node = into.node(path);
    for (let i = 0; i < items.length; i++) {
      const pe = itemElement(s, items[i], path, i);
      node.members.set(serialize(pe), pe);
      if ((i & YIELD_MASK) === YIELD_MASK) yield;
    }
    return;
  }
  const counts = new Map<string, Occurrences>();
  const nulls: [unknown[], unknown[]] = [[], []];
  for (const [side, list] of [[0, lhs], [1, rhs]] as const) {
    for (let i = 0; i < list.length; i++) {
      const pe = itemElement(s, list[i], path, i);
      const k = serialize(pe);
      if (k === NULL_ELEMENT) nulls[side].push(list[i]);
      const o = counts.get(k);
      if (!o) counts.set(k, side === 0 ? { pe, l: 1, r: 0 } : { pe, l: 0, r: 1 });
      else if (side === 0) o.l++;
      else o.r++;
      if ((i & YIELD_MASK) === YIELD_MASK) yield;
    }
  }
  const nodes = new Map<FieldSet, FieldSet>();
  const put = (set: FieldSet, k: string, pe: PathElement) => {
    let node = nodes.get(set);
    if (!node) nodes.set(set, (node = set.node(path)));
    node.members.set(k, pe);
  };
  let i = 0;
  for (const [k, { pe, l, r }] of counts) {
    if ((++i & YIELD_MASK) === YIELD_MASK) yield;
    if (l <= 1 && r <= 1) {
      if (l === 0) put(c.added, k, pe);
      else if (r === 0) put(c.removed, k, pe);
      else if (k === NULL_ELEMENT && !deepEqual(nulls[0][0], nulls[1][0])) put(c.modified, k, pe);
    } else if (l >= 2 && r >= 2) {
      if (l !== r || (k === NULL_ELEMENT && !deepEqual(nulls[0], nulls[1]))) put(c.modified, k, pe);
    } else if (l >= 2) {
      if (r) put(c.added, k, pe);
      put(c.removed, k, pe);
    } else {
      if (l) put(c.removed, k, pe);
      put(c.added, k, pe);
    }
  }
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
 * The ordered union of two associative lists, as upstream orders it: items of the applied list in
 * its order, live-only items kept where they were relative to the shared ones.
 */
function* mergeListItems(lhs: unknown[], rhs: unknown[], s: ListShape, path: Path): Work<unknown[]> {
  // Every lookup below is a Map/Set access by serialized element and the shared keys are walked
  // with an index: O(n) in the two lists' lengths (a `shift()` or `indexOf` per item was O(n²)).
  // Each pass yields every few hundred items: as one step, the passes over a re-applied list of
  // 136,000 finalizers held the event loop for 0.7-1 s on a loaded machine
  // (test/security/http-list-attacks.test.ts, the server-side apply's /healthz bound).
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
