// Path elements of sigs.k8s.io/structured-merge-diff (fieldpath): how one step into an object is
// named in managedFields (`f:name`, `k:{"type":"Ready"}`, `v:"x"`, `i:0`) and in conflict
// messages (`.name`, `[type="Ready"]`, `[="x"]`, `[0]`). The serialized form doubles as the
// element's identity: two elements are equal exactly when their serialized keys are equal, because
// keyed elements list their key fields sorted by name and values are encoded canonically.

export type PathElement =
  | { kind: 'f'; name: string }
  /** Key fields of a map-list item, sorted by name. */
  | { kind: 'k'; fields: Array<[string, unknown]> }
  | { kind: 'v'; value: unknown }
  | { kind: 'i'; index: number };

export type Path = PathElement[];

export const field = (name: string): PathElement => ({ kind: 'f', name });

export function keyElement(fields: Array<[string, unknown]>): PathElement {
  return { kind: 'k', fields: [...fields].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)) };
}

/**
 * JSON as Go's encoding/json writes it (kube-apiserver's fieldsV1 keys come from there): object keys
 * sorted, and <, >, &, U+2028, U+2029 escaped. Equal values always encode to equal strings.
 */
const GO_ESCAPED = /[<>&\u2028\u2029]/;
const GO_ESCAPED_ALL = /[<>&\u2028\u2029]/g;

export function goJSON(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'string') {
    const j = JSON.stringify(v);
    return GO_ESCAPED.test(j) ? j.replace(GO_ESCAPED_ALL, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`) : j;
  }
  if (typeof v === 'number' || typeof v === 'boolean') return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(goJSON).join(',')}]`;
  const o = v as Record<string, unknown>;
  const keys = Object.keys(o).filter((k) => o[k] !== undefined).sort();
  return `{${keys.map((k) => `${goJSON(k)}:${goJSON(o[k])}`).join(',')}}`;
}

/** The fieldsV1 key of an element: `f:spec`, `k:{"group":"","resource":"configmaps"}`, `v:"a"`, `i:3`. */
export function serialize(pe: PathElement): string {
  switch (pe.kind) {
    case 'f':
      return `f:${pe.name}`;
    case 'k':
      return `k:{${pe.fields.map(([n, v]) => `${goJSON(n)}:${goJSON(v)}`).join(',')}}`;
    case 'v':
      return `v:${goJSON(pe.value)}`;
    case 'i':
      return `i:${pe.index}`;
  }
}

/** Parses a fieldsV1 key; throws on anything structured-merge-diff would refuse. */
export function deserialize(s: string): PathElement {
  if (s.length < 2 || s[1] !== ':') throw new Error(`invalid path element ${JSON.stringify(s)}`);
  const body = s.slice(2);
  switch (s[0]) {
    case 'f':
      return field(body);
    case 'v':
      return { kind: 'v', value: JSON.parse(body) };
    case 'k': {
      const o = JSON.parse(body);
      if (o === null || typeof o !== 'object' || Array.isArray(o)) throw new Error(`invalid key element ${JSON.stringify(s)}`);
      return keyElement(Object.entries(o));
    }
    case 'i': {
      if (!/^-?\d+$/.test(body)) throw new Error(`invalid index element ${JSON.stringify(s)}`);
      return { kind: 'i', index: Number(body) };
    }
    default:
      throw new Error(`unknown path element type in ${JSON.stringify(s)}`);
  }
}

/** Go's value.ToString: strings quoted, everything else as JSON. */
function valueString(v: unknown): string {
  return typeof v === 'string' ? JSON.stringify(v) : goJSON(v);
}

/** How conflicts name an element: `.spec`, `[group="",resource="configmaps"]`, `[="x"]`, `[0]`. */
export function elementString(pe: PathElement): string {
  switch (pe.kind) {
    case 'f':
      return `.${pe.name}`;
    case 'k':
      return `[${pe.fields.map(([n, v]) => `${n}=${valueString(v)}`).join(',')}]`;
    case 'v':
      return `[=${valueString(pe.value)}]`;
    case 'i':
      return `[${pe.index}]`;
  }
}

export function pathString(p: Path): string {
  return p.map(elementString).join('');
}

const RANK = { f: 0, k: 1, v: 2, i: 3 } as const;

function compareValues(a: unknown, b: unknown): number {
  const ta = a === null ? 0 : typeof a === 'boolean' ? 1 : typeof a === 'number' ? 2 : typeof a === 'string' ? 3 : 4;
  const tb = b === null ? 0 : typeof b === 'boolean' ? 1 : typeof b === 'number' ? 2 : typeof b === 'string' ? 3 : 4;
  if (ta !== tb) return ta - tb;
  if (ta === 1 || ta === 2) return Number(a) - Number(b);
  const sa = ta === 3 ? (a as string) : goJSON(a);
  const sb = tb === 3 ? (b as string) : goJSON(b);
  return sa < sb ? -1 : sa > sb ? 1 : 0;
}

/**
 * The order structured-merge-diff keeps set members in (PathElement.Compare): field names, then
 * keys, then values, then indices. It decides the order of conflicts in a 409's causes.
 */
export function compareElements(a: PathElement, b: PathElement): number {
  if (a.kind !== b.kind) return RANK[a.kind] - RANK[b.kind];
  switch (a.kind) {
    case 'f': {
      const bn = (b as typeof a).name;
      return a.name < bn ? -1 : a.name > bn ? 1 : 0;
    }
    case 'k': {
      const bf = (b as typeof a).fields;
      for (let i = 0; i < Math.min(a.fields.length, bf.length); i++) {
        const [an, av] = a.fields[i]!;
        const [bn, bv] = bf[i]!;
        if (an !== bn) return an < bn ? -1 : 1;
        const c = compareValues(av, bv);
        if (c !== 0) return c;
      }
      return a.fields.length - bf.length;
    }
    case 'v':
      return compareValues(a.value, (b as typeof a).value);
    case 'i':
      return a.index - (b as typeof a).index;
  }
}
