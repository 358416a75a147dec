// The generic registry: Kubernetes object semantics (create, update, patch, apply, delete,
// finalizers, generation, dryRun, field validation) on top of a Store. One instance per resource;
// what differs between resources (server-set fields, field ownership of main resource and status,
// rules, side effects) comes from its strategy (strategy.ts). HTTP handlers and in-process
// controllers call the same methods, with a RequestContext naming who acts.
import { apiVersionOf, type ResourceDefinition } from '../api/definition.js';
import { compileSchema, type FieldValidation, type SchemaValidator } from '../api/validation.js';
import { finalizerErrors, newFinalizersError, validateObjectMeta } from '../api/object-meta.js';
import { type FieldError, invalidValue } from '../api/field-errors.js';
import * as status from '../api/status.js';
import type { KubeObject } from '../model/object.js';
import { type ListResult, type ObjectKey, type ResourceRef, type Store, type WatchCallbacks, type WatchHandle, StorageError } from '../storage/types.js';
import { clone, dropEmptyMaps, generateName, newUID, nowTimestamp, parseRV, specChanged, stampCluster } from './metadata.js';
import { FieldManager, sameIgnoringManagedTimesWork } from './apply/field-manager.js';
import { listTypeErrorsWork, sameScalarItems } from './apply/list-rules.js';
import { breathe, cloneInSlices, inSlices } from './apply/work.js';
import type { DeleteOptions, RequestContext, WriteOptions, WriteResult } from './context.js';
import { definitionStrategy, type ResourceStrategy } from './strategy.js';
import { pruneUnknown } from './apply/schema.js';
import { statusOfStorageError } from './storage-errors.js';
import { checkBody, pinsResourceVersion } from './body-checks.js';

export type { DeleteOptions, RequestContext, WriteOptions, WriteResult } from './context.js';

export interface RegistryOptions {
  /**
   * Refuses a namespaced create when its namespace does not exist or is being terminated (the
   * sandbox's namespaces, src/registry/namespaces.ts, or the hosting cluster's,
   * src/admission/namespace-lifecycle.ts); runs before validation, as kube-apiserver's
   * NamespaceLifecycle admission does. `name` is the object's name, else its generateName.
   */
  requireNamespace?(ctx: RequestContext, namespace: string, target: { gr: status.GroupResource; name: string }): Promise<void>;
}

const MAX_GENERATE_ATTEMPTS = 8;
const MAX_PATCH_RETRIES = 5;

export class Registry {
  readonly ref: ResourceRef;
  readonly gr: status.GroupResource & { kind: string };
  /** Per logical cluster or namespace: the tail of the creates running one at a time (strategy.serializeCreates). */
  private readonly createLocks = new Map<string, Promise<void>>();
  private readonly validator: SchemaValidator;
  /** managedFields bookkeeping and server-side apply (src/registry/apply/). */
  readonly fields: FieldManager;
  readonly apiVersion: string;

  constructor(
    readonly def: ResourceDefinition,
    private readonly store: Store,
    readonly strategy: ResourceStrategy = definitionStrategy(def),
    private readonly options: RegistryOptions = {},
  ) {
    this.ref = { group: def.group, resource: def.plural };
    this.gr = { group: def.group, resource: def.plural, kind: def.kind };
    this.apiVersion = apiVersionOf(def);
    this.validator = compileSchema(def.schema);
    this.fields = new FieldManager(def.schema, this.apiVersion, def.kind, this.gr, strategy.statusFields);
  }

  /** The schema validator, compiled ahead of the first write by Registries.compileValidators. */
  get schemaValidator(): SchemaValidator {
    return this.validator;
  }

  key(ctx: RequestContext, namespace: string, name: string): ObjectKey {
    return { cluster: ctx.cluster, namespace: this.def.namespaced ? namespace : '', name };
  }

  async get(ctx: RequestContext, namespace: string, name: string, consistency: 'consistent' | 'any' = 'consistent'): Promise<KubeObject> {
    const obj = await this.wrap(name, () => this.store.get(this.ref, this.key(ctx, namespace, name), { consistency }));
    if (!obj) throw status.notFound(this.gr, name);
    return obj;
  }

  list(cluster: string | undefined, namespace: string | undefined, consistency: 'consistent' | 'any' = 'consistent', atRV?: number): Promise<ListResult> {
    return this.wrap('', () => this.store.list(this.ref, { cluster, namespace: namespace || undefined, consistency, atRV }));
  }

  /**
   * Every change after `fromRV` (cluster undefined: every logical cluster; namespace ''/undefined:
   * every namespace). Rejects with a 410 Gone StatusError when fromRV is older than the retained log.
   */
  watch(cluster: string | undefined, namespace: string | undefined, fromRV: number, callbacks: WatchCallbacks): Promise<WatchHandle> {
    return this.wrap('', () => this.store.watch(this.ref, { cluster, namespace: namespace || undefined, fromRV }, callbacks));
  }

  /** Schema, metadata and resource rules (after the strategy prepared obj). Mutates obj (defaults, pruning). */
  private async validate(obj: KubeObject, old: KubeObject | undefined, mode: FieldValidation, requireName: boolean, subresource = ''): Promise<string[]> {
    const { errors, warnings } = await inSlices(this.validator.validateWork(obj as Record<string, unknown>, mode));
    // concat, not push(...): a list of 100,000 bad items is more arguments than a call may take.
    let errs: FieldError[] = errors.concat(validateObjectMeta(obj.metadata, { namespaced: this.def.namespaced, requireName, finalizers: false }));
    // Each step above is one slice; finalizers and list rules go a few milliseconds at a time.
    await new Promise<void>((resolve) => setImmediate(resolve));
    // An update that leaves the finalizers as they were (a status write) does not check them again:
    // they were checked when stored, and a 3 MiB list of them takes tens of milliseconds.
    if (!old || !sameScalarItems(obj.metadata.finalizers, old.metadata.finalizers)) await inSlices(finalizerErrors(obj.metadata, errs));
    if (errors.length === 0) await inSlices(listTypeErrorsWork(obj, this.fields.shape, '', errs, old));
    if (errors.length === 0) errs = errs.concat(old ? this.strategy.validateUpdate(obj, old, subresource) : this.strategy.validateCreate(obj));
    if (errs.length) throw status.invalid(this.gr, obj.metadata.name ?? obj.metadata.generateName ?? '', errs);
    return [...warnings, ...(old ? this.strategy.warningsOnUpdate(obj, old) : this.strategy.warningsOnCreate(obj))];
  }

  /** POST. `appliedManaged`: managedFields already computed by a server-side apply that creates the object. */
  async create(ctx: RequestContext, namespace: string, body: unknown, opts: WriteOptions, appliedManaged?: unknown): Promise<WriteResult> {
    const obj = checkBody(this.def, this.apiVersion, body, namespace);
    if (obj.metadata.resourceVersion !== undefined && obj.metadata.resourceVersion !== '') {
      throw status.badRequest('resourceVersion should not be set on objects to be created');
    }
    if (this.def.namespaced) {
      obj.metadata.namespace = namespace;
      const m = obj.metadata;
      const name = typeof m.name === 'string' && m.name ? m.name : typeof m.generateName === 'string' && m.generateName ? m.generateName : 'Unknown';
      await this.wrap(name, async () => this.options.requireNamespace?.(ctx, namespace, { gr: this.gr, name }));
    } else delete obj.metadata.namespace;
    for (const f of this.strategy.statusFields) delete obj[f]; // written through the status subresource only
    const hasName = typeof obj.metadata.name === 'string' && obj.metadata.name !== '';
    const hasGenerate = typeof obj.metadata.generateName === 'string' && obj.metadata.generateName !== '';
    this.strategy.prepareForCreate(ctx, obj);
    const review = this.strategy.review;
    const warnings = await this.validate(obj, undefined, opts.fieldValidation, !hasGenerate && !review);
    for (const k of ['uid', 'creationTimestamp', 'deletionTimestamp', 'deletionGracePeriodSeconds', 'generation', 'selfLink', 'managedFields']) {
      delete obj.metadata[k];
    }
    if (obj.metadata.finalizers?.length === 0) delete obj.metadata.finalizers;
    dropEmptyMaps(obj.metadata);
    const scope = this.strategy.serializeCreates;
    const lock = scope === 'cluster' ? ctx.cluster : scope === 'namespace' ? `${ctx.cluster}/${namespace}` : undefined;
    return this.serialized(lock, () => this.admitAndCreate(ctx, namespace, obj, opts, warnings, hasName, appliedManaged));
  }

  /** Runs `fn` after every earlier call with the same `key` settled (none: at once). In-process only. */
  private async serialized<T>(key: string | undefined, fn: () => Promise<T>): Promise<T> {
    if (key === undefined) return fn();
    const prev = this.createLocks.get(key) ?? Promise.resolve();
    const run = prev.then(fn, fn);
    const settled = run.then(() => undefined, () => undefined);
    this.createLocks.set(key, settled);
    void settled.then(() => {
      if (this.createLocks.get(key) === settled) this.createLocks.delete(key);
    });
    return run;
  }

  private async admitAndCreate(ctx: RequestContext, namespace: string, obj: KubeObject, opts: WriteOptions, warnings: string[], hasName: boolean, appliedManaged?: unknown): Promise<WriteResult> {
    // Admission may read the store (quotas, namespaces): its storage failures are Statuses too (503, not 500).
    await this.wrap(obj.metadata.name ?? '', async () => this.strategy.admitCreate?.(ctx, obj, opts));
    // A review is answered, never stored: no uid, no resourceVersion (as kube answers a TokenReview).
    if (this.strategy.review) return { object: await this.strategy.review(ctx, obj, opts), warnings };
    const meta = obj.metadata;
    meta.uid = newUID();
    meta.creationTimestamp = nowTimestamp();
    if (this.strategy.generation) meta.generation = 1;
    if (appliedManaged === undefined) await this.fields.updateInSlices(undefined, obj, undefined, opts.fieldManager, '');
    else obj.metadata.managedFields = appliedManaged as never;
    stampCluster(ctx, obj); // after ownership: the server's annotation belongs to no manager
    await breathe();
    for (let attempt = 1; ; attempt++) {
      if (!hasName) meta.name = generateName(meta.generateName!);
      if (opts.dryRun) {
        const existing = await this.wrap(meta.name!, () => this.store.get(this.ref, this.key(ctx, namespace, meta.name!)));
        if (existing) throw status.alreadyExists(this.gr, meta.name!);
        return { object: obj, warnings };
      }
      try {
        const stored = await this.wrap(meta.name!, () => this.store.create(this.ref, this.key(ctx, namespace, meta.name!), obj));
        await this.strategy.afterCreate?.(ctx, stored);
        return { object: stored, warnings };
      } catch (e) {
        if (e instanceof status.StatusError && e.status.reason === 'AlreadyExists' && !hasName && attempt < MAX_GENERATE_ATTEMPTS) continue;
        throw e;
      }
    }
  }

  /** PUT: the body replaces the object (spec for the main resource, status for /status). */
  async update(ctx: RequestContext, namespace: string, name: string, body: unknown, opts: WriteOptions, subresource: string): Promise<WriteResult> {
    const obj = checkBody(this.def, this.apiVersion, body, namespace, name);
    const rv = obj.metadata.resourceVersion;
    if (rv === undefined || rv === '') {
      throw status.invalid(this.gr, name, [invalidValue('metadata.resourceVersion', '0x0', 'must be specified for an update')]);
    }
    const old = await this.get(ctx, namespace, name);
    return this.applyUpdate(ctx, namespace, name, obj, old, parseRV(rv), opts, subresource);
  }

  /** PUT of the status subresource: `obj` carries the status to store and the resourceVersion it was read at. */
  updateStatus(ctx: RequestContext, obj: KubeObject, opts: WriteOptions): Promise<WriteResult> {
    return this.update(ctx, obj.metadata.namespace ?? '', obj.metadata.name ?? '', obj, opts, 'status');
  }

  /** PATCH: `apply` turns the current object into the desired one; retried on conflicts unless the patch pins a resourceVersion. */
  async patch(
    ctx: RequestContext,
    namespace: string,
    name: string,
    apply: (current: KubeObject) => unknown | Promise<unknown>,
    opts: WriteOptions,
    subresource: string,
  ): Promise<WriteResult> {
    for (let attempt = 1; ; attempt++) {
      const old = await this.get(ctx, namespace, name);
      // The patch sees the object without its resourceVersion, so a resourceVersion in the result
      // can only come from the client: an optimistic-lock precondition, never retried.
      const base = await cloneInSlices(old);
      delete base.metadata.resourceVersion;
      await breathe();
      const patched = checkBody(this.def, this.apiVersion, await apply(base), namespace, name);
      const pinned = patched.metadata.resourceVersion;
      const clientPinned = pinned !== undefined && pinned !== null && pinned !== '';
      const expected = clientPinned ? parseRV(String(pinned)) : parseRV(old.metadata.resourceVersion!);
      try {
        return await this.applyUpdate(ctx, namespace, name, patched, old, expected, opts, subresource);
      } catch (e) {
        const conflict = e instanceof status.StatusError && e.status.reason === 'Conflict';
        if (conflict && !clientPinned && attempt < MAX_PATCH_RETRIES) continue;
        throw e;
      }
    }
  }

  /**
   * PATCH application/apply-patch+yaml: merges `config` by field ownership (src/registry/apply/);
   * creates the object when it does not exist. Retried on storage conflicts unless the config pins
   * a resourceVersion.
   */
  async apply(ctx: RequestContext, namespace: string, name: string, config: unknown, opts: WriteOptions, subresource: string): Promise<WriteResult & { created: boolean }> {
    // Under Warn/Ignore, undeclared fields leave the configuration before anyone can own them.
    const unknown = opts.fieldValidation === 'Strict' ? [] : pruneUnknown(config, this.fields.shape);
    const warned = opts.fieldValidation === 'Warn' ? unknown.map((f) => `unknown field "${f}"`) : [];
    for (let attempt = 1; ; attempt++) {
      let old: KubeObject | undefined;
      try {
        old = await this.get(ctx, namespace, name);
      } catch (e) {
        if (!(e instanceof status.StatusError && e.status.reason === 'NotFound') || subresource) throw e;
      }
      try {
        if (!old) {
          const desired = checkBody(this.def, this.apiVersion, config, namespace, name);
          const { object } = await this.fields.applyInSlices(undefined, desired, opts.fieldManager, opts.force ?? false, subresource, name);
          object.metadata.name = name;
          const managed = object.metadata.managedFields ?? [];
          const r = await this.create(ctx, namespace, object, opts, managed);
          return { ...r, warnings: [...warned, ...r.warnings], created: true };
        }
        const base = await cloneInSlices(old);
        delete base.metadata.resourceVersion; // as for patches: a resourceVersion in the result is the client's precondition
        const { object } = await this.fields.applyInSlices(base, config, opts.fieldManager, opts.force ?? false, subresource, name);
        const merged = checkBody(this.def, this.apiVersion, object, namespace, name);
        const pinned = merged.metadata.resourceVersion;
        const clientPinned = pinned !== undefined && pinned !== null && pinned !== '';
        const expected = clientPinned ? parseRV(String(pinned)) : parseRV(old.metadata.resourceVersion!);
        const r = await this.applyUpdate(ctx, namespace, name, merged, old, expected, opts, subresource, true);
        return { ...r, warnings: [...warned, ...r.warnings], created: false };
      } catch (e) {
        const race = e instanceof status.StatusError && (e.status.reason === 'AlreadyExists' || (e.status.reason === 'Conflict' && !e.status.details?.causes));
        if (race && attempt < MAX_PATCH_RETRIES && !(old && pinsResourceVersion(config))) continue;
        throw e;
      }
    }
  }

  private async applyUpdate(
    ctx: RequestContext,
    namespace: string,
    name: string,
    body: KubeObject,
    old: KubeObject,
    expectedRV: number,
    opts: WriteOptions,
    subresource: string,
    applied = false,
  ): Promise<WriteResult> {
    if (String(expectedRV) !== old.metadata.resourceVersion) throw status.conflict(this.gr, name, status.OBJECT_MODIFIED);
    if (body.metadata.uid !== undefined && body.metadata.uid !== '' && body.metadata.uid !== old.metadata.uid) {
      throw status.conflict(this.gr, name, `Precondition failed: UID in precondition: ${String(body.metadata.uid)}, UID in object meta: ${old.metadata.uid}`);
    }
    const requestManaged = body.metadata.managedFields;
    // Each path owns its fields: /status writes the status fields only, the main resource all others.
    let next: KubeObject;
    const owned = this.strategy.statusFields;
    if (subresource === 'status') {
      next = await cloneInSlices(old);
      for (const f of owned) {
        if (body[f] === undefined) delete next[f];
        else next[f] = body[f];
      }
    } else {
      next = body;
      for (const f of owned) {
        if (old[f] === undefined) delete next[f];
        else next[f] = clone(old[f]);
      }
    }
    const m = next.metadata;
    const o = old.metadata;
    m.name = name;
    if (this.def.namespaced) m.namespace = namespace;
    // A /status write's metadata is the copy of old's made above: copying its managedFields again
    // (every item of a 3 MiB list, once more) would change nothing.
    if (subresource !== 'status') {
      for (const k of ['uid', 'creationTimestamp', 'deletionTimestamp', 'deletionGracePeriodSeconds', 'generation', 'managedFields'] as const) {
        if (o[k] === undefined) delete m[k];
        else m[k] = (await cloneInSlices(o[k])) as never;
      }
    }
    m.resourceVersion = o.resourceVersion;
    if (m.finalizers?.length === 0) delete m.finalizers;
    dropEmptyMaps(m);
    this.strategy.prepareForUpdate(ctx, next, old, subresource);
    await breathe();
    const warnings = await this.validate(next, old, opts.fieldValidation, true, subresource);
    await breathe();
    const finalizersAdded = o.deletionTimestamp ? newFinalizersError(o.finalizers, m.finalizers) : undefined;
    if (finalizersAdded) throw status.invalid(this.gr, name, [finalizersAdded]);
    await this.wrap(next.metadata.name ?? '', async () => this.strategy.admitUpdate?.(ctx, next, old, subresource));
    if (this.strategy.generation && specChanged(old, next, owned)) m.generation = (o.generation ?? 1) + 1;
    if (applied) {
      if (requestManaged === undefined) delete m.managedFields;
      else m.managedFields = requestManaged;
    } else await this.fields.updateInSlices(old, next, requestManaged, opts.fieldManager, subresource);
    stampCluster(ctx, next); // after ownership: the server's annotation belongs to no manager
    await breathe();
    // A write that changes nothing but managedFields timestamps stores nothing (kube's
    // IgnoreManagedFieldsTimestampsTransformer): the resourceVersion stays.
    if (await inSlices(sameIgnoringManagedTimesWork(next, old))) return { object: old, warnings };
    await breathe();
    if (opts.dryRun) return { object: next, warnings };
    const key = this.key(ctx, namespace, name);
    // Removing the last finalizer of a deleting object deletes it instead of storing the update, as
    // kube-apiserver does: watchers see one DELETED, not a MODIFIED followed by a DELETED.
    if (m.deletionTimestamp && !(m.finalizers?.length)) {
      const gone = await this.wrap(name, () => this.store.delete(this.ref, key, expectedRV));
      await this.strategy.afterDelete?.(ctx, gone);
      return { object: gone, warnings };
    }
    const stored = await this.wrap(name, () => this.store.update(this.ref, key, next, expectedRV));
    return { object: stored, warnings };
  }

  async delete(ctx: RequestContext, namespace: string, name: string, opts: DeleteOptions): Promise<KubeObject> {
    for (let attempt = 1; ; attempt++) {
      const cur = await this.get(ctx, namespace, name);
      const pre = opts.preconditions ?? {};
      if (pre.uid && pre.uid !== cur.metadata.uid) {
        throw status.conflict(this.gr, name, `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${cur.metadata.uid}`);
      }
      if (pre.resourceVersion && pre.resourceVersion !== cur.metadata.resourceVersion) {
        throw status.conflict(
          this.gr,
          name,
          `Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in object meta: ${cur.metadata.resourceVersion}`,
        );
      }
      const key = this.key(ctx, namespace, name);
      try {
        if (cur.metadata.finalizers?.length) {
          if (cur.metadata.deletionTimestamp) return cur; // already deleting
          const next = await cloneInSlices(cur);
          next.metadata.deletionTimestamp = nowTimestamp();
          next.metadata.deletionGracePeriodSeconds = 0;
          if (opts.dryRun) return next;
          return await this.wrap(name, () => this.store.update(this.ref, key, next, parseRV(cur.metadata.resourceVersion!)));
        }
        if (opts.dryRun) return cur;
        const gone = await this.wrap(name, () => this.store.delete(this.ref, key, parseRV(cur.metadata.resourceVersion!)));
        await this.strategy.afterDelete?.(ctx, gone);
        return gone;
      } catch (e) {
        if (e instanceof status.StatusError && e.status.reason === 'Conflict' && !pre.resourceVersion && attempt < MAX_PATCH_RETRIES) continue;
        throw e;
      }
    }
  }

  /** Maps storage failures onto Status errors. */
  async wrap<T>(name: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (e) {
      if (!(e instanceof StorageError)) throw e;
      throw statusOfStorageError(this.gr, name, e);
    }
  }
}
