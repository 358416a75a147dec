// TypeBox schema (JSON Schema draft 7 with TypeBox's symbol-keyed bookkeeping) → OpenAPI schema objects.
// The same TypeBox schemas validate requests, so what kubectl explains is what the server enforces.
// The output is the OpenAPI v3 form; toV2Schema() derives the Swagger 2.0 form from it.

export type JsonSchema = Record<string, any>;

export const META_PREFIX = 'io.k8s.apimachinery.pkg.apis.meta.v1';
export const V3_REF = '#/components/schemas/';
export const V2_REF = '#/definitions/';

// Keywords OpenAPI understands and Kubernetes publishes; anything else (TypeBox's `$id`,
// `patternProperties`, `const`, `additionalProperties: false` on objects with properties) is dropped
// or rewritten below. additionalProperties:false is not published because Kubernetes structural
// schemas never carry it; unknown fields are refused by the server instead (fieldValidation).
const COPIED = [
  'description',
  'default',
  'format',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'minLength',
  'maxLength',
  'pattern',
  'minItems',
  'maxItems',
  'uniqueItems',
  'minProperties',
  'maxProperties',
  'multipleOf',
  'enum',
  'title',
];

/** Copies a plain JSON value, dropping symbol keys (TypeBox's Kind/Optional markers). */
export function plain<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

function literalEnum(members: JsonSchema[]): JsonSchema | undefined {
  if (members.length === 0 || !members.every((m) => 'const' in m)) return undefined;
  const values = members.map((m) => m.const);
  const types = new Set(values.map((v) => (Number.isInteger(v) ? 'integer' : typeof v)));
  if (types.size !== 1) return undefined;
  return { type: [...types][0], enum: values };
}

/** Converts one TypeBox schema node to an OpenAPI v3 schema. */
export function toOpenAPISchema(input: JsonSchema): JsonSchema {
  const s = plain(input);
  return convert(s);
}

function convert(s: JsonSchema): JsonSchema {
  const out: JsonSchema = {};
  if (Array.isArray(s.anyOf) || Array.isArray(s.oneOf)) {
    Object.assign(out, convertUnion((s.anyOf ?? s.oneOf) as JsonSchema[]));
  } else if ('const' in s) {
    Object.assign(out, literalEnum([s]) ?? {});
  } else if (typeof s.type === 'string' && s.type !== 'null') {
    out.type = s.type;
  }
  for (const k of COPIED) if (k in s && !(k in out)) out[k] = s[k];
  if (s.type === 'object') {
    if (s.properties && Object.keys(s.properties).length > 0) {
      out.properties = {};
      for (const [name, sub] of Object.entries(s.properties as Record<string, JsonSchema>)) out.properties[name] = convert(sub);
      if (Array.isArray(s.required) && s.required.length > 0) out.required = [...s.required];
    }
    // Type.Record(String, X) is `patternProperties: {"^(.*)$": X}`: a map from string to X.
    const pattern = s.patternProperties ? Object.values(s.patternProperties as Record<string, JsonSchema>)[0] : undefined;
    if (pattern) out.additionalProperties = convert(pattern);
    else if (s.additionalProperties && typeof s.additionalProperties === 'object') out.additionalProperties = convert(s.additionalProperties);
    else if (s.additionalProperties === true && !out.properties) out['x-kubernetes-preserve-unknown-fields'] = true;
  }
  if (s.type === 'array' && s.items && typeof s.items === 'object') out.items = convert(s.items);
  for (const [k, v] of Object.entries(s)) if (k.startsWith('x-kubernetes-')) out[k] = v;
  return out;
}

// Unions: literals → enum; `X | Null` → X with nullable; integer|string → int-or-string;
// anything else has no single OpenAPI type and is published without one.
function convertUnion(members: JsonSchema[]): JsonSchema {
  const nonNull = members.filter((m) => m.type !== 'null');
  const nullable = nonNull.length < members.length;
  let out: JsonSchema;
  const lit = literalEnum(nonNull);
  if (lit) out = lit;
  else if (nonNull.length === 1) out = convert(nonNull[0]);
  else if (nonNull.length === 2 && new Set(nonNull.map((m) => m.type)).size === 2 && nonNull.every((m) => ['integer', 'string'].includes(m.type))) {
    out = { 'x-kubernetes-int-or-string': true };
  } else out = {};
  if (nullable) out.nullable = true;
  return out;
}

/** Derives the Swagger 2.0 form of a v3 schema produced by toOpenAPISchema/the builders. */
export function toV2Schema(s: JsonSchema): JsonSchema {
  if (Array.isArray(s)) return s.map((x) => toV2Schema(x)) as unknown as JsonSchema;
  if (s === null || typeof s !== 'object') return s;
  // Kubernetes publishes `allOf:[{$ref}]` + default only in v3; v2 has the bare $ref (with description).
  if (Array.isArray(s.allOf) && s.allOf.length === 1 && s.allOf[0].$ref) {
    const out: JsonSchema = { $ref: v2Ref(s.allOf[0].$ref) };
    if (s.description) out.description = s.description;
    return out;
  }
  const out: JsonSchema = {};
  for (const [k, v] of Object.entries(s)) {
    if (k === 'nullable') continue; // not in Swagger 2.0
    if (k === '$ref') out.$ref = v2Ref(v as string);
    else if (k === 'properties') {
      out.properties = {};
      for (const [n, sub] of Object.entries(v as Record<string, JsonSchema>)) out.properties[n] = toV2Schema(sub);
    } else if (k === 'items' || k === 'additionalProperties') out[k] = typeof v === 'object' ? toV2Schema(v as JsonSchema) : v;
    else if (k === 'allOf') out.allOf = (v as JsonSchema[]).map(toV2Schema);
    else out[k] = v;
  }
  return out;
}

function v2Ref(ref: string): string {
  return ref.startsWith(V3_REF) ? V2_REF + ref.slice(V3_REF.length) : ref;
}

/** `configbutler.ai` → `ai.configbutler`, as Kubernetes names definitions of a group. */
export function reverseDomain(group: string): string {
  return group.split('.').reverse().join('.');
}

/** Groups whose kinds Kubernetes names `io.k8s.api.<group>.<version>.<Kind>` (the sandbox serves them). */
const BUILTIN_GROUPS = new Set(['', 'apps']);

export function definitionName(group: string, version: string, kind: string): string {
  if (BUILTIN_GROUPS.has(group)) return `io.k8s.api.${group || 'core'}.${version}.${kind}`;
  return `${reverseDomain(group)}.${version}.${kind}`;
}
