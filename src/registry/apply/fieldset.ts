// A set of field paths (fieldpath.Set of structured-merge-diff): a trie whose nodes hold the
// elements that are members themselves ("the field is owned") and the children that lead to
// deeper members. managedFields' fieldsV1 is exactly this trie written as JSON, with "." marking a
// node that is both a member and a parent.
import { type Path, type PathElement, compareElements, serialize } from './path.js';
import { LEAF } from './leaf.js';
import { knownJSON, rememberJSON } from '../../storage/known-json.js';
import { type Work, YIELD_MASK, finish } from './work.js';
import { sortedMerge } from './plain-items.js';
import { rememberDecoded } from './decoded-nodes.js';

/** Keys from which an encoded fieldsV1 node remembers its JSON text (toFieldsV1Work). */
export const WIDE_NODE = 1024;


interface Child {
  pe: PathElement;
  set: FieldSet;
}

/**
 * A set is built once (toFieldSet, compare, fromFieldsV1 insert into sets they have just created)
 * and never changed afterwards, so the results of union, difference and friends share the maps and
 * subtrees they did not change with their inputs: an operation on a set of n members costs what
 * differs between the operands, not O(n) copies (a 3 MiB list of finalizers is 130,000 members,
 * and one write runs half a dozen such operations). Do not insert into a set an operation returned.
 */
export class FieldSet {
  /** The members, or undefined while they are still `items` (see ofItems). */
  private memberMap: Map<string, PathElement> | undefined;
  /**
   * A compact form of the members: the values of the `v:` elements of a `set` list of plain
   * strings (plain-items.ts), sorted and unique. The field set of a 3 MiB list of finalizers is then one
   * array instead of 136,000 elements, keys and Map entries (most of a create's time and garbage),
   * and its fieldsV1 text is one JSON.stringify. `members` turns it into the Map when something
   * asks for it (a later write changing the list), after which the Map is the only form.
   */
  private items: readonly string[] | undefined;
  readonly children: Map<string, Child>;

  constructor(members: Map<string, PathElement> = new Map(), children: Map<string, Child> = new Map()) {
    this.memberMap = members;
    this.children = children;
  }

  /** A set whose members are the `v:` elements of `items`: plain strings, sorted, unique (plain-items.ts). */
  static ofItems(items: readonly string[], children: Map<string, Child> = new Map()): FieldSet {
    const s = new FieldSet(undefined, children);
    s.memberMap = undefined;
    s.items = items;
    return s;
  }

  get members(): Map<string, PathElement> {
    if (this.memberMap === undefined) {
      const m = new Map<string, PathElement>();
      for (const v of this.items!) m.set(`v:"${v}"`, { kind: 'v', value: v });
      this.memberMap = m;
      this.items = undefined;
    }
    return this.memberMap;
  }

  /** How many members (without making the Map of compact ones). */
  private memberCount(): number {
    return this.memberMap?.size ?? this.items!.length;
  }

  /** Whether the member `k` (a serialized element) is in the set, by binary search while compact. */
  private hasKey(k: string): boolean {
    if (this.memberMap) return this.memberMap.has(k);
    const items = this.items!;
    if (!k.startsWith('v:"') || !k.endsWith('"')) return false;
    const v = k.slice(3, -1);
    let lo = 0;
    let hi = items.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (items[mid]! < v) lo = mid + 1;
      else hi = mid;
    }
    return lo < items.length && items[lo] === v;
  }

  /**
   * Puts the compact node of `items` (plain-items.ts) at `path` (not the root), where no node or
   * an empty one is: false when another one is there (the caller adds the items one by one).
   */
  putItems(path: Path, items: readonly string[]): boolean {
    if (path.length === 0) return false;
    const parent = this.node(path.slice(0, -1));
    const last = path[path.length - 1]!;
    const k = serialize(last);
    const c = parent.children.get(k);
    if (c && !c.set.bare()) return false;
    parent.children.set(k, { pe: last, set: FieldSet.ofItems(items) });
    return true;
  }

  static of(...paths: Path[]): FieldSet {
    const s = new FieldSet();
    for (const p of paths) s.insert(p);
    return s;
  }

  insert(path: Path): void {
    if (path.length === 0) return;
    let node: FieldSet = this;
    for (let i = 0; i < path.length - 1; i++) node = node.child(path[i]!);
    const last = path[path.length - 1]!;
    node.members.set(serialize(last), last);
  }

  /** The node at `path` (the set whose members are the paths' children), created when absent. */
  node(path: Path): FieldSet {
    let node: FieldSet = this;
    for (const pe of path) node = node.child(pe);
    return node;
  }

  /** The child set under `pe`, created when absent. */
  child(pe: PathElement): FieldSet {
    const k = serialize(pe);
    let c = this.children.get(k);
    if (!c) {
      c = { pe, set: new FieldSet() };
      this.children.set(k, c);
    }
    return c.set;
  }

  has(path: Path): boolean {
    if (path.length === 0) return false;
    let node: FieldSet | undefined = this;
    for (let i = 0; i < path.length - 1 && node; i++) node = node.children.get(serialize(path[i]!))?.set;
    return node ? node.hasKey(serialize(path[path.length - 1]!)) : false;
  }

  /** The paths below `pe` (relative to it); empty when none. */
  withPrefix(pe: PathElement): FieldSet {
    return this.children.get(serialize(pe))?.set ?? new FieldSet();
  }

  hasMember(pe: PathElement): boolean {
    return this.hasKey(serialize(pe));
  }

  empty(): boolean {
    if (this.memberCount() > 0) return false;
    for (const c of this.children.values()) if (!c.set.empty()) return false;
    return true;
  }

  /** No members and no children at all (empty() without looking below). */
  private bare(): boolean {
    return this.memberCount() === 0 && this.children.size === 0;
  }

  union(o: FieldSet): FieldSet {
    if (o.bare()) return this;
    if (this.bare()) return o;
    let children = this.children;
    if (this.children.size === 0) children = o.children;
    else if (o.children.size > 0) {
      children = new Map();
      for (const [k, c] of this.children) {
        const oc = o.children.get(k);
        children.set(k, oc ? { pe: c.pe, set: c.set.union(oc.set) } : c);
      }
      for (const [k, c] of o.children) if (!children.has(k)) children.set(k, c);
    }
    if (o.memberCount() === 0) return this.withChildren(children);
    if (this.memberCount() === 0) return o.withChildren(children);
    const members = new Map(this.members);
    for (const [k, pe] of o.members) members.set(k, pe);
    return new FieldSet(members, children);
  }

  /** This set's members (shared, compact or not) with `children`. */
  private withChildren(children: Map<string, Child>): FieldSet {
    return this.memberMap ? new FieldSet(this.memberMap, children) : FieldSet.ofItems(this.items!, children);
  }

  intersection(o: FieldSet): FieldSet {
    const out = this.items && o.items ? FieldSet.ofItems(sortedMerge(this.items, o.items, true)) : new FieldSet();
    if (!(this.items && o.items)) {
      // Member order does not matter (encoding and paths() sort): walk the smaller map.
      const [small, large] = this.members.size <= o.members.size ? [this.members, o.members] : [o.members, this.members];
      for (const [k, pe] of small) if (large.has(k)) out.members.set(k, pe);
    }
    for (const [k, c] of this.children) {
      const oc = o.children.get(k);
      if (!oc) continue;
      const i = c.set.intersection(oc.set);
      if (!i.empty()) out.children.set(k, { pe: c.pe, set: i });
    }
    return out;
  }

  /** This set's members without `o`'s, with `children` (the members shared when nothing is removed). */
  private withoutMembers(o: FieldSet, children: Map<string, Child>): FieldSet {
    if (o.memberCount() === 0) return this.withChildren(children);
    // Two compact nodes (a re-apply of the same list): one walk of both sorted arrays, no Map.
    if (this.items && o.items) {
      const kept = sortedMerge(this.items, o.items, false);
      return kept.length === this.items.length ? this.withChildren(children) : FieldSet.ofItems(kept, children);
    }
    const remove = o.members;
    let hit = false;
    for (const k of remove.keys()) {
      if (this.hasKey(k)) {
        hit = true;
        break;
      }
    }
    if (!hit) return this.withChildren(children);
    const members = this.members;
    if (remove.size < members.size) {
      const out = new Map(members);
      for (const k of remove.keys()) out.delete(k);
      return new FieldSet(out, children);
    }
    const out = new Map<string, PathElement>();
    for (const [k, pe] of members) if (!remove.has(k)) out.set(k, pe);
    return new FieldSet(out, children);
  }

  /** Members of this set not in `o` (children subtract `o`'s children only, as upstream does). */
  difference(o: FieldSet): FieldSet {
    if (o.bare()) return this;
    const children = new Map<string, Child>();
    for (const [k, c] of this.children) {
      const oc = o.children.get(k);
      const d = oc ? c.set.difference(oc.set) : c.set;
      if (!d.empty()) children.set(k, d === c.set ? c : { pe: c.pe, set: d });
    }
    return this.withoutMembers(o, children);
  }

  /** Like difference, but a member of `o` also removes everything below it (reset fields). */
  recursiveDifference(o: FieldSet): FieldSet {
    if (o.bare()) return this;
    const children = new Map<string, Child>();
    for (const [k, c] of this.children) {
      if (o.members.has(k)) continue;
      const oc = o.children.get(k);
      const d = oc ? c.set.recursiveDifference(oc.set) : c.set;
      if (!d.empty()) children.set(k, d === c.set ? c : { pe: c.pe, set: d });
    }
    return this.withoutMembers(o, children);
  }

  copy(): FieldSet {
    const children = new Map<string, Child>();
    for (const [k, c] of this.children) children.set(k, { pe: c.pe, set: c.set.copy() });
    return new FieldSet(new Map(this.members), children);
  }

  equals(o: FieldSet): boolean {
    return this.difference(o).empty() && o.difference(this).empty();
  }

  /** Every member path, members of a node before its children, each group in upstream's order. */
  paths(prefix: Path = [], out: Path[] = []): Path[] {
    // Appends to one array: spreading a child's paths into push() throws RangeError (too many
    // arguments) once a list has about 100,000 items.
    for (const pe of [...this.members.values()].sort(compareElements)) out.push([...prefix, pe]);
    for (const c of [...this.children.values()].sort((a, b) => compareElements(a.pe, b.pe))) c.set.paths([...prefix, c.pe], out);
    return out;
  }

  /** fieldsV1 JSON, keys in the order a Go map encodes them (what clients see from a CRD). */
  toFieldsV1(): Record<string, unknown> {
    return finish(this.toFieldsV1Work());
  }

  /** toFieldsV1 in slices; `dot` starts the object with the "." of a node that is also a member. */
  *toFieldsV1Work(dot = false): Work<Record<string, unknown>> {
    if (this.items && this.children.size === 0) return yield* this.itemsToFieldsV1Work(this.items, dot);
    const inner = new Map<string, Record<string, unknown>>();
    const keys: string[] = [];
    for (const k of this.members.keys()) if (!this.children.has(k)) keys.push(k);
    for (const [k, c] of this.children) {
      const member = this.members.has(k);
      if (c.set.empty()) {
        if (member) keys.push(k);
        continue;
      }
      keys.push(k);
      inner.set(k, yield* c.set.toFieldsV1Work(member));
    }
    // Keys are unique, so sorting the keys alone (the built-in order is the code-unit order the
    // comparator used to give) is the same order; no per-member entry, Map or spread copy either,
    // which cost most of the time on a list of 100,000 items.
    keys.sort();
    yield;
    const out: Record<string, unknown> = dot ? { '.': LEAF } : {};
    // A wide node (a long list's items) also gets its JSON text, written here where its keys are
    // at hand: every serializer and copy of the object uses it instead of its keys
    // (src/storage/known-json.ts). A narrow one is cheaper to serialize than to remember.
    const wide = keys.length >= WIDE_NODE;
    // The usual wide node (a list's items) has leaves only: its text is the keys' JSON array with
    // each `","` between two keys made `":{},"` (one native call instead of one per key; inside a
    // key a quote is always escaped, so `","` occurs only between keys).
    const text: string[] | undefined = wide && inner.size > 0 ? (dot ? ['{".":{}'] : ['{']) : undefined;
    for (let i = 0; i < keys.length; i++) {
      const k = keys[i]!;
      const child = inner.get(k);
      out[k] = child ?? LEAF;
      if (text) text.push(`${text.length > 1 || dot ? ',' : ''}${JSON.stringify(k)}:${child ? (knownJSON(child) ?? JSON.stringify(child)) : '{}'}`);
      if ((i & YIELD_MASK) === YIELD_MASK) yield;
    }
    if (text) {
      text.push('}');
      rememberJSON(out, text.join(''));
    } else if (wide) {
      yield;
      rememberJSON(out, `${dot ? '{".":{},' : '{'}${JSON.stringify(keys).slice(1, -1).replaceAll('","', '":{},"')}:{}}`);
    }
    return out;
  }

  /**
   * toFieldsV1Work of a compact node (ofItems): its keys are `v:"<item>"`, already in the order
   * keys.sort() gives (a plain item has no character that sorts before the closing quote),
   * and its text is JSON.stringify of the items with each `","` between two of them made the end
   * of one key and the start of the next (a plain item holds no quote or backslash).
   */
  private *itemsToFieldsV1Work(items: readonly string[], dot: boolean): Work<Record<string, unknown>> {
    const out: Record<string, unknown> = dot ? { '.': LEAF } : {};
    for (let i = 0; i < items.length; i++) {
      out[`v:"${items[i]}"`] = LEAF;
      if ((i & YIELD_MASK) === YIELD_MASK) yield;
    }
    if (items.length >= WIDE_NODE) {
      yield;
      const q = '\\"'; // a quote inside a key, escaped
      const keys = JSON.stringify(items).slice(2, -2).replaceAll('","', `${q}":{},"v:${q}`);
      rememberJSON(out, `{${dot ? '".":{},' : ''}"v:${q}${keys}${q}":{}}`);
      // What this node decodes to: this set ("." is the parent's business, as in fromFieldsV1Work).
      rememberDecoded(out, this);
    }
    return out;
  }
}
