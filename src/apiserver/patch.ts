// Applying JSON patches (RFC 6902) and merge patches (RFC 7386) within bounds. A patch may not
// grow the object past the request body limit: `copy` can double a document per operation (the
// CVE-2019-1002100 pattern: 30 copies of /metadata into itself is 2^30 times its size), so the
// bytes copied are counted before each copy and application stops at the first operation that
// would exceed the limit. Library errors are turned into messages about the patch.
import fastJsonPatch, { type Operation } from 'fast-json-patch';
import * as status from '../api/status.js';
import { type Work, YIELD_MASK, finish, inSlices } from '../registry/apply/work.js';

const { applyOperation, JsonPatchError, deepClone, validator } = fastJsonPatch as unknown as typeof import('fast-json-patch');

/**
 * A copy whose objects have no prototype. `__proto__` is a valid ConfigMap data key; on a plain
 * object `obj["__proto__"] = v` (what fast-json-patch's add/replace do) sets the prototype instead
 * of the key, so the key was lost, and the library's guard refused such paths outright. On
 * null-prototype objects it is an ordinary key, and `/constructor/prototype/...` resolves to
 * nothing (no prototype to reach), so the guard is not needed.
 */
function nullPrototype(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(nullPrototype);
  if (v === null || typeof v !== 'object') return v;
  const o = Object.create(null) as Record<string, unknown>;
  for (const [k, x] of Object.entries(v)) o[k] = nullPrototype(x);
  return o;
}

/** Back to ordinary objects, `__proto__` kept as an own key (defineProperty, as JSON.parse does). */
function ordinary(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(ordinary);
  if (v === null || typeof v !== 'object') return v;
  const o: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) Object.defineProperty(o, k, { value: ordinary(x), enumerable: true, writable: true, configurable: true });
  return o;
}

/** The value at a JSON pointer, own properties only (the library's lookup refuses `__proto__`); undefined when absent. */
function valueAt(document: unknown, pointer: string): unknown {
  if (pointer === '') return document;
  let cur = document;
  for (const raw of pointer.split('/').slice(1)) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (Array.isArray(cur)) {
      if (!/^(0|[1-9]\d*)$/.test(key)) return undefined;
      cur = cur[Number(key)];
    } else if (cur !== null && typeof cur === 'object' && Object.hasOwn(cur, key)) {
      cur = (cur as Record<string, unknown>)[key];
    } else return undefined;
  }
  return cur;
}

/**
 * fast-json-patch's own validator checks a `move` or `copy` source by cloning the whole document
 * (O(document) per operation: 10,000 operations on a 3 MB object would clone 30 GB). This one
 * checks the same things by looking the paths up.
 */
function checkOperation(op: Operation, index: number, document: unknown, existingPathFragment: string): void {
  validator(op, index); // the operation's shape only
  if (op.op === 'add') {
    const pathLen = op.path.split('/').length;
    const existingLen = existingPathFragment.split('/').length;
    if (pathLen !== existingLen + 1 && pathLen !== existingLen) {
      throw new JsonPatchError('add', 'OPERATION_PATH_UNRESOLVABLE', index, op, document);
    }
  } else if (op.op === 'replace' || op.op === 'remove') {
    if (op.path !== existingPathFragment) throw new JsonPatchError(op.op, 'OPERATION_PATH_UNRESOLVABLE', index, op, document);
  } else if (op.op === 'move' || op.op === 'copy') {
    if (valueAt(document, op.from) === undefined) throw new JsonPatchError(op.op, 'OPERATION_FROM_UNRESOLVABLE', index, op, document);
  }
}

/**
 * Approximate JSON size of `value` in bytes, walking iteratively and stopping as soon as it
 * exceeds `budget` (then the result is some number greater than `budget`). Costs at most
 * O(budget), however large the value is.
 */
export function jsonSizeWithin(value: unknown, budget: number): number {
  return finish(jsonSizeWork(value, budget));
}

/** jsonSizeWithin as work that yields every few hundred values (src/registry/apply/work.ts). */
function* jsonSizeWork(value: unknown, budget: number): Work<number> {
  let size = 0;
  let visited = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === 'string') size += v.length + 2;
    else if (typeof v === 'number') size += 8;
    else if (typeof v === 'boolean' || v === null || v === undefined) size += 5;
    else if (Array.isArray(v)) {
      size += 2 + v.length;
      for (const x of v) stack.push(x);
    } else if (typeof v === 'object') {
      // Keys, not entries: entries of a 100,000-key map are as many arrays made at once.
      const o = v as Record<string, unknown>;
      for (const k of Object.keys(o)) {
        size += k.length + 4;
        stack.push(o[k]);
      }
      size += 2;
    }
    if (size > budget) return size;
    if ((++visited & YIELD_MASK) === YIELD_MASK) yield;
  }
  return size;
}

const YIELD_AFTER_MS = 5;

function describe(op: Operation, index: number): string {
  const from = 'from' in op ? ` from "${op.from}"` : '';
  return `operation ${index} (${op.op}${from} at "${op.path}")`;
}


/** What a fast-json-patch error means for the client, without the library's wording or internals. */
function explain(e: unknown, op: Operation, index: number): string {
  const at = describe(op, index);
  if (e instanceof JsonPatchError) {
    switch (e.name) {
      case 'OPERATION_PATH_UNRESOLVABLE':
        return `${at}: the path does not exist in the object`;
      case 'OPERATION_FROM_UNRESOLVABLE':
        return `${at}: the "from" path does not exist in the object`;
      case 'TEST_OPERATION_FAILED':
        return `${at}: the test failed: the value at the path differs`;
      case 'OPERATION_PATH_ILLEGAL_ARRAY_INDEX':
      case 'OPERATION_VALUE_OUT_OF_BOUNDS':
        return `${at}: the array index is invalid or out of bounds`;
      case 'OPERATION_VALUE_REQUIRED':
        return `${at}: the operation needs a "value"`;
      case 'OPERATION_VALUE_CANNOT_CONTAIN_UNDEFINED':
        return `${at}: the value is not valid JSON`;
      default:
        return `${at}: the operation is not valid`;
    }
  }
  return `${at}: the operation cannot be applied to the object`;
}

/**
 * Applies `ops` to a copy of `doc`. Throws 413 RequestEntityTooLarge at the first operation that
 * would make the document larger than `limitBytes`, 422 Invalid when an operation does not apply.
 */
export async function applyJSONPatch(doc: unknown, patch: Operation[], limitBytes: number): Promise<unknown> {
  let document = nullPrototype(doc);
  // Operations hand their values to the document, which later operations change: every
  // application (a conflict retries it) starts from a fresh copy of the patch.
  const ops = (deepClone(patch) as Operation[]).map((op) => ('value' in op ? { ...op, value: nullPrototype(op.value) } : op)) as Operation[];
  let copied = 0;
  const base = jsonSizeWithin(document, limitBytes);
  // Large copies take milliseconds each: give other requests the event loop between operations
  // once this one has had it for a while, so a heavy patch delays nobody else by much.
  let slice = performance.now();
  for (let index = 0; index < ops.length; index++) {
    const op = ops[index]!;
    if (performance.now() - slice > YIELD_AFTER_MS) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      slice = performance.now();
    }
    if (op.op === 'move' && op.path.startsWith(`${op.from}/`)) {
      throw status.patchInvalid(`${describe(op, index)}: a value cannot be moved into one of its own children`);
    }
    let applied = op;
    if (op.op === 'copy') {
      const value = valueAt(document, op.from);
      if (value === undefined) throw status.patchInvalid(`${describe(op, index)}: the "from" path does not exist in the object`);
      // Every copy adds its bytes to the document; stop before cloning past the limit.
      copied += jsonSizeWithin(value, limitBytes);
      if (base + copied > limitBytes) throw status.patchTooLarge(limitBytes, describe(op, index));
      // A copy is an add of the value at "from" (RFC 6902 4.5); cloned here so the copy has no
      // prototypes either (the library's own clone would make ordinary objects).
      applied = { op: 'add', path: op.path, value: nullPrototype(value) };
    }
    try {
      // banPrototypeModifications off: the document has no prototypes to modify (nullPrototype).
      document = applyOperation(document, applied, checkOperation as never, true, false, index).newDocument;
    } catch (e) {
      if (e instanceof status.StatusError) throw e;
      throw status.patchInvalid(explain(e, op, index));
    }
  }
  return checkPatchedSize(ordinary(document), limitBytes);
}

/** The result of any patch must still fit the body limit (it is what gets stored). */
export function checkPatchedSize(document: unknown, limitBytes: number): unknown {
  if (jsonSizeWithin(document, limitBytes) > limitBytes) throw status.patchTooLarge(limitBytes, 'the patched object');
  return document;
}

/** checkPatchedSize in slices, for a patched object that may be as large as the limit. */
export async function checkPatchedSizeInSlices(document: unknown, limitBytes: number): Promise<unknown> {
  if ((await inSlices(jsonSizeWork(document, limitBytes))) > limitBytes) throw status.patchTooLarge(limitBytes, 'the patched object');
  return document;
}

/** RFC 7386 JSON merge patch (depth is bounded by the decoder's nesting limit). */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return patch;
  const out: Record<string, unknown> =
    target !== null && typeof target === 'object' && !Array.isArray(target) ? { ...(target as Record<string, unknown>) } : {};
  for (const [k, v] of Object.entries(patch as Record<string, unknown>)) {
    if (v === null) delete out[k];
    // defineProperty, not `out[k] =`: a new `__proto__` key (valid in ConfigMap data) would set the prototype instead.
    else Object.defineProperty(out, k, { value: mergePatch(Object.hasOwn(out, k) ? out[k] : undefined, v), enumerable: true, writable: true, configurable: true });
  }
  return out;
}
