// Schema validation with ajv, compiled once per resource from the same TypeBox schema that
// produces the OpenAPI documents, the first time an object of it is validated: compiling every
// served resource's schema took a fifth of the start-up, and most are never written to. ajv itself
// is loaded then too. Unknown fields are handled per request (fieldValidation): Strict rejects them
// (422 naming each), Warn prunes them with a warning, Ignore prunes silently.
import { createRequire } from 'node:module';
import type { ErrorObject, ValidateFunction } from 'ajv';
import type { TSchema } from '@sinclair/typebox';
import { type FieldError, forbiddenField, invalidValue, notSupported, required } from './field-errors.js';

export type FieldValidation = 'Strict' | 'Warn' | 'Ignore';

type Schema = Record<string, any>;

let ajvInstance: { compile(schema: Schema): ValidateFunction } | undefined;
function ajv(): { compile(schema: Schema): ValidateFunction } {
  if (!ajvInstance) {
    // ajv and ajv-formats are CommonJS with a default export.
    const load = createRequire(import.meta.url);
    const Ajv = load('ajv');
    const addFormats = load('ajv-formats');
    ajvInstance = new (Ajv.default ?? Ajv)({ allErrors: true, useDefaults: true, strict: false, coerceTypes: false });
    (addFormats.default ?? addFormats)(ajvInstance);
    // Secret and ConfigMap binary values: ajv-formats' `byte` regex took ~20 ms per MiB (a 3 MiB
    // Secret held the event loop ~60 ms at once) and accepted any value holding an empty line;
    // isBase64 is exact and a seventh of the cost (test/unit/base64-format.test.ts).
    (ajvInstance as unknown as { addFormat(name: string, f: object): void }).addFormat('byte', { type: 'string', validate: isBase64 });
  }
  return ajvInstance!;
}

const BASE64_ALPHABET = /^[A-Za-z0-9+/]*={0,2}$/;
const LINE_BREAKS = /[\r\n]/g;

/**
 * Standard base64 with padding, as Kubernetes decodes a []byte field (Go's base64.StdEncoding,
 * which skips line breaks): whole groups of four, the last possibly ending `X==` or `XX=`. With
 * line breaks removed, a length that is a multiple of four and at most two `=` at the end admit
 * exactly those strings. ajv-formats' own `byte` regex carries the multiline flag, so it accepted
 * any value with an empty line in it ("!!!\n").
 */
export function isBase64(value: string): boolean {
  const plain = value.includes('\n') || value.includes('\r') ? value.replace(LINE_BREAKS, '') : value;
  return plain.length % 4 === 0 && BASE64_ALPHABET.test(plain);
}

function joinPath(base: string, key: string): string {
  return base ? `${base}.${key}` : key;
}

/**
 * Work that yields (nothing) every few hundred list items or keys, for a caller to run a few
 * milliseconds at a time (src/registry/apply/work.ts inSlices): the walks below visit every item
 * of a 3 MiB list, which held the event loop for about 100 ms at once.
 */
export type Walk<T> = Generator<undefined, T, undefined>;
/** Items or keys visited between two yields (a power of two minus one). */
const YIELD_MASK = 255;

function run<T>(w: Walk<T>): T {
  let r = w.next();
  while (!r.done) r = w.next();
  return r.value;
}

/** Walks value against schema and reports (or removes) properties the schema does not declare. */
function* unknownFields(schema: Schema | undefined, value: unknown, path: string, out: string[], prune: boolean): Walk<void> {
  if (!schema || value === null || typeof value !== 'object') return;
  if (Array.isArray(value)) {
    const items = schema.items as Schema | undefined;
    // Items of a scalar type hold no properties to check (ajv reports a wrong type).
    if (!items || (items.type !== 'object' && !items.items)) return;
    for (let i = 0; i < value.length; i++) {
      yield* unknownFields(items, value[i], `${path}[${i}]`, out, prune);
      if ((i & YIELD_MASK) === YIELD_MASK) yield;
    }
    return;
  }
  if (schema.type !== 'object') return;
  const props: Record<string, Schema> = schema.properties ?? {};
  const extra = schema.additionalProperties;
  // A map of scalars (labels, annotations, fieldsV1's leaves) has nothing to visit per key.
  if (typeof extra === 'object' && extra !== null && extra.type !== 'object' && !extra.items && Object.keys(props).length === 0) return;
  let i = 0;
  for (const key of Object.keys(value as object)) {
    const child = props[key];
    if (child) yield* unknownFields(child, (value as any)[key], joinPath(path, key), out, prune);
    else if (extra && typeof extra === 'object') {
      yield* unknownFields(extra, (value as any)[key], joinPath(path, key), out, prune);
    } else if (extra === false) {
      out.push(joinPath(path, key));
      if (prune) delete (value as any)[key];
    }
    if ((++i & YIELD_MASK) === YIELD_MASK) yield;
  }
}

/** Schema keyword marking a retired field; its value says what replaces it. */
export const RETIRED = 'x-reverser-retired';

/**
 * A retired field stays in the schema for a release and is refused whenever it is present, whatever
 * fieldValidation says, with a message naming its replacement: users asked that a removed field
 * fail loudly instead of being pruned while the object stays Ready.
 */
function* retiredFields(schema: Schema | undefined, value: unknown, path: string, out: FieldError[]): Walk<void> {
  if (!schema || value === null || value === undefined || !holdsRetired(schema)) return;
  if (typeof schema[RETIRED] === 'string') {
    out.push(forbiddenField(path, `field is retired: ${schema[RETIRED]}`));
    return;
  }
  if (typeof value !== 'object') return;
  if (Array.isArray(value)) {
    const items = schema.items as Schema | undefined;
    // Only a schema that declares properties (or items) can hold a retired field below it.
    if (!items || (!items.properties && !items.items && typeof items[RETIRED] !== 'string')) return;
    for (let i = 0; i < value.length; i++) {
      yield* retiredFields(items, value[i], `${path}[${i}]`, out);
      if ((i & YIELD_MASK) === YIELD_MASK) yield;
    }
    return;
  }
  for (const [key, child] of Object.entries((schema.properties ?? {}) as Record<string, Schema>)) {
    if (key in (value as object)) yield* retiredFields(child, (value as any)[key], joinPath(path, key), out);
  }
}

/**
 * Whether `schema` or a schema below it marks a retired field, computed once per schema: most hold
 * none (a ConfigMap's, today every one), and walking every written object for nothing was ~1% of
 * the main thread's time per edit (bench/scale profile).
 */
const retiredBelow = new WeakMap<object, boolean>();
function holdsRetired(schema: Schema): boolean {
  let known = retiredBelow.get(schema);
  if (known !== undefined) return known;
  retiredBelow.set(schema, false); // a recursive schema meets itself: nothing new below
  known = typeof schema[RETIRED] === 'string' || (schema.items !== undefined && holdsRetired(schema.items as Schema)) || Object.values((schema.properties ?? {}) as Record<string, Schema>).some((s) => holdsRetired(s));
  retiredBelow.set(schema, known);
  return known;
}

function instanceToField(instancePath: string): string {
  return instancePath
    .split('/')
    .slice(1)
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce((acc, seg) => (/^\d+$/.test(seg) ? `${acc}[${seg}]` : joinPath(acc, seg)), '');
}

function valueAt(root: unknown, instancePath: string): unknown {
  let cur: any = root;
  for (const seg of instancePath.split('/').slice(1)) cur = cur?.[seg.replace(/~1/g, '/').replace(/~0/g, '~')];
  return cur;
}

/** The schema at an ajv schemaPath (`#/properties/spec/.../anyOf`); ajv reports it only when verbose. */
function schemaAt(root: Schema, schemaPath: string): unknown {
  let cur: any = root;
  for (const seg of schemaPath.replace(/^#\/?/, '').split('/').filter(Boolean)) cur = cur?.[seg.replace(/~1/g, '/').replace(/~0/g, '~')];
  return cur;
}

function toFieldErrors(errors: ErrorObject[], root: unknown, schema: Schema): FieldError[] {
  const out: FieldError[] = [];
  const seen = new Set<string>();
  // Errors inside an anyOf branch are summarised by the anyOf error itself.
  // By schema location, which the schema bounds: a list of n bad items yields n anyOf errors but
  // only a few distinct paths, so the check below stays O(n), not O(n²).
  const anyOfPaths = [...new Set(errors.filter((e) => e.keyword === 'anyOf').map((e) => e.schemaPath))];
  for (const e of errors) {
    if (anyOfPaths.some((p) => e.schemaPath !== p && e.schemaPath.startsWith(p.replace(/\/anyOf$/, '/anyOf/')))) continue;
    const field = instanceToField(e.instancePath);
    const value = valueAt(root, e.instancePath);
    let fe: FieldError;
    switch (e.keyword) {
      case 'required':
        fe = required(joinPath(field, (e.params as any).missingProperty));
        break;
      case 'type':
        fe = { type: 'FieldValueTypeInvalid', field, value, detail: `must be of type ${(e.params as any).type}` };
        break;
      case 'anyOf': {
        const found = schemaAt(schema, e.schemaPath);
        const branches: Schema[] = Array.isArray(found) ? (found as Schema[]) : [];
        const consts = branches.filter((b) => 'const' in b).map((b) => String(b.const));
        fe = consts.length > 0 && consts.length === branches.length ? notSupported(field, value, consts) : invalidValue(field, value, 'does not match any allowed form');
        break;
      }
      case 'minLength':
        fe = (e.params as any).limit === 1 && value === '' ? required(field) : invalidValue(field, value, `must be at least ${(e.params as any).limit} characters`);
        break;
      case 'maxLength':
        fe = { type: 'FieldValueTooLong', field, detail: `may not be more than ${(e.params as any).limit} characters` };
        break;
      case 'minimum':
        fe = invalidValue(field, value, `must be greater than or equal to ${(e.params as any).limit}`);
        break;
      case 'maximum':
        fe = invalidValue(field, value, `must be less than or equal to ${(e.params as any).limit}`);
        break;
      case 'format':
        fe = invalidValue(field, value, `must be a valid ${(e.params as any).format}`);
        break;
      case 'additionalProperties':
        fe = forbiddenField(joinPath(field, (e.params as any).additionalProperty), 'unknown field');
        break;
      default:
        fe = invalidValue(field, value, e.message ?? 'is invalid');
    }
    const k = `${fe.type}|${fe.field}`;
    if (!seen.has(k)) {
      seen.add(k);
      out.push(fe);
    }
  }
  return out;
}

export interface SchemaValidator {
  /**
   * Validates `obj` in place: applies schema defaults, and removes unknown fields unless Strict.
   * Returns field errors (Strict: one per unknown field too) and warnings for Warn.
   */
  validate(obj: Record<string, unknown>, mode: FieldValidation): { errors: FieldError[]; warnings: string[] };
  /** validate() as work that yields between list items (the schema check itself is one step). */
  validateWork(obj: Record<string, unknown>, mode: FieldValidation): Walk<{ errors: FieldError[]; warnings: string[] }>;
  /** Compiles the schema now (else the first validation does), loading ajv if it is the first. */
  compile(): void;
  /** Whether the schema is compiled. */
  compiled(): boolean;
}

export function compileSchema(schema: TSchema): SchemaValidator {
  const plain = JSON.parse(JSON.stringify(schema)) as Schema; // drops TypeBox symbols
  let compiled: ValidateFunction | undefined;
  function* validateWork(obj: Record<string, unknown>, mode: FieldValidation): Walk<{ errors: FieldError[]; warnings: string[] }> {
    const fn = (compiled ??= ajv().compile(plain));
    const errors: FieldError[] = [];
    yield* retiredFields(plain, obj, '', errors);
    const unknown: string[] = [];
    yield* unknownFields(plain, obj, '', unknown, true);
    const warnings: string[] = [];
    if (mode === 'Strict') for (const f of unknown) errors.push(forbiddenField(f, `unknown field "${f}"`));
    if (mode === 'Warn') for (const f of unknown) warnings.push(`unknown field "${f}"`);
    yield;
    if (!fn(obj)) for (const e of toFieldErrors(fn.errors ?? [], obj, plain)) errors.push(e);
    return { errors, warnings };
  }
  return {
    validate: (obj, mode) => run(validateWork(obj, mode)),
    validateWork,
    compile: () => void (compiled ??= ajv().compile(plain)),
    compiled: () => compiled !== undefined,
  };
}
