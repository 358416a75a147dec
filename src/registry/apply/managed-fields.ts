// metadata.managedFields ⇄ field sets per manager, after k8s.io/apimachinery's managedfields
// package. A manager is identified by (manager, operation, apiVersion for Update, subresource);
// an Apply entry keeps its apiVersion but is one manager across versions. Entries are written
// sorted (Apply before Update, then by time, manager, apiVersion, subresource) as kube does.
import { FieldSet } from './fieldset.js';
import { fromFieldsV1Work } from './fieldsv1-decode.js';
import { goJSON } from './path.js';
import { type Work, finish } from './work.js';

export type Operation = 'Apply' | 'Update';

export interface ManagerEntry {
  manager: string;
  operation: Operation;
  apiVersion: string;
  subresource: string;
  /** RFC 3339, seconds; absent when kube would leave it nil (a no-op apply by a new manager). */
  time?: string;
  set: FieldSet;
}

/** Manager identity → its entry. Map order is irrelevant: encoding sorts. */
export type Managed = Map<string, ManagerEntry>;

/** The identifier apimachinery builds (the JSON of the entry without time, fields and, for Apply, apiVersion). */
export function managerId(manager: string, operation: Operation, apiVersion: string, subresource: string): string {
  let s = `{"manager":${goJSON(manager)},"operation":${goJSON(operation)}`;
  if (operation === 'Update' && apiVersion) s += `,"apiVersion":${goJSON(apiVersion)}`;
  if (subresource) s += `,"subresource":${goJSON(subresource)}`;
  return `${s}}`;
}

/** How a conflict names a manager (printManager): `"mgr"`, `"mgr" with subresource "status" using g/v`. */
export function printManager(e: ManagerEntry): string {
  let s = JSON.stringify(e.manager);
  if (e.subresource) s += ` with subresource ${JSON.stringify(e.subresource)}`;
  if (e.operation === 'Update') s += ` using ${e.apiVersion}`;
  return s;
}

/** Decodes managedFields; throws on an entry kube would refuse (bad operation, no apiVersion, bad fieldsV1). */
export function decodeManagedFields(entries: unknown): Managed {
  return finish(decodeManagedFieldsWork(entries));
}

/**
 * The stored fieldsV1 a set was decoded from. A set is never changed once built (fieldset.ts), so
 * an entry whose set is still the decoded one encodes to that same JSON: encoding reuses it instead
 * of rebuilding an object of 136,000 keys for a 3 MiB list (the status write after a server-side
 * apply spent most of its time there). Only stored managedFields are remembered (what this module
 * encoded, so canonical); a client's are encoded anew, as kube re-encodes them.
 */
const storedFieldsV1 = new WeakMap<FieldSet, Record<string, unknown>>();

/**
 * The other way: the set a stored fieldsV1 object encodes. The embedded store hands out the object
 * it holds, so the write after a server-side apply (the controller's status write) decodes the
 * 136,000 keys it just encoded unless the set is looked up by the fieldsV1 object itself.
 */
const setOfFieldsV1 = new WeakMap<object, FieldSet>();

/**
 * decodeManagedFields in slices: a stored entry may own every item of a 3 MiB list. `stored`: the
 * entries are the stored object's (see storedFieldsV1).
 */
export function* decodeManagedFieldsWork(entries: unknown, stored = false): Work<Managed> {
  const out: Managed = new Map();
  if (entries === undefined || entries === null) return out;
  if (!Array.isArray(entries)) throw new Error('managedFields must be a list');
  for (let i = 0; i < entries.length; i++) {
    const e = (entries[i] ?? {}) as Record<string, unknown>;
    if (e.operation !== 'Apply' && e.operation !== 'Update') throw new Error('operation must be `Apply` or `Update`');
    if (typeof e.apiVersion !== 'string' || e.apiVersion === '') throw new Error('apiVersion must not be empty');
    if (e.fieldsType === undefined || e.fieldsType === '') throw new Error(`missing fieldsType in managed fields entry ${i}`);
    if (e.fieldsType !== 'FieldsV1') throw new Error(`invalid fieldsType ${JSON.stringify(e.fieldsType)} in managed fields entry ${i}`);
    const manager = typeof e.manager === 'string' ? e.manager : '';
    const subresource = typeof e.subresource === 'string' ? e.subresource : '';
    const fieldsV1 = e.fieldsV1;
    const known = stored && fieldsV1 !== null && typeof fieldsV1 === 'object' ? setOfFieldsV1.get(fieldsV1) : undefined;
    const entry: ManagerEntry = {
      manager,
      operation: e.operation,
      apiVersion: e.apiVersion,
      subresource,
      set: known ?? (fieldsV1 === undefined || fieldsV1 === null ? new FieldSet() : yield* fromFieldsV1Work(fieldsV1)),
    };
    if (typeof e.time === 'string' && e.time !== '') entry.time = e.time;
    if (stored && fieldsV1 !== null && typeof fieldsV1 === 'object') {
      storedFieldsV1.set(entry.set, fieldsV1 as Record<string, unknown>);
      setOfFieldsV1.set(fieldsV1, entry.set);
    }
    out.set(managerId(manager, e.operation, e.apiVersion, subresource), entry);
  }
  return out;
}

/**
 * `managedFields: [{}]` in a request resets ownership. An empty list does not (so a client that
 * does not know the field cannot strip it): for custom resources kube drops `[]` while decoding
 * metadata, and we behave as it does.
 */
export function isResetRequest(entries: unknown): boolean {
  if (!Array.isArray(entries)) return false;
  if (entries.length === 1) {
    const e = entries[0];
    return e !== null && typeof e === 'object' && Object.values(e as object).every((v) => v === undefined || v === '' || v === null);
  }
  return false;
}

function seconds(t: string | undefined): number {
  if (!t) return 0;
  const ms = Date.parse(t);
  return Number.isNaN(ms) ? 0 : Math.floor(ms / 1000);
}

const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** managedFields as stored: undefined when no manager owns anything. */
export function encodeManagedFields(managed: Managed): Record<string, unknown>[] | undefined {
  return finish(encodeManagedFieldsWork(managed));
}

export function* encodeManagedFieldsWork(managed: Managed): Work<Record<string, unknown>[] | undefined> {
  const entries = [...managed.values()].filter((e) => !e.set.empty());
  if (entries.length === 0) return undefined;
  entries.sort(
    (p, q) =>
      cmp(p.operation, q.operation) ||
      seconds(p.time) - seconds(q.time) ||
      cmp(p.manager, q.manager) ||
      cmp(p.apiVersion, q.apiVersion) ||
      cmp(p.subresource, q.subresource),
  );
  const encoded: Record<string, unknown>[] = [];
  for (const e of entries) {
    const out: Record<string, unknown> = { manager: e.manager, operation: e.operation, apiVersion: e.apiVersion };
    if (e.time) out.time = e.time;
    out.fieldsType = 'FieldsV1';
    let fieldsV1 = storedFieldsV1.get(e.set);
    if (!fieldsV1) {
      fieldsV1 = yield* e.set.toFieldsV1Work();
      storedFieldsV1.set(e.set, fieldsV1);
      setOfFieldsV1.set(fieldsV1, e.set);
    }
    out.fieldsV1 = fieldsV1;
    if (e.subresource) out.subresource = e.subresource;
    encoded.push(out);
  }
  return encoded;
}

export const MAX_UPDATE_MANAGERS = 10;
const ANCIENT_CHANGES = 'ancient-changes';

/**
 * Keeps at most ten Update managers: the oldest are folded into one `ancient-changes` entry per
 * apiVersion, so an object written by many controllers does not grow without bound.
 */
export function capUpdateManagers(managed: Managed): void {
  const updaters = [...managed.entries()].filter(([, e]) => e.operation === 'Update');
  if (updaters.length <= MAX_UPDATE_MANAGERS) return;
  updaters.sort(([ia, a], [ib, b]) => seconds(a.time) - seconds(b.time) || cmp(ia, ib));
  const firstOfVersion = new Map<string, string>();
  let length = updaters.length;
  for (const [id, e] of updaters) {
    if (length <= MAX_UPDATE_MANAGERS) break;
    const bucket = managerId(ANCIENT_CHANGES, 'Update', e.apiVersion, '');
    const first = firstOfVersion.get(e.apiVersion);
    if (first === undefined) {
      firstOfVersion.set(e.apiVersion, id);
      continue;
    }
    if (!managed.has(bucket)) {
      const f = managed.get(first)!;
      managed.delete(first);
      managed.set(bucket, { ...f, manager: ANCIENT_CHANGES, subresource: '' });
    }
    const b = managed.get(bucket)!;
    managed.set(bucket, { ...b, set: b.set.union(e.set), time: e.time });
    managed.delete(id);
    length--;
  }
}
