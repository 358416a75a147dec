// The merge-relevant shape of a schema: what structured-merge-diff's schema.Schema keeps of an
// OpenAPI schema. Derived from the same TypeBox schemas that validate requests and produce the
// OpenAPI documents, so the `x-kubernetes-list-type` markers clients read are the ones we merge by.
//
// Defaults follow CRDs: an array without a list type is atomic, an object is merged field by field
// (x-kubernetes-map-type: atomic makes it one value), an object that preserves unknown fields is
// "deduced" (maps granular, lists atomic).

export type Shape =
  | { kind: 'scalar' }
  | {
      kind: 'map';
      /** Declared fields (a struct); `elem` types the others (a map such as labels). */
      fields: Map<string, Shape>;
      elem?: Shape;
      atomic: boolean;
    }
  | { kind: 'list'; listType: 'atomic' | 'set' | 'map'; keys: string[]; elem: Shape }
  | { kind: 'deduced' };

type JsonSchema = Record<string, any>;

const SCALAR: Shape = { kind: 'scalar' };
const DEDUCED: Shape = { kind: 'deduced' };

export function shapeOf(input: unknown): Shape {
  return convert(JSON.parse(JSON.stringify(input)) as JsonSchema);
}

function convert(s: JsonSchema): Shape {
  const union = (s.anyOf ?? s.oneOf) as JsonSchema[] | undefined;
  if (Array.isArray(union)) {
    // `X | null` is X; literal unions and int-or-string are scalars.
    const nonNull = union.filter((m) => m.type !== 'null');
    return nonNull.length === 1 ? convert(nonNull[0]!) : SCALAR;
  }
  if (s.type === 'array') {
    const listType = s['x-kubernetes-list-type'];
    const elem = s.items && typeof s.items === 'object' ? convert(s.items) : DEDUCED;
    if (listType === 'map') return { kind: 'list', listType: 'map', keys: [...(s['x-kubernetes-list-map-keys'] ?? [])], elem };
    if (listType === 'set') return { kind: 'list', listType: 'set', keys: [], elem };
    return { kind: 'list', listType: 'atomic', keys: [], elem };
  }
  if (s.type === 'object') {
    const fields = new Map<string, Shape>();
    for (const [name, sub] of Object.entries((s.properties ?? {}) as Record<string, JsonSchema>)) fields.set(name, convert(sub));
    const pattern = s.patternProperties ? (Object.values(s.patternProperties as Record<string, JsonSchema>)[0] as JsonSchema) : undefined;
    let elem: Shape | undefined;
    if (pattern) elem = convert(pattern);
    else if (s.additionalProperties && typeof s.additionalProperties === 'object') elem = convert(s.additionalProperties);
    else if ((s.additionalProperties === true || s['x-kubernetes-preserve-unknown-fields'] === true) && fields.size === 0) return DEDUCED;
    else if (s.additionalProperties !== false && fields.size === 0) return DEDUCED;
    return { kind: 'map', fields, elem, atomic: s['x-kubernetes-map-type'] === 'atomic' };
  }
  return SCALAR;
}

/** The shape of `key` inside a map shape: its declared field, else the element type, else deduced. */
export function fieldShape(shape: Shape, key: string): Shape {
  if (shape.kind !== 'map') return DEDUCED;
  return shape.fields.get(key) ?? shape.elem ?? DEDUCED;
}

/** Whether `key` is a declared field (a struct member) of a map shape. */
export function isNamedField(shape: Shape, key: string): boolean {
  return shape.kind === 'map' && shape.fields.has(key);
}

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/**
 * The effective kind of a value under a shape. A deduced shape takes the value's own kind (maps
 * granular, lists atomic); a value whose kind contradicts its schema is handled as one atomic leaf,
 * and validation reports it afterwards.
 */
export function resolve(shape: Shape, v: unknown): Shape {
  if (shape.kind === 'deduced') {
    if (isPlainObject(v)) return { kind: 'map', fields: new Map(), elem: DEDUCED, atomic: false };
    return SCALAR;
  }
  if (v === undefined || v === null) return shape;
  if (shape.kind === 'map' && !isPlainObject(v)) return SCALAR;
  if (shape.kind === 'list' && !Array.isArray(v)) return SCALAR;
  return shape;
}

/**
 * Removes fields the schema does not declare from `v` (in place) and returns their paths
 * (`spec.bogus`, `spec.resources[0].x`). An apply configuration is pruned this way under
 * fieldValidation Warn/Ignore before ownership is computed, so nobody owns a field that is not
 * stored. (kube-apiserver answers 500 for such a configuration to a CRD; we prune or, under Strict,
 * refuse with 422 like every other write.)
 */
export function pruneUnknown(v: unknown, shape: Shape, path = '', out: string[] = []): string[] {
  const s = resolve(shape, v);
  if (s.kind === 'map' && isPlainObject(v)) {
    for (const k of Object.keys(v)) {
      const p = path ? `${path}.${k}` : k;
      if (!s.fields.has(k) && !s.elem) {
        out.push(p);
        delete v[k];
      } else pruneUnknown(v[k], fieldShape(s, k), p, out);
    }
  } else if (s.kind === 'list' && Array.isArray(v)) {
    // One shared output array: spreading each item's paths into push() is O(n) arguments per call.
    v.forEach((item, i) => pruneUnknown(item, s.elem, `${path}[${i}]`, out));
  }
  return out;
}
