// The field manager of one resource: what k8s.io/apiserver's FieldManager chain does around the
// structured merge (version check, managedFields decoding, "before-first-apply", kubectl's
// client-side → server-side migration, metadata stripping, timestamps, the Update-manager cap),
// reduced to two calls the registry makes: update() on every create/update/patch and apply() for
// application/apply-patch+yaml.
import type { TSchema } from '@sinclair/typebox';
import * as status from '../../api/status.js';
import type { KubeObject } from '../../storage/types.js';
import { clone, nowTimestamp } from '../metadata.js';
import { FieldSet } from './fieldset.js';
import {
  type Managed,
  type ManagerEntry,
  capUpdateManagers,
  decodeManagedFieldsWork,
  encodeManagedFieldsWork,
  isResetRequest,
  managerId,
  printManager,
} from './managed-fields.js';
import { type Path, field, goJSON, pathString } from './path.js';
import { type Shape, isPlainObject, shapeOf } from './schema.js';
import { ApplyValueError, setOwn, toFieldSet } from './typed.js';
import { compare } from './compare.js';
import { type Work, YIELD_MASK, cloneWork, deepEqualWork, finish, inSlices } from './work.js';
import { type Conflict, ConflictsError, applyOwnership, updateOwnership } from './updater.js';

export const LAST_APPLIED_ANNOTATION = 'kubectl.kubernetes.io/last-applied-configuration';
/** The manager kubectl's server-side apply uses by default; only it gets the migration help. */
const KUBECTL_SSA_MANAGER = 'kubectl';
const BEFORE_FIRST_APPLY = 'before-first-apply';
const SELF = '\u0000current-operation';

const p = (...names: string[]): Path => names.map(field);

// Server-populated metadata is never owned by anyone (apimachinery stripmeta.go).
const STRIPPED = FieldSet.of(
  p('apiVersion'),
  p('kind'),
  p('metadata'),
  ...['name', 'namespace', 'creationTimestamp', 'selfLink', 'uid', 'clusterName', 'generation', 'managedFields', 'resourceVersion'].map((n) => p('metadata', n)),
);

export interface ApplyResult {
  /** The merged object (not yet validated or defaulted), managedFields set. */
  object: KubeObject;
  warnings: string[];
}

export class FieldManager {
  readonly shape: Shape;
  private readonly resetMain: FieldSet;
  private readonly resetStatus: FieldSet;

  constructor(
    schema: TSchema,
    readonly apiVersion: string,
    readonly kind: string,
    private readonly gr: status.GroupResource & { kind: string },
    /** Top-level fields the status subresource owns (the strategy's); [] when there is none. */
    statusFields: readonly string[] = ['status'],
  ) {
    this.shape = shapeOf(schema);
    // Writes to the main resource never own the status fields; a /status write owns nothing but
    // them (the reset fields of kube's resource strategies).
    this.resetMain = FieldSet.of(...statusFields.map((f) => p(f)));
    const top = this.shape.kind === 'map' ? [...this.shape.fields.keys()] : [];
    this.resetStatus = FieldSet.of(...[...new Set(['apiVersion', 'kind', 'metadata', 'spec', ...top])].filter((f) => !statusFields.includes(f)).map((f) => p(f)));
  }

  private reset(subresource: string): FieldSet {
    return subresource === 'status' ? this.resetStatus : this.resetMain;
  }

  private *decodeOrEmpty(entries: unknown, stored = false): Work<Managed> {
    try {
      return yield* decodeManagedFieldsWork(entries, stored);
    } catch {
      return new Map();
    }
  }

  /**
   * Records an update by `manager`: the fields it changed become its own (and no one else's).
   * `requestManaged` is metadata.managedFields as the client sent it: on the main resource a valid,
   * non-empty value replaces the stored one (how kubectl migrates client-side apply), `[{}]` resets.
   */
  update(live: KubeObject | undefined, next: KubeObject, requestManaged: unknown, manager: string, subresource: string): void {
    finish(this.updateWork(live, next, requestManaged, manager, subresource));
  }

  /** update() a few milliseconds at a time, giving the event loop to other requests in between (src/registry/apply/work.ts). */
  updateInSlices(live: KubeObject | undefined, next: KubeObject, requestManaged: unknown, manager: string, subresource: string): Promise<void> {
    return inSlices(this.updateWork(live, next, requestManaged, manager, subresource));
  }

  private *updateWork(live: KubeObject | undefined, next: KubeObject, requestManaged: unknown, manager: string, subresource: string): Work<void> {
    let managed: Managed;
    if (!live) managed = new Map();
    else if (subresource) managed = yield* this.decodeOrEmpty(live.metadata.managedFields, true);
    else if (isResetRequest(requestManaged)) managed = new Map();
    else {
      managed = yield* this.decodeOrEmpty(requestManaged);
      if (managed.size === 0) managed = yield* this.decodeOrEmpty(live.metadata.managedFields, true);
    }
    // An existing object nobody tracks stays untracked until someone applies (skipnonapplied.go).
    if (live && managed.size === 0) {
      delete next.metadata.managedFields;
      return;
    }
    yield* this.recordUpdate(live ? withoutManaged(live) : undefined, withoutManaged(next), managed, manager || 'unknown', subresource);
    capUpdateManagers(managed);
    yield* setManaged(next, managed);
  }

  private *recordUpdate(live: unknown, next: unknown, managed: Managed, manager: string, subresource: string): Work<void> {
    const changed = (yield* updateOwnership(live, next, this.shape, managed, SELF, this.reset(subresource))).difference(STRIPPED);
    managed.delete(SELF);
    if (changed.empty()) return;
    const id = managerId(manager, 'Update', this.apiVersion, subresource);
    const prev = managed.get(id);
    managed.set(id, {
      manager,
      operation: 'Update',
      apiVersion: this.apiVersion,
      subresource,
      time: nowTimestamp(),
      set: prev ? changed.union(prev.set) : changed,
    });
  }

  /**
   * Server-side apply of `config` by `manager` onto `live` (undefined: the object is created).
   * Throws 400 for a config of another kind or carrying managedFields, 409 for conflicts (unless
   * `force`), 422 for list items the merge cannot place.
   */
  apply(live: KubeObject | undefined, config: unknown, manager: string, force: boolean, subresource: string, name: string): ApplyResult {
    return finish(this.applyWork(live, config, manager, force, subresource, name));
  }

  /** apply() a few milliseconds at a time, giving the event loop to other requests in between. */
  applyInSlices(live: KubeObject | undefined, config: unknown, manager: string, force: boolean, subresource: string, name: string): Promise<ApplyResult> {
    return inSlices(this.applyWork(live, config, manager, force, subresource, name));
  }

  private *applyWork(live: KubeObject | undefined, config: unknown, manager: string, force: boolean, subresource: string, name: string): Work<ApplyResult> {
    if (!isPlainObject(config)) throw status.badRequest('the apply configuration must be a YAML or JSON object');
    if (config.apiVersion !== this.apiVersion || config.kind !== this.kind) {
      const gv = typeof config.apiVersion === 'string' ? config.apiVersion : '';
      const gvk = `${gv.includes('/') ? gv : `/${gv}`}, Kind=${typeof config.kind === 'string' ? config.kind : ''}`;
      throw status.badRequest(`invalid object type: ${gvk}`);
    }
    const meta = config.metadata;
    if (isPlainObject(meta) && meta.managedFields !== undefined && meta.managedFields !== null) {
      throw status.badRequest('metadata.managedFields must be nil');
    }
    const liveValue: KubeObject = live ? withoutManaged(live) : ({ apiVersion: this.apiVersion, kind: this.kind, metadata: {} } as KubeObject);
    const managed = yield* this.decodeOrEmpty(live?.metadata.managedFields, true);
    if (live && managed.size === 0) {
      // Fields that predate any tracking are owned by "before-first-apply", so an applier's
      // change to them is a conflict instead of a silent takeover.
      yield* this.recordUpdate({ apiVersion: this.apiVersion, kind: this.kind }, liveValue, managed, BEFORE_FIRST_APPLY, subresource);
    }
    const id = managerId(manager, 'Apply', this.apiVersion, subresource);
    const self = this;
    function* attempt(forced: boolean): Work<{ object: KubeObject; managed: Managed }> {
      const m: Managed = new Map(managed);
      const entry: Omit<ManagerEntry, 'set'> = { manager, operation: 'Apply', apiVersion: self.apiVersion, subresource, time: managed.get(id)?.time };
      const out = yield* self.wrap(name, applyOwnership(liveValue, config as Record<string, unknown>, self.shape, m, id, entry, forced, self.reset(subresource), live === undefined));
      const mine = m.get(id);
      if (mine) {
        let set = mine.set.difference(STRIPPED);
        // An apply that owns what it owned before keeps the stored set, whose fieldsV1 is then
        // written as stored (managed-fields.ts storedFieldsV1) instead of encoded again: an object
        // of 136,000 keys for a re-applied 3 MiB list, 50-100 ms of CPU and its garbage.
        const before = managed.get(id)?.set;
        if (before && set.equals(before)) set = before;
        if (set.empty()) m.delete(id);
        else m.set(id, { ...mine, set, time: out.object !== undefined ? nowTimestamp() : mine.time });
      }
      // A copy in slices: structuredClone of a live 3 MiB list held the event loop 50-60 ms (a re-apply that changes nothing).
      const object = (out.object === undefined ? yield* cloneWork(liveValue) : yield* dropNulls(out.object)) as KubeObject;
      return { object, managed: m };
    }
    let result: { object: KubeObject; managed: Managed };
    try {
      result = yield* attempt(force);
    } catch (e) {
      if (!(e instanceof ConflictsError)) throw e;
      // kubectl taking over from client-side apply: conflicts on fields whose live value is still
      // what the last-applied annotation says are forced (lastappliedmanager.go).
      const allowed = manager === KUBECTL_SSA_MANAGER ? this.allowedFromLastApplied(liveValue) : undefined;
      if (!allowed) throw conflictError(e.conflicts);
      const remaining = e.conflicts.filter((c) => !allowed.has(c.path));
      if (remaining.length) throw conflictError(remaining);
      result = yield* attempt(true);
    }
    const object = result.object;
    if (manager === KUBECTL_SSA_MANAGER && object.metadata?.annotations?.[LAST_APPLIED_ANNOTATION]) {
      object.metadata.annotations[LAST_APPLIED_ANNOTATION] = lastAppliedOf(config);
    }
    yield* setManaged(object, result.managed);
    return { object, warnings: [] };
  }

  private allowedFromLastApplied(live: KubeObject): FieldSet | undefined {
    const raw = live.metadata.annotations?.[LAST_APPLIED_ANNOTATION];
    if (!raw) return undefined;
    try {
      const last = JSON.parse(raw) as unknown;
      if (!isPlainObject(last) || last.apiVersion !== this.apiVersion) return undefined;
      const c = compare(last, live, this.shape);
      return toFieldSet(last, this.shape).difference(c.modified).difference(c.added).difference(c.removed);
    } catch {
      return undefined;
    }
  }

  private *wrap<T>(name: string, work: Work<T>): Work<T> {
    try {
      return yield* work;
    } catch (e) {
      if (e instanceof ApplyValueError) {
        const type = e.reason === 'Duplicate' ? 'FieldValueDuplicate' : 'FieldValueInvalid';
        throw status.invalid(this.gr, name, [
          { type, field: e.path.replace(/^\./, ''), value: e.value, detail: e.reason === 'Duplicate' ? undefined : e.message },
        ]);
      }
      throw e;
    }
  }
}

/**
 * An applied `null` means "owned, and absent": the field is dropped from the object, as kube's
 * decoding of the merged object drops nulls of non-nullable fields.
 */
function* dropNulls(v: unknown): Work<unknown> {
  if (Array.isArray(v)) {
    // Work that yields every few hundred items: the merged object may hold a 3 MiB list.
    const out: unknown[] = new Array(v.length);
    for (let i = 0; i < v.length; i++) {
      const x: unknown = v[i];
      out[i] = Array.isArray(x) || isPlainObject(x) ? yield* dropNulls(x) : x;
      if ((i & YIELD_MASK) === YIELD_MASK) yield;
    }
    return out;
  }
  if (!isPlainObject(v)) return v;
  const out: Record<string, unknown> = {};
  for (const [k, child] of Object.entries(v)) if (child !== null && child !== undefined) setOwn(out, k, yield* dropNulls(child));
  return out;
}

/** A shallow view without managedFields (the walkers treat undefined as absent and never mutate). */
function withoutManaged(o: KubeObject): KubeObject {
  if (!o.metadata) return o;
  const { managedFields: _m, ...metadata } = o.metadata;
  return { ...o, metadata } as KubeObject;
}

function* setManaged(obj: KubeObject, managed: Managed): Work<void> {
  const encoded = yield* encodeManagedFieldsWork(managed);
  if (encoded) obj.metadata.managedFields = encoded;
  else delete obj.metadata.managedFields;
}

/** The annotation kubectl keeps: the applied configuration without the annotation, as Go encodes it. */
function lastAppliedOf(config: Record<string, unknown>): string {
  const c = clone(config) as Record<string, any>;
  if (isPlainObject(c.metadata) && isPlainObject(c.metadata.annotations)) delete c.metadata.annotations[LAST_APPLIED_ANNOTATION];
  return `${goJSON(c)}\n`;
}

/** 409 as apimachinery phrases it (managedfields/internal/conflict.go). */
export function conflictError(conflicts: Conflict[]): status.StatusError {
  const causes = conflicts.map((c) => ({ reason: 'FieldManagerConflict', message: `conflict with ${printManager(c.manager)}`, field: pathString(c.path) }));
  if (conflicts.length === 1) {
    const c = conflicts[0]!;
    return status.applyConflict(`Apply failed with 1 conflict: conflict with ${printManager(c.manager)}: ${pathString(c.path)}`, causes);
  }
  const byManager = new Map<string, Conflict[]>();
  for (const c of conflicts) {
    const group = byManager.get(c.managerId);
    if (group) group.push(c);
    else byManager.set(c.managerId, [c]);
  }
  const lines: string[] = [];
  for (const id of [...byManager.keys()].sort()) {
    const group = byManager.get(id)!;
    lines.push(`conflicts with ${printManager(group[0]!.manager)}:`);
    for (const c of group) lines.push(`- ${pathString(c.path)}`);
  }
  return status.applyConflict(`Apply failed with ${conflicts.length} conflicts: ${lines.join('\n')}`, causes);
}

/** Whether two objects differ only in managedFields timestamps (then kube stores nothing). */
export function sameIgnoringManagedTimes(a: KubeObject, b: KubeObject): boolean {
  return finish(sameIgnoringManagedTimesWork(a, b));
}

/** sameIgnoringManagedTimes as work in slices (work.ts deepEqualWork): the objects may hold a 3 MiB list. */
export function sameIgnoringManagedTimesWork(a: KubeObject, b: KubeObject): Work<boolean> {
  const strip = (o: KubeObject) => ({
    ...o,
    metadata: { ...o.metadata, managedFields: (o.metadata.managedFields as Record<string, unknown>[] | undefined)?.map(({ time: _t, ...rest }) => rest) },
  });
  return deepEqualWork(strip(a), strip(b));
}
