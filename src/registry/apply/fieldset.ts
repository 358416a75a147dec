// A set of field paths (fieldpath.Set of structured-merge-diff): a trie whose nodes hold the
// elements that are members themselves ("the field is owned") and the children that lead to
// deeper members. managedFields' fieldsV1 is exactly this trie written as JSON, with "." marking a
// node that is both a member and a parent.
import { type Path, type PathElement, compareElements, deserialize, serialize } from './path.js';

interface Child {
  pe: PathElement;
  set: FieldSet;
}

export class FieldSet {
  readonly members = new Map<string, PathElement>();
  readonly children = new Map<string, Child>();

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

  union(o: FieldSet): FieldSet {
    const out = new FieldSet();
    for (const [k, pe] of this.members) out.members.set(k, pe);
    for (const [k, pe] of o.members) out.members.set(k, pe);
    for (const [k, c] of this.children) {
      const oc = o.children.get(k);
      out.children.set(k, { pe: c.pe, set: oc ? c.set.union(oc.set) : c.set.copy() });
    }
    for (const [k, c] of o.children) if (!out.children.has(k)) out.children.set(k, { pe: c.pe, set: c.set.copy() });
    return out;
  }

  intersection(o: FieldSet): FieldSet {
    const out = new FieldSet();
    for (const [k, pe] of this.members) if (o.members.has(k)) out.members.set(k, pe);
    for (const [k, c] of this.children) {
      const oc = o.children.get(k);
      if (!oc) continue;
      const i = c.set.intersection(oc.set);
      if (!i.empty()) out.children.set(k, { pe: c.pe, set: i });
    }
    return out;
  }

  /** Members of this set not in `o` (children subtract `o`'s children only, as upstream does). */
  difference(o: FieldSet): FieldSet {
    const out = new FieldSet();
    for (const [k, pe] of this.members) if (!o.members.has(k)) out.members.set(k, pe);
    for (const [k, c] of this.children) {
      const oc = o.children.get(k);
      const d = oc ? c.set.difference(oc.set) : c.set.copy();
      if (!d.empty()) out.children.set(k, { pe: c.pe, set: d });
    }
    return out;
  }

  /** Like difference, but a member of `o` also removes everything below it (reset fields). */
  recursiveDifference(o: FieldSet): FieldSet {
    const out = new FieldSet();
    for (const [k, pe] of this.members) if (!o.members.has(k)) out.members.set(k, pe);
    for (const [k, c] of this.children) {
      if (o.members.has(k)) continue;
      const oc = o.children.get(k);
      const d = oc ? c.set.recursiveDifference(oc.set) : c.set.copy();
      if (!d.empty()) out.children.set(k, { pe: c.pe, set: d });
    }
    return out;
  }

  copy(): FieldSet {
    return this.union(new FieldSet());
  }

  equals(o: FieldSet): boolean {
    return this.difference(o).empty() && o.difference(this).empty();
  }

  /** Every member path, members of a node before its children, each group in upstream's order. */
  paths(prefix: Path = []): Path[] {
    const out: Path[] = [];
    for (const pe of [...this.members.values()].sort(compareElements)) out.push([...prefix, pe]);
    for (const c of [...this.children.values()].sort((a, b) => compareElements(a.pe, b.pe))) out.push(...c.set.paths([...prefix, c.pe]));
    return out;
  }

  /** fieldsV1 JSON, keys in the order a Go map encodes them (what clients see from a CRD). */
  toFieldsV1(): Record<string, unknown> {
    const entries: Array<[string, unknown]> = [];
    for (const k of this.members.keys()) if (!this.children.has(k)) entries.push([k, {}]);
    for (const [k, c] of this.children) {
      const inner = c.set.toFieldsV1();
      const member = this.members.has(k);
      if (Object.keys(inner).length === 0) {
        if (member) entries.push([k, {}]);
      } else entries.push([k, member ? { '.': {}, ...inner } : inner]);
    }
    entries.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    return Object.fromEntries(entries);
  }

  static fromFieldsV1(v: unknown): FieldSet {
    const out = new FieldSet();
    if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new Error('fieldsV1 must be a JSON object');
    for (const [k, sub] of Object.entries(v as Record<string, unknown>)) {
      if (k === '.') continue;
      const pe = deserialize(k);
      if (sub === null || typeof sub !== 'object' || Array.isArray(sub)) throw new Error(`fieldsV1 entry ${JSON.stringify(k)} must be an object`);
      const keys = Object.keys(sub);
      if (keys.length === 0 || keys.includes('.')) out.members.set(serialize(pe), pe);
      if (keys.some((x) => x !== '.')) {
        const child = FieldSet.fromFieldsV1(sub);
        if (!child.empty()) out.children.set(serialize(pe), { pe, set: child });
      }
    }
    return out;
  }
}
