// What describes one served resource: names, scope, schema, printer columns, field selectors and
// the pure validation rules. Discovery, OpenAPI, validation, tables and field selectors are all
// derived from these definitions, for our own group and for the sandbox's Kubernetes core alike.
import type { TSchema } from '@sinclair/typebox';
import type { FieldError } from './field-errors.js';

type Obj = Record<string, any>;

export interface PrinterColumn {
  name: string;
  type: 'string' | 'integer' | 'number' | 'boolean' | 'date';
  format?: string;
  description: string;
  priority: number;
  /** JSONPath-like source, published in kcp APIResourceSchemas and docs. */
  jsonPath: string;
  value(obj: Obj): string | number | boolean | null;
}

export interface ResourceDefinition {
  /** API group; '' is the core group, served under /api/<version>. */
  group: string;
  version: string;
  kind: string;
  listKind: string;
  plural: string;
  singular: string;
  shortNames: string[];
  categories: string[];
  namespaced: boolean;
  schema: TSchema;
  columns: PrinterColumn[];
  /** Field selector keys beyond metadata.name / metadata.namespace, with how to read them. */
  selectableFields: Record<string, (obj: Obj) => string | undefined>;
  /** A status subresource exists: the main resource keeps `status` as stored, `/status` writes only it. */
  statusSubresource: boolean;
  /** metadata.generation is kept, and bumped when anything but metadata and status changes. */
  generation: boolean;
  /**
   * Strategic merge patch support, as built-in kinds have it: list fields merged by key (dotted path
   * of the list → merge key; '' merges a list of scalars as a set). Absent: strategic merge patch
   * is refused with 415, as for CRDs.
   */
  strategicMerge?: Record<string, string>;
  /**
   * The verbs served, when not every verb is (discovery, OpenAPI and routing follow it). A
   * create-only review resource (RepositoryScan, like TokenReview) serves ['create'].
   */
  verbs?: readonly string[];
  /** Request bodies may be Kubernetes protobuf (kubectl's typed commands send built-in kinds so). */
  protobuf?: boolean;
  normalize?(obj: Obj): void;
  validateCreate(obj: Obj): FieldError[];
  validateUpdate(obj: Obj, old: Obj): FieldError[];
}

export function condition(obj: Obj, type: string): Obj | undefined {
  const conds = obj?.status?.conditions;
  return Array.isArray(conds) ? conds.find((c: Obj) => c?.type === type) : undefined;
}

export const readyStatus: PrinterColumn = {
  name: 'Ready',
  type: 'string',
  description: 'Status of the Ready condition',
  priority: 0,
  jsonPath: '.status.conditions[?(@.type=="Ready")].status',
  value: (o) => condition(o, 'Ready')?.status ?? '',
};
export const readyReason: PrinterColumn = {
  name: 'Reason',
  type: 'string',
  description: 'Reason of the Ready condition',
  priority: 0,
  jsonPath: '.status.conditions[?(@.type=="Ready")].reason',
  value: (o) => condition(o, 'Ready')?.reason ?? '',
};
export const readyMessage: PrinterColumn = {
  name: 'Message',
  type: 'string',
  description: 'Message of the Ready condition',
  priority: 1,
  jsonPath: '.status.conditions[?(@.type=="Ready")].message',
  value: (o) => condition(o, 'Ready')?.message ?? '',
};
export const age: PrinterColumn = {
  name: 'Age',
  type: 'date',
  description: 'Time since the object was created',
  priority: 0,
  jsonPath: '.metadata.creationTimestamp',
  value: (o) => o?.metadata?.creationTimestamp ?? null,
};

/** `v1` for the core group, else `<group>/<version>`. */
export function apiVersionOf(def: { group: string; version: string }): string {
  return def.group ? `${def.group}/${def.version}` : def.version;
}
