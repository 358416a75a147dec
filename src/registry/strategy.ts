// Per-resource behaviour of writes, as k8s.io/apiserver's RESTCreateStrategy/RESTUpdateStrategy:
// what the server sets before validation, which fields each path (main resource, status
// subresource) owns, the resource's rules and warnings, checks that need the caller or other objects,
// and effects on other objects once a write is stored. The generic `Registry` holds no resource's
// rules; it asks the strategy.
import type { ResourceDefinition } from '../api/definition.js';
import type { FieldError } from '../api/field-errors.js';
import type { KubeObject } from '../model/object.js';
import type { RequestContext, WriteOptions } from './context.js';

export interface ResourceStrategy {
  /**
   * Top-level fields the status subresource owns ([] when there is none). The main resource keeps
   * them as stored; a status write changes only them (and nothing in metadata but what the server sets).
   */
  readonly statusFields: readonly string[];
  /** Keep metadata.generation: 1 at create, bumped when a field outside metadata and statusFields changes. */
  readonly generation: boolean;
  /** Server-set fields and normalization of a new object, before validation. */
  prepareForCreate(ctx: RequestContext, obj: KubeObject): void;
  /** Normalization of an updated object (either path), before validation; `old` is the stored object. */
  prepareForUpdate(ctx: RequestContext, obj: KubeObject, old: KubeObject, subresource: string): void;
  validateCreate(obj: KubeObject): FieldError[];
  validateUpdate(obj: KubeObject, old: KubeObject, subresource: string): FieldError[];
  /** Warnings returned with a successful write (Warning headers), e.g. deprecated usage. */
  warningsOnCreate(obj: KubeObject): string[];
  warningsOnUpdate(obj: KubeObject, old: KubeObject): string[];
  /**
   * Creates in one logical cluster ('cluster'), or in one namespace of it ('namespace'), run one at
   * a time in this process, from admitCreate to the store's answer, so a quota counted in
   * admitCreate over that scope is never passed by two creates at once (quota.ts). Unset: creates
   * run concurrently (serialized, each would wait for the store's round trip of the one before).
   */
  readonly serializeCreates?: 'cluster' | 'namespace';
  /** Checks that need the caller or other objects (assert-author, namespace existence); after validation, also on dryRun. */
  admitCreate?(ctx: RequestContext, obj: KubeObject, opts: WriteOptions): Promise<void>;
  admitUpdate?(ctx: RequestContext, obj: KubeObject, old: KubeObject, subresource: string): Promise<void>;
  /**
   * A review (TokenReview-like) resource: after validation and admission, the answer to return in
   * place of storing the object. Registry.create stores nothing when this is set.
   */
  review?(ctx: RequestContext, obj: KubeObject, opts: WriteOptions): Promise<KubeObject>;
  /** Effects on other objects once a create is stored (never on dryRun). */
  afterCreate?(ctx: RequestContext, obj: KubeObject): Promise<void>;
  /** Effects on other objects once the object is gone from the store (never on dryRun). */
  afterDelete?(ctx: RequestContext, obj: KubeObject): Promise<void>;
}

type Obj = Record<string, any>;

/**
 * The strategy a definition implies: its normalization and rules, status owned by /status when the
 * resource has that subresource. `extra` overrides or adds behaviour (hooks, side effects).
 */
export function definitionStrategy(def: ResourceDefinition, extra: Partial<ResourceStrategy> = {}): ResourceStrategy {
  return {
    statusFields: def.statusSubresource ? ['status'] : [],
    generation: def.generation,
    prepareForCreate: (_ctx, obj) => def.normalize?.(obj as Obj),
    prepareForUpdate: (_ctx, obj) => def.normalize?.(obj as Obj),
    validateCreate: (obj) => def.validateCreate(obj as Obj),
    validateUpdate: (obj, old) => def.validateUpdate(obj as Obj, old as Obj),
    warningsOnCreate: () => [],
    warningsOnUpdate: () => [],
    ...extra,
  };
}

/** Runs `first` then `second` (both optional) for a hook that may be set by either. */
export function chain<A extends unknown[]>(
  first: ((...a: A) => Promise<void>) | undefined,
  second: ((...a: A) => Promise<void>) | undefined,
): ((...a: A) => Promise<void>) | undefined {
  if (!first) return second;
  if (!second) return first;
  return async (...a: A) => {
    await first(...a);
    await second(...a);
  };
}
