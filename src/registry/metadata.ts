// Server-owned metadata: uid, timestamps, generated names, generation, managedFields.
import { randomInt, randomUUID } from 'node:crypto';
import type { KubeObject } from '../model/object.js';

/** RFC 3339, UTC, seconds precision, as Kubernetes serializes metav1.Time. */
export function nowTimestamp(): string {
  return new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
}

export function newUID(): string {
  return randomUUID();
}

// The alphabet of k8s.io/apimachinery/pkg/util/rand: no vowels (no accidental words), no 0/1/3.
const ALPHANUMS = 'bcdfghjklmnpqrstvwxz2456789';
const MAX_GENERATE_PREFIX = 58;

export function generateName(prefix: string): string {
  let s = prefix.length > MAX_GENERATE_PREFIX ? prefix.slice(0, MAX_GENERATE_PREFIX) : prefix;
  for (let i = 0; i < 5; i++) s += ALPHANUMS[randomInt(ALPHANUMS.length)];
  return s;
}

export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== typeof b || a === null || b === null || typeof a !== 'object') return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bb = b as unknown[];
    return a.length === bb.length && a.every((v, i) => deepEqual(v, bb[i]));
  }
  const ka = Object.keys(a as object).filter((k) => (a as any)[k] !== undefined);
  const kb = Object.keys(b as object).filter((k) => (b as any)[k] !== undefined);
  if (ka.length !== kb.length) return false;
  return ka.every((k) => deepEqual((a as any)[k], (b as any)[k]));
}

export function clone<T>(v: T): T {
  return structuredClone(v);
}

/** Everything but metadata and the status fields: a change here bumps metadata.generation (CRD rule). */
export function specChanged(a: KubeObject, b: KubeObject, statusFields: readonly string[] = ['status']): boolean {
  const strip = (o: KubeObject) => {
    const { metadata: _m, apiVersion: _a, kind: _k, ...rest } = o;
    for (const f of statusFields) delete rest[f];
    return rest;
  };
  return !deepEqual(strip(a), strip(b));
}

type Fields = Record<string, unknown>;

/** The FieldsV1 set of the leaves present in `v` (lists are atomic). */
function fieldsOf(v: unknown): Fields {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return {};
  const out: Fields = {};
  for (const [k, child] of Object.entries(v as object)) {
    if (child === undefined) continue;
    out[`f:${k}`] = fieldsOf(child);
  }
  return out;
}

/** Leaves that differ between a and b (added, changed or removed), as a FieldsV1 set. */
function changedFields(a: unknown, b: unknown): Fields | undefined {
  if (deepEqual(a, b)) return undefined;
  const isObj = (x: unknown) => x !== null && typeof x === 'object' && !Array.isArray(x);
  if (!isObj(a) || !isObj(b)) return fieldsOf(b);
  const out: Fields = {};
  const keys = new Set([...Object.keys(a as object), ...Object.keys(b as object)]);
  for (const k of keys) {
    const c = changedFields((a as any)[k], (b as any)[k]);
    if (c !== undefined) out[`f:${k}`] = c;
  }
  return out;
}

function mergeFields(a: Fields, b: Fields): Fields {
  const out: Fields = { ...a };
  for (const [k, v] of Object.entries(b)) out[k] = k in out ? mergeFields(out[k] as Fields, v as Fields) : v;
  return out;
}

function managedPart(obj: KubeObject | undefined, subresource: string): Fields {
  if (!obj) return {};
  if (subresource === 'status') return { status: obj.status };
  const { status: _s, apiVersion: _a, kind: _k, metadata, ...rest } = obj;
  const m = metadata ?? {};
  const meta: Fields = {};
  for (const k of ['labels', 'annotations', 'finalizers', 'ownerReferences'] as const) if (m[k] !== undefined) meta[k] = m[k];
  return Object.keys(meta).length ? { metadata: meta, ...rest } : rest;
}

export interface ManagedFieldsEntry {
  manager: string;
  operation: 'Update' | 'Apply';
  apiVersion: string;
  time: string;
  fieldsType: 'FieldsV1';
  fieldsV1: Fields;
  subresource?: string;
}

/**
 * Records that `manager` wrote the fields that changed between `before` and `after`. Field
 * ownership transfer between managers belongs to server-side apply, which is not implemented yet.
 */
export function recordManagedFields(
  before: KubeObject | undefined,
  after: KubeObject,
  manager: string,
  apiVersion: string,
  subresource: string,
): void {
  const changed = changedFields(managedPart(before, subresource), managedPart(after, subresource));
  const existing = ((before?.metadata.managedFields ?? after.metadata.managedFields ?? []) as ManagedFieldsEntry[]).slice();
  if (changed === undefined || Object.keys(changed).length === 0) {
    after.metadata.managedFields = existing.length ? existing : undefined;
    if (after.metadata.managedFields === undefined) delete after.metadata.managedFields;
    return;
  }
  const i = existing.findIndex((e) => e.manager === manager && e.operation === 'Update' && (e.subresource ?? '') === subresource);
  const entry: ManagedFieldsEntry = {
    manager,
    operation: 'Update',
    apiVersion,
    time: nowTimestamp(),
    fieldsType: 'FieldsV1',
    fieldsV1: i >= 0 ? mergeFields(existing[i]!.fieldsV1, changed) : changed,
  };
  if (subresource) entry.subresource = subresource;
  if (i >= 0) existing[i] = entry;
  else existing.push(entry);
  after.metadata.managedFields = existing;
}
