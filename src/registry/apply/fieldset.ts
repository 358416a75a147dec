// A set of field paths (fieldpath.Set of structured-merge-diff): a trie whose nodes hold the
// elements that are members themselves ("the field is owned") and the children that lead to
// deeper members. managedFields' fieldsV1 is exactly this trie written as JSON, with "." marking a
// node that is both a member and a parent.
import { type Path, type PathElement, compareElements, deserialize, serialize } from './path.js';
import { LEAF } from './leaf.js';
import { knownJSON, rememberJSON } from '../../storage/known-json.js';
import { type Work, YIELD_MASK, finish } from './work.js';

/**
 * A `v:` key of a string that JSON and Go's encoding write alike without escapes (no quote,
 * backslash, control character, <, >, &, U+2028/2029 or surrogate): its value is the text between
 * the quotes and the key is already what serialize() gives (as is an `f:` key), so neither JSON.parse nor goJSON runs
 * for it (the common case: a decoded list of 136,000 finalizers).
 */
const PLAIN_STRING_VALUE = /^v:"[^"\\\u0000-\u001f<>&\u2028\u2029\ud800-\udfff]*"$/;

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
  readonly members: Map<string, PathElement>;
  readonly children: Map<string, Child>;

  constructor(members: Map<string, PathElement> = new Map(), children: Map<string, Child> = new Map()) {
    this.members = members;
    this.children = children;
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
    return node ? node.members.has(serialize(path[path.length - 1]!)) : false;
  }

  /** The paths below `pe` (relative to it); empty when none. */
  withPrefix(pe: PathElement): FieldSet {
    return this.children.get(serialize(pe))?.set ?? new FieldSet();
  }

  hasMember(pe: PathElement): boolean {
    return this.members.has(serialize(pe));
  }

  empty(): boolean {
    if (this.members.size > 0) return false;
    for (const c of this.children.values()) if (!c.set.empty()) return false;
    return true;
  }

  /** No members and no children at all (empty() without looking below). */
  private bare(): boolean {
    return this.members.size === 0 && this.children.size === 0;
  }

  union(o: FieldSet): FieldSet {
    if (o.bare()) return this;
    if (this.bare()) return o;
    let members = this.members;
    if (this.members.size === 0) members = o.members;
    else if (o.members.size > 0) {
      members = new Map(this.members);
      for (const [k, pe] of o.members) members.set(k, pe);
    }
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
    return new FieldSet(members, children);
  }

  intersection(o: FieldSet): FieldSet {
    const out = new FieldSet();
    // Member order does not matter (encoding and paths() sort): walk the smaller map.
    const [small, large] = this.members.size <= o.members.size ? [this.members, o.members] : [o.members, this.members];
    for (const [k, pe] of small) if (large.has(k)) out.members.set(k, pe);
    for (const [k, c] of this.children) {
      const oc = o.children.get(k);
      if (!oc) continue;
      const i = c.set.intersection(oc.set);
      if (!i.empty()) out.children.set(k, { pe: c.pe, set: i });
    }
    return out;
  }

  /** This set's members without `remove` (a copy only when something is removed). */
  private membersWithout(remove: Map<string, PathElement>): Map<string, PathElement> {
    if (remove.size === 0) return this.members;
    let hit = false;
    for (const k of remove.keys()) {
      if (this.members.has(k)) {
        hit = true;
        break;
      }
    }
    if (!hit) return this.members;
    if (remove.size < this.members.size) {
      const out = new Map(this.members);
      for (const k of remove.keys()) out.delete(k);
      return out;
    }
    const out = new Map<string, PathElement>();
    for (const [k, pe] of this.members) if (!remove.has(k)) out.set(k, pe);
    return out;
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
    return new FieldSet(this.membersWithout(o.members), children);
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
    return new FieldSet(this.membersWithout(o.members), children);
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

  static fromFieldsV1(v: unknown): FieldSet {
    return finish(FieldSet.fromFieldsV1Work(v));
  }

  /** fromFieldsV1 in slices: a stored list of 100,000 items has as many fieldsV1 keys to decode. */
  static *fromFieldsV1Work(v: unknown): Work<FieldSet> {
    const out = new FieldSet();
    if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new Error('fieldsV1 must be a JSON object');
    const o = v as Record<string, unknown>;
    let i = 0;
    // Keys, not entries: entries of a 100,000-key map are as many arrays made at once.
    for (const k of Object.keys(o)) {
      if ((++i & YIELD_MASK) === YIELD_MASK) yield;
      if (k === '.') continue;
      const sub = o[k];
      const plain = PLAIN_STRING_VALUE.test(k);
      const pe: PathElement = plain ? { kind: 'v', value: k.slice(3, -1) } : deserialize(k);
      if (sub === null || typeof sub !== 'object' || Array.isArray(sub)) throw new Error(`fieldsV1 entry ${JSON.stringify(k)} must be an object`);
      let empty = true;
      let dot = false;
      let other = false;
      for (const x in sub) {
        empty = false;
        if (x === '.') dot = true;
        else other = true;
        if (dot && other) break;
      }
      const id = plain || pe.kind === 'f' ? k : serialize(pe);
      if (empty || dot) out.members.set(id, pe);
      if (other) {
        const child = yield* FieldSet.fromFieldsV1Work(sub);
        if (!child.empty()) out.children.set(id, { pe, set: child });
      }
    }
    return out;
  }

}
