// The document a JSON patch works on (src/apiserver/patch.ts), as structure shared between the
// stored object, the patch's values and its copies. A `copy` inserts the value at "from" itself,
// not a clone of it, and the document is copied only along the paths an operation writes to (path
// copying, as persistent data structures do). So a copy costs what it takes to find its size, and
// sizes of shared values are remembered: the CVE-2019-1002100 pattern (copies of /metadata into
// itself, each doubling the document) is refused with its 413 after work proportional to the
// number of operations, where cloning each copy against the byte budget cost a whole body limit of
// tiny objects (hundreds of thousands of allocations and ~100 ms of GC per patch, three patches in
// flight holding /healthz at 141 ms: bench/attack/attacks-http.ts "JSON-patch amplification").
//
// The rule that keeps it correct: a container may be changed in place only through the parent that
// owns it (`owner`): the containers this module cloned for the document, each owned by the one
// parent it was put in. Everything else (the stored object, the patch's values, a value a copy
// inserted, which stops being owned when it is copied) is never changed: writing through it clones
// it first, one level at a time, and the clone's children are not owned by the clone until they
// are cloned in turn. Values that are never changed keep their remembered size.
//
// Clones are null-prototype objects: `__proto__` is an ordinary key of JSON data (see patch.ts
// boundedCopyWork), and paths like `/constructor/...` resolve to nothing, so every container an
// operation walks through is cloned first, reads too (a `test` or the "from" of a `move` through a
// stored object would otherwise see inherited properties).

/** The owner of the document's root. */
const ROOT = Object.freeze({});

type Container = Record<string, unknown> | unknown[];

const isContainer = (v: unknown): v is Container => v !== null && typeof v === 'object';

export class SharedDocument {
  root: unknown;
  private readonly owner = new WeakMap<object, object>();
  private readonly sizes = new WeakMap<object, number>();

  constructor(root: unknown) {
    this.root = root;
  }

  /**
   * Makes every container on `pointer`'s way (the root and each parent of its last segment) one
   * this document owns, cloning those it does not, so the patch library may change the last one in
   * place. Stops where the path leaves the document (the library reports that itself).
   */
  own(pointer: string): void {
    if (!isContainer(this.root)) return;
    if (this.owner.get(this.root) !== ROOT) {
      this.root = shallowClone(this.root);
      this.owner.set(this.root as object, ROOT);
    }
    if (pointer === '') return;
    const segments = pointer.split('/');
    let parent = this.root as Container;
    // Every segment but the last names a container to walk through; the last is what changes.
    for (let i = 1; i < segments.length - 1; i++) {
      const key = unescape(segments[i]!);
      let child: unknown;
      if (Array.isArray(parent)) {
        if (!/^\d+$/.test(key)) return;
        child = parent[Number(key)];
      } else if (Object.hasOwn(parent, key)) child = parent[key];
      else return;
      if (!isContainer(child)) return;
      if (this.owner.get(child) !== parent) {
        const c = shallowClone(child);
        if (Array.isArray(parent)) parent[Number(key)] = c;
        else parent[key] = c;
        this.owner.set(c, parent);
        child = c;
      }
      parent = child as Container;
    }
  }

  /** `value`, which is about to be inserted a second time by a copy, is never changed from now on. */
  share(value: unknown): void {
    if (isContainer(value)) this.owner.delete(value);
  }

  /**
   * The remembered JSON size of `value`, for the size walk in patch.ts (jsonSizeWork): values
   * never changed again keep their size, so a value made of earlier copies costs the walk of what
   * is new in it.
   */
  readonly knownSize = (value: object): number | undefined => this.sizes.get(value);

  /** Remembers `value`'s size, only for a value nobody owns: it is never changed. */
  rememberSize(value: unknown, size: number): void {
    if (isContainer(value) && !this.owner.has(value)) this.sizes.set(value, size);
  }
}

function unescape(segment: string): string {
  return segment.indexOf('~') < 0 ? segment : segment.replace(/~1/g, '/').replace(/~0/g, '~');
}

/** One level of a container, as a null-prototype object (or an array). */
function shallowClone(v: Container): Container {
  if (Array.isArray(v)) return v.slice();
  const o = Object.create(null) as Record<string, unknown>;
  for (const k of Object.keys(v)) o[k] = v[k];
  return o;
}
