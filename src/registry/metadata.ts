// Server-owned metadata: uid, timestamps, generated names, generation, the kcp cluster annotation,
// resourceVersion parsing. managedFields live in apply/.
import { randomInt, randomUUID } from 'node:crypto';
import * as status from '../api/status.js';
import type { KubeObject } from '../model/object.js';
import { DEFAULT_CLUSTER } from '../storage/types.js';
import type { RequestContext } from './context.js';

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

/**
 * Objects of a kcp logical cluster carry `kcp.io/cluster: <name>` in every response, as kcp's own
 * objects do; wildcard clients key their caches on it. The server owns the annotation.
 */
export function stampCluster(ctx: RequestContext, obj: KubeObject): void {
  if (ctx.cluster === DEFAULT_CLUSTER) {
    // No client may claim a logical cluster: in the default cluster the annotation is dropped.
    const annotations = obj.metadata.annotations;
    if (annotations && KCP_CLUSTER_ANNOTATION in annotations) {
      const { [KCP_CLUSTER_ANNOTATION]: _claimed, ...rest } = annotations;
      if (Object.keys(rest).length === 0) delete obj.metadata.annotations;
      else obj.metadata.annotations = rest;
    }
    return;
  }
  obj.metadata.annotations = { ...(obj.metadata.annotations ?? {}), [KCP_CLUSTER_ANNOTATION]: ctx.cluster };
}

export const KCP_CLUSTER_ANNOTATION = 'kcp.io/cluster';

/** Empty labels/annotations are dropped, as Go's omitempty does: a patch removing the last label leaves none, not `{}`. */
export function dropEmptyMaps(meta: KubeObject['metadata']): void {
  for (const k of ['labels', 'annotations'] as const) {
    const v = meta[k];
    if (v !== null && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length === 0) delete meta[k];
  }
}

export function parseRV(rv: string): number {
  if (!/^\d{1,15}$/.test(rv)) {
    throw status.badRequest(`invalid resourceVersion "${rv}": must be a decimal number`);
  }
  return Number(rv);
}
