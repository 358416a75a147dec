// Strategic merge patch (application/strategic-merge-patch+json) for the built-in kinds the sandbox
// serves: kubectl edit and client-side kubectl apply send one for every kind compiled into kubectl
// (ConfigMap, Secret, Deployment, ...), so a sandbox without it could not be edited.
//
// Maps merge as in a JSON merge patch (null deletes a key). Lists are replaced unless the kind
// declares a merge key for them (ResourceDefinition.strategicMerge): then elements merge by that key,
// `{"$patch": "delete", <key>: v}` removes one and `{"$patch": "replace"}` replaces the list; a
// list of scalars declared with '' merges as a set. Directives: `$patch` (replace, delete, merge),
// `$retainKeys`, `$deleteFromPrimitiveList/<field>`, `$setElementOrder/<field>`.
import * as status from '../api/status.js';
import { type Work, YIELD_MASK, finish } from '../registry/apply/work.js';

type Obj = Record<string, unknown>;

const isMap = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);


const join = (path: string, key: string) => (path ? `${path}.${key}` : key);

/** Applies `patch` to `original`; `mergeKeys` maps dotted list paths to their merge key. Never mutates its inputs. */
export function strategicMergePatch(original: unknown, patch: unknown, mergeKeys: Record<string, string>): unknown {
  return finish(strategicMergePatchWork(original, patch, mergeKeys));
}

/** strategicMergePatch as work that yields every few hundred list items (src/registry/apply/work.ts). */
export function* strategicMergePatchWork(original: unknown, patch: unknown, mergeKeys: Record<string, string>): Work<unknown> {
  if (!isMap(patch)) throw status.patchInvalid('a strategic merge patch must be a JSON object');
  return (yield* mergeMap(isMap(original) ? original : {}, patch, '', mergeKeys)) ?? {};
}

function* stripDirectives(v: unknown): Work<unknown> {
  if (Array.isArray(v)) {
    const out: unknown[] = [];
    for (let i = 0; i < v.length; i++) {
      if ((i & YIELD_MASK) === YIELD_MASK) yield;
      const x = v[i];
      if (!(isMap(x) && x.$patch !== undefined && Object.keys(x).length === 1)) out.push(yield* stripDirectives(x));
    }
    return out;
  }
  if (!isMap(v)) return v;
  const out: Obj = {};
  for (const [k, x] of Object.entries(v)) if (!k.startsWith('$')) out[k] = yield* stripDirectives(x);
  return out;
}

function* mergeMap(original: Obj, patch: Obj, path: string, keys: Record<string, string>): Work<Obj | undefined> {
  const directive = patch.$patch;
  if (directive === 'delete') return undefined;
  if (directive === 'replace') return (yield* stripDirectives(patch)) as Obj;
  if (directive !== undefined && directive !== 'merge') throw status.patchInvalid(`unknown patch directive "${String(directive)}" at ${path || 'the top level'}`);
  const out: Obj = { ...original };
  const deletions: Array<[string, unknown[]]> = [];
  const orders: Array<[string, unknown[]]> = [];
  for (const [k, v] of Object.entries(patch)) {
    if (k === '$patch' || k === '$retainKeys') continue;
    if (k.startsWith('$deleteFromPrimitiveList/')) {
      if (!Array.isArray(v)) throw status.patchInvalid(`${k} must be a list`);
      deletions.push([k.slice('$deleteFromPrimitiveList/'.length), v]);
      continue;
    }
    if (k.startsWith('$setElementOrder/')) {
      if (!Array.isArray(v)) throw status.patchInvalid(`${k} must be a list`);
      orders.push([k.slice('$setElementOrder/'.length), v]);
      continue;
    }
    if (k.startsWith('$')) throw status.patchInvalid(`unknown patch directive "${k}"`);
    if (v === null) delete out[k];
    else if (isMap(v)) {
      const merged = yield* mergeMap(isMap(out[k]) ? (out[k] as Obj) : {}, v, join(path, k), keys);
      if (merged === undefined) delete out[k];
      else out[k] = merged;
    } else if (Array.isArray(v)) out[k] = yield* mergeList(out[k], v, join(path, k), keys);
    else out[k] = v;
  }
  for (const [field, gone] of deletions) {
    if (!Array.isArray(out[field])) continue;
    const drop = new Set(gone);
    yield;
    out[field] = (out[field] as unknown[]).filter((x) => !drop.has(x));
    yield;
  }
  for (const [field, order] of orders) if (Array.isArray(out[field])) out[field] = yield* reorder(out[field] as unknown[], order, keys[join(path, field)]);
  if (Array.isArray(patch.$retainKeys)) {
    const keep = new Set(patch.$retainKeys.map(String));
    for (const k of Object.keys(out)) if (!keep.has(k)) delete out[k];
  }
  return out;
}

function* mergeList(original: unknown, patch: unknown[], path: string, keys: Record<string, string>): Work<unknown[]> {
  const key = keys[path];
  if (key === undefined) return (yield* stripDirectives(patch)) as unknown[];
  if (patch.some((x) => isMap(x) && x.$patch === 'replace')) return (yield* stripDirectives(patch)) as unknown[];
  const out = Array.isArray(original) ? [...original] : [];
  if (key === '') {
    // A set of scalars: one Set lookup per patch item (Set and === agree on JSON values).
    const present = new Set(out);
    for (let i = 0; i < patch.length; i++) {
      if ((i & YIELD_MASK) === YIELD_MASK) yield;
      const x = patch[i];
      if (present.has(x)) continue;
      out.push(x);
      present.add(x);
    }
    return out;
  }
  return yield* mergeByKey(out, patch, path, key, keys);
}

/**
 * Merges `patch` into `list` by `key`: each patch item merges into the first item with the same key
 * (or is appended), `$patch: delete` removes that first item. Removed items leave a hole until the
 * end and each key value keeps a queue of the slots that hold it, so every step is O(1) and a list
 * of n items costs O(n) (a search and a splice per item was O(n²)).
 */
function* mergeByKey(list: unknown[], patch: unknown[], path: string, key: string, keys: Record<string, string>): Work<unknown[]> {
  const HOLE = Symbol('removed');
  const slots: unknown[] = list;
  const byKey = new Map<unknown, { at: number[]; head: number }>();
  const track = (k: unknown, i: number) => {
    const q = byKey.get(k);
    if (q) q.at.push(i);
    else byKey.set(k, { at: [i], head: 0 });
  };
  slots.forEach((o, i) => {
    if (isMap(o) && o[key] !== undefined) track(o[key], i);
  });
  for (let n = 0; n < patch.length; n++) {
    if ((n & YIELD_MASK) === YIELD_MASK) yield;
    const item = patch[n];
    if (!isMap(item)) throw status.patchInvalid(`${path}: elements must be objects with the merge key "${key}"`);
    if (!(key in item)) throw status.patchInvalid(`${path}: an element has no merge key "${key}"`);
    const q = byKey.get(item[key]);
    const i = q && q.head < q.at.length ? q.at[q.head]! : -1;
    if (item.$patch === 'delete') {
      if (i >= 0) {
        slots[i] = HOLE;
        q!.head++;
      }
      continue;
    }
    if (i >= 0) {
      const merged = flatMerge(slots[i] as Obj, item) ?? (yield* mergeMap(slots[i] as Obj, item, path, keys));
      if (merged === undefined || merged[key] !== item[key]) q!.head++;
      slots[i] = merged === undefined ? HOLE : merged;
    } else {
      const added = (yield* stripDirectives(item)) as Obj;
      if (added[key] !== undefined) track(added[key], slots.length);
      slots.push(added);
    }
  }
  return slots.filter((x) => x !== HOLE);
}

/**
 * mergeMap of a patch item that holds only scalars and nulls under keys without `$` (an env entry,
 * a port): the item laid over a copy of the original, null deleting, exactly what mergeMap does
 * with such an item, without a generator and its bookkeeping per item (most of the time of a
 * 91,000-item merge). Undefined for any other item: mergeMap handles it.
 */
function flatMerge(original: Obj, item: Obj): Obj | undefined {
  for (const k in item) {
    if (!Object.hasOwn(item, k)) continue;
    const v = item[k];
    if (k.charCodeAt(0) === 0x24 /* $ */ || (v !== null && typeof v === 'object')) return undefined;
  }
  const out: Obj = { ...original };
  for (const k of Object.keys(item)) {
    const v = item[k];
    if (v === null) delete out[k];
    else out[k] = v;
  }
  return out;
}

/** `$setElementOrder`: the listed elements first, in that order; the others after, as they were. */
function* reorder(list: unknown[], order: unknown[], key: string | undefined): Work<unknown[]> {
  const id = (x: unknown) => (key && isMap(x) ? x[key] : x);
  // The first element of each identity, and the chosen ones as a Set: O(n) where a search per
  // listed element was O(n²). (Map, Set and === agree on JSON values.)
  const first = new Map<unknown, unknown>();
  for (let i = 0; i < list.length; i++) {
    if ((i & YIELD_MASK) === YIELD_MASK) yield;
    const x = list[i];
    if (!first.has(id(x))) first.set(id(x), x);
  }
  const ordered = new Set<unknown>();
  for (let i = 0; i < order.length; i++) {
    if ((i & YIELD_MASK) === YIELD_MASK) yield;
    const o = order[i];
    const hit = first.get(key && isMap(o) ? o[key] : o);
    if (hit !== undefined) ordered.add(hit);
  }
  const rest = list.filter((x) => !ordered.has(x));
  yield;
  return [...ordered, ...rest];
}
