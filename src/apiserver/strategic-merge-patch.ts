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

type Obj = Record<string, unknown>;

const isMap = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);


const join = (path: string, key: string) => (path ? `${path}.${key}` : key);

/** Applies `patch` to `original`; `mergeKeys` maps dotted list paths to their merge key. Never mutates its inputs. */
export function strategicMergePatch(original: unknown, patch: unknown, mergeKeys: Record<string, string>): unknown {
  if (!isMap(patch)) throw status.patchInvalid('a strategic merge patch must be a JSON object');
  return mergeMap(isMap(original) ? original : {}, patch, '', mergeKeys) ?? {};
}

function stripDirectives(v: unknown): unknown {
  if (Array.isArray(v)) return v.filter((x) => !(isMap(x) && x.$patch !== undefined && Object.keys(x).length === 1)).map(stripDirectives);
  if (!isMap(v)) return v;
  const out: Obj = {};
  for (const [k, x] of Object.entries(v)) if (!k.startsWith('$')) out[k] = stripDirectives(x);
  return out;
}

function mergeMap(original: Obj, patch: Obj, path: string, keys: Record<string, string>): Obj | undefined {
  const directive = patch.$patch;
  if (directive === 'delete') return undefined;
  if (directive === 'replace') return stripDirectives(patch) as Obj;
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
      const merged = mergeMap(isMap(out[k]) ? (out[k] as Obj) : {}, v, join(path, k), keys);
      if (merged === undefined) delete out[k];
      else out[k] = merged;
    } else if (Array.isArray(v)) out[k] = mergeList(out[k], v, join(path, k), keys);
    else out[k] = v;
  }
  for (const [field, gone] of deletions) {
    if (Array.isArray(out[field])) out[field] = (out[field] as unknown[]).filter((x) => !gone.some((g) => g === x));
  }
  for (const [field, order] of orders) if (Array.isArray(out[field])) out[field] = reorder(out[field] as unknown[], order, keys[join(path, field)]);
  if (Array.isArray(patch.$retainKeys)) {
    const keep = new Set(patch.$retainKeys.map(String));
    for (const k of Object.keys(out)) if (!keep.has(k)) delete out[k];
  }
  return out;
}

function mergeList(original: unknown, patch: unknown[], path: string, keys: Record<string, string>): unknown[] {
  const key = keys[path];
  if (key === undefined) return stripDirectives(patch) as unknown[];
  if (patch.some((x) => isMap(x) && x.$patch === 'replace')) return stripDirectives(patch) as unknown[];
  const out = Array.isArray(original) ? [...original] : [];
  if (key === '') {
    for (const x of patch) if (!out.some((o) => o === x)) out.push(x);
    return out;
  }
  for (const item of patch) {
    if (!isMap(item)) throw status.patchInvalid(`${path}: elements must be objects with the merge key "${key}"`);
    if (!(key in item)) throw status.patchInvalid(`${path}: an element has no merge key "${key}"`);
    const i = out.findIndex((o) => isMap(o) && o[key] === item[key]);
    if (item.$patch === 'delete') {
      if (i >= 0) out.splice(i, 1);
      continue;
    }
    if (i >= 0) {
      const merged = mergeMap(out[i] as Obj, item, path, keys);
      if (merged === undefined) out.splice(i, 1);
      else out[i] = merged;
    } else out.push(stripDirectives(item));
  }
  return out;
}

/** `$setElementOrder`: the listed elements first, in that order; the others after, as they were. */
function reorder(list: unknown[], order: unknown[], key: string | undefined): unknown[] {
  const id = (x: unknown) => (key && isMap(x) ? x[key] : x);
  const wanted = order.map((o) => (key && isMap(o) ? o[key] : o));
  const ordered: unknown[] = [];
  for (const w of wanted) {
    const hit = list.find((x) => id(x) === w);
    if (hit !== undefined && !ordered.includes(hit)) ordered.push(hit);
  }
  return [...ordered, ...list.filter((x) => !ordered.includes(x))];
}
