// Applying JSON patches (RFC 6902) and merge patches (RFC 7386) within bounds. A patch may not
// grow the object past the request body limit: `copy` can double a document per operation (the
// CVE-2019-1002100 pattern: 30 copies of /metadata into itself is 2^30 times its size), so each
// copy is counted against the bytes the limit still allows, and application stops at the first
// operation that would exceed it. Copies share structure instead of being cloned
// (patch-sharing.ts), so the 413 comes before anything large is built; the result is built once,
// when it fits. Every walk over the object is in slices that yield the event loop
// (src/registry/apply/work.ts, turns.ts), so a patch at the limit delays other clients by a slice,
// not by the whole patch. Library errors are turned into messages about the patch.
import fastJsonPatch, { type Operation } from 'fast-json-patch';
import * as status from '../api/status.js';
import { type Work, YIELD_MASK, finish, inSlices } from '../registry/apply/work.js';
import { nextTurn } from '../registry/apply/turns.js';
import { SharedDocument } from './patch-sharing.js';

const { applyOperation, JsonPatchError, validator } = fastJsonPatch as unknown as typeof import('fast-json-patch');

/** A bounded copy: the copy and its approximate JSON size, or `over` once the size passed the budget. */
interface BoundedCopy {
  copy: unknown;
  size: number;
  over: boolean;
}

/**
 * A deep copy of JSON data, counting its approximate JSON size (as jsonSizeWork does) while it
 * copies and giving up as soon as the size passes `budget`, so an oversized value costs at most
 * O(budget). Iterative, so a deeply nested value (copies can nest a document into itself again
 * and again) cannot overflow the stack.
 *
 * `nullPrototype`: objects without a prototype. `__proto__` is a valid ConfigMap data key; on a
 * plain object `obj["__proto__"] = v` (what fast-json-patch's add/replace do) sets the prototype
 * instead of the key, so the key was lost, and the library's guard refused such paths outright.
 * On null-prototype objects it is an ordinary key, and `/constructor/prototype/...` resolves to
 * nothing (no prototype to reach), so the guard is not needed. Without it the copy is made of
 * ordinary objects again, `__proto__` kept as an own key (defineProperty, as JSON.parse does).
 */
function* boundedCopyWork(value: unknown, budget: number, nullPrototype: boolean): Work<BoundedCopy> {
  const root: { v: unknown } = Object.create(null) as { v: unknown };
  // Each entry: a source value, and where its copy goes.
  const stack: Array<[unknown, Record<string, unknown> | unknown[], string | number]> = [[value, root as Record<string, unknown>, 'v']];
  let size = 0;
  let visited = 0;
  while (stack.length > 0) {
    const [v, parent, key] = stack.pop()!;
    let c: unknown = v;
    if (typeof v === 'string') size += v.length + 2;
    else if (typeof v === 'number') size += 8;
    else if (typeof v === 'boolean' || v === null || v === undefined) size += 5;
    else if (Array.isArray(v)) {
      size += 2 + v.length;
      const a: unknown[] = new Array(v.length);
      for (let i = v.length - 1; i >= 0; i--) stack.push([v[i], a, i]);
      c = a;
    } else if (typeof v === 'object') {
      const o = (nullPrototype ? Object.create(null) : {}) as Record<string, unknown>;
      const src = v as Record<string, unknown>;
      // Keys, not entries: entries of a 100,000-key map are as many arrays made at once.
      const keys = Object.keys(src);
      for (let i = keys.length - 1; i >= 0; i--) {
        const k = keys[i]!;
        size += k.length + 4;
        stack.push([src[k], o, k]);
      }
      size += 2;
      c = o;
    }
    if (Array.isArray(parent)) parent[key as number] = c;
    else if (key === '__proto__' && Object.getPrototypeOf(parent) !== null) Object.defineProperty(parent, key, { value: c, enumerable: true, writable: true, configurable: true });
    else parent[key as string] = c;
    if (size > budget) return { copy: undefined, size, over: true };
    if ((++visited & YIELD_MASK) === YIELD_MASK) yield;
  }
  return { copy: root.v, size, over: false };
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
  checkPaths(op, index, document, existingPathFragment);
}

/** checkOperation without the shape check: for the adds this module makes of copies. */
function checkPaths(op: Operation, index: number, document: unknown, existingPathFragment: string): void {
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

/**
 * jsonSizeWithin as work that yields every few hundred values (src/registry/apply/work.ts).
 * `known` gives the size of a container already measured (a shared value's remembered size,
 * patch-sharing.ts), counted without walking it again.
 */
function* jsonSizeWork(value: unknown, budget: number, known?: (container: object) => number | undefined): Work<number> {
  let size = 0;
  let visited = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === 'string') size += v.length + 2;
    else if (typeof v === 'number') size += 8;
    else if (typeof v === 'boolean' || v === null || v === undefined) size += 5;
    else if (typeof v === 'object') {
      const remembered = known?.(v);
      if (remembered !== undefined) size += remembered;
      else if (Array.isArray(v)) {
        size += 2 + v.length;
        for (const x of v) stack.push(x);
      } else {
        // Keys, not entries: entries of a 100,000-key map are as many arrays made at once.
        const o = v as Record<string, unknown>;
        for (const k of Object.keys(o)) {
          size += k.length + 4;
          stack.push(o[k]);
        }
        size += 2;
      }
    }
    if (size > budget) return size;
    if ((++visited & YIELD_MASK) === YIELD_MASK) yield;
  }
  return size;
}

/**
 * The size of a value in the shared document (or some number over `budget`), remembered when it
 * fits, so a value made of earlier copies costs the walk of what is new in it.
 */
function* sharedSizeWork(shared: SharedDocument, value: unknown, budget: number): Work<number> {
  const size = yield* jsonSizeWork(value, budget, shared.knownSize);
  if (size <= budget) shared.rememberSize(value, size);
  return size;
}

const YIELD_AFTER_MS = 5;

/** Whether two JSON values are equal (objects whatever their key order or prototype), as work that yields. */
function* sameJSONWork(a: unknown, b: unknown): Work<boolean> {
  const stack: Array<[unknown, unknown]> = [[a, b]];
  let visited = 0;
  while (stack.length > 0) {
    const [x, y] = stack.pop()!;
    if (x === y) continue;
    if (x === null || y === null || typeof x !== 'object' || typeof y !== 'object') return false;
    if (Array.isArray(x) !== Array.isArray(y)) return false;
    if (Array.isArray(x)) {
      const ys = y as unknown[];
      if (x.length !== ys.length) return false;
      for (let i = 0; i < x.length; i++) stack.push([x[i], ys[i]]);
    } else {
      const xo = x as Record<string, unknown>;
      const yo = y as Record<string, unknown>;
      const keys = Object.keys(xo);
      if (keys.length !== Object.keys(yo).length) return false;
      for (const k of keys) {
        if (!Object.hasOwn(yo, k)) return false;
        stack.push([xo[k], yo[k]]);
      }
    }
    if ((++visited & YIELD_MASK) === YIELD_MASK) yield;
  }
  return true;
}

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
  // The stored object is shared, never changed: operations copy what they write to (patch-sharing.ts).
  const shared = new SharedDocument(doc);
  // The stored managedFields are the server's, not the patch's: not counted while the patch leaves
  // them as they are (countedPart). Not remembered either: the root's remembered size must be its whole size.
  const base = await inSlices(jsonSizeWork(countedPart(doc, doc), Infinity, shared.knownSize));
  // Operations hand their values to the document, which later operations change: every
  // application (a conflict retries it) starts from a fresh copy of the patch's values.
  const ops: Operation[] = [];
  for (const op of patch) ops.push('value' in op ? ({ ...op, value: (await inSlices(boundedCopyWork(op.value, Infinity, true))).copy } as Operation) : { ...op });
  let copied = 0;
  // Give other requests the event loop between operations once this one has had it for a
  // while (each walk also yields within itself), so a heavy patch delays nobody else by much.
  let slice = performance.now();
  for (let index = 0; index < ops.length; index++) {
    const op = ops[index]!;
    if (performance.now() - slice > YIELD_AFTER_MS) {
      await nextTurn();
      slice = performance.now();
    }
    if (op.op === 'move' && op.path.startsWith(`${op.from}/`)) {
      throw status.patchInvalid(`${describe(op, index)}: a value cannot be moved into one of its own children`);
    }
    let applied = op;
    let check = checkOperation;
    if (op.op === 'copy') {
      const value = valueAt(shared.root, op.from);
      if (value === undefined) throw status.patchInvalid(`${describe(op, index)}: the "from" path does not exist in the object`);
      // A copy is an add of the value at "from" (RFC 6902 4.5), the value itself, shared. It adds
      // its bytes to the document: counted against what the limit still allows, stopping as soon
      // as it passes it, before anything is built.
      shared.share(value);
      const size = await inSlices(sharedSizeWork(shared, value, limitBytes - base - copied));
      if (size > limitBytes - base - copied) throw status.patchTooLarge(limitBytes, describe(op, index));
      copied += size;
      applied = { op: 'add', path: op.path, value };
      // Our own add of a value taken from the document: its shape needs no check, and the
      // library's check walks the whole value (for undefined) once more.
      check = checkPaths;
    }
    if (op.op === 'test') {
      // Ours, not the library's: its comparison calls hasOwnProperty on the patch's value, which
      // has no prototype (boundedCopyWork), so any test of an object failed.
      const at = valueAt(shared.root, op.path);
      if (at === undefined || !(await inSlices(sameJSONWork(at, (op as { value: unknown }).value)))) throw status.patchInvalid(`${describe(op, index)}: the test failed: the value at the path differs`);
      continue;
    }
    // Every container the library walks through or changes must be the document's own clone.
    if (op.op === 'move') shared.own(op.from);
    shared.own(op.path);
    try {
      // banPrototypeModifications off: the containers walked have no prototypes (patch-sharing.ts).
      shared.root = applyOperation(shared.root, applied, check as never, true, false, index).newDocument;
    } catch (e) {
      if (e instanceof status.StatusError) throw e;
      throw status.patchInvalid(explain(e, op, index));
    }
  }
  // The result must fit the limit (shared values counted by their remembered size), then becomes
  // ordinary objects in one pass: nothing is built for a result that does not fit. managedFields
  // left as stored are neither counted nor copied: the result keeps the stored array, as a merge
  // patch's result does.
  await checkPatchedSizeInSlices(shared.root, limitBytes, doc, shared);
  const result = await inSlices(boundedCopyWork(countedPart(shared.root, doc), limitBytes, false));
  if (result.over) throw status.patchTooLarge(limitBytes, 'the patched object');
  const kept = keptManagedFields(shared.root, doc);
  if (kept !== undefined) (result.copy as { metadata: Record<string, unknown> }).metadata.managedFields = kept;
  return result.copy;
}

/**
 * Every patch's result must still fit the body limit (it is what gets stored); in slices.
 * managedFields the patch left as stored (the very array of `current`: merge and strategic merge
 * patches keep untouched members by reference, a JSON patch clones only what it writes to,
 * patch-sharing.ts) are not counted: the server writes them, not the client, and for a list near
 * the limit they are as large as the list itself, so counting them refused every later patch of
 * an object the server had just stored, even a repeat of the patch that stored it
 * (test/unit/patched-size.test.ts). `shared`: a JSON patch's document, whose shared values'
 * sizes are remembered.
 */
export async function checkPatchedSizeInSlices(document: unknown, limitBytes: number, current?: unknown, shared?: SharedDocument): Promise<unknown> {
  if ((await inSlices(jsonSizeWork(countedPart(document, current), limitBytes, shared?.knownSize))) > limitBytes) throw status.patchTooLarge(limitBytes, 'the patched object');
  return document;
}

/** `document.metadata.managedFields` when it is still `current`'s array (the patch left it as stored). */
function keptManagedFields(document: unknown, current: unknown): unknown[] | undefined {
  const meta = (document as { metadata?: Record<string, unknown> } | null)?.metadata;
  const before = (current as { metadata?: Record<string, unknown> } | null)?.metadata;
  if (!meta || typeof meta !== 'object' || !before || typeof before !== 'object') return undefined;
  const kept = meta.managedFields;
  return Array.isArray(kept) && kept === before.managedFields ? kept : undefined;
}

/**
 * What of a patch's result counts against the limit: the result with managedFields left as stored
 * replaced by an empty list, in their place (so a copy of it keeps metadata's key order).
 */
function countedPart(document: unknown, current: unknown): unknown {
  if (keptManagedFields(document, current) === undefined) return document;
  const { metadata } = document as { metadata: Record<string, unknown> };
  return { ...(document as Record<string, unknown>), metadata: { ...metadata, managedFields: [] } };
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
