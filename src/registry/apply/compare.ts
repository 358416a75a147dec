// The difference between two values under a shape (structured-merge-diff's typed Compare): which
// fields were added, modified or removed. List items are matched as typed.ts names them (itemElement).
import { deepEqual } from '../metadata.js';
import { FieldSet } from './fieldset.js';
import { type Path, type PathElement, field, serialize } from './path.js';
import { type Shape, fieldShape, resolve } from './schema.js';
import { type ListShape, isEmptyContainer, itemElement, putSetItemsWork } from './typed.js';
import { type Work, YIELD_MASK, finish } from './work.js';

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
    return yield* putSetItemsWork(s, items, path, into);
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
