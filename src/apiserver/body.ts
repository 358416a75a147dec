// Request bodies and write options: decoding (JSON, YAML), patch application, and the query
// parameters every write shares (dryRun, fieldManager, fieldValidation, force).
import { parse as parseYAML } from 'yaml';
import fastJsonPatch from 'fast-json-patch';
import { invalidValue, notSupported, required, tooLong } from '../api/field-errors.js';
import * as status from '../api/status.js';
import type { FieldValidation } from '../api/validation.js';
import type { WriteOptions } from '../registry/registry.js';
import { mediaType } from './negotiation.js';

const { applyPatch, validate: validatePatch } = fastJsonPatch as unknown as typeof import('fast-json-patch');

export const MAX_BODY_BYTES = 3 * 1024 * 1024;
const MAX_JSON_PATCH_OPS = 10_000;

function decodeJSON(buf: Buffer, what: string): unknown {
  try {
    return JSON.parse(buf.toString('utf8'));
  } catch (e) {
    throw status.badRequest(`the ${what} could not be decoded as JSON: ${(e as Error).message}`);
  }
}

function decodeYAML(buf: Buffer, what: string): unknown {
  try {
    return parseYAML(buf.toString('utf8'), { maxAliasCount: 100 });
  } catch (e) {
    throw status.badRequest(`the ${what} could not be decoded as YAML: ${(e as Error).message.split('\n')[0]}`);
  }
}

/** Decodes a create/update body by its Content-Type (JSON, or YAML for curl users). */
export function decodeObjectBody(contentType: string | undefined, body: unknown): unknown {
  const buf = Buffer.isBuffer(body) ? body : Buffer.alloc(0);
  if (buf.length === 0) throw status.badRequest('the request body is empty; expected an object');
  const mt = mediaType(contentType);
  if (mt === 'application/json' || mt === '') return decodeJSON(buf, 'object provided');
  if (mt === 'application/yaml' || mt === 'application/x-yaml' || mt === 'text/yaml') return decodeYAML(buf, 'object provided');
  throw status.unsupportedMediaType(
    `the body of the request was in an unknown format - accepted media types include: application/json, application/yaml`,
  );
}

/** RFC 7386 JSON merge patch. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return patch;
  const out: Record<string, unknown> =
    target !== null && typeof target === 'object' && !Array.isArray(target) ? { ...(target as Record<string, unknown>) } : {};
  for (const [k, v] of Object.entries(patch as Record<string, unknown>)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

export type PatchKind = 'merge' | 'json' | 'apply';

export function patchKind(contentType: string | undefined): PatchKind {
  const mt = mediaType(contentType);
  if (mt === 'application/merge-patch+json') return 'merge';
  if (mt === 'application/json-patch+json') return 'json';
  if (mt === 'application/apply-patch+yaml') return 'apply';
  throw status.unsupportedPatchType();
}

/** The body of a server-side apply: a (partial) object in YAML or JSON (JSON is YAML). */
export function decodeApplyPatch(body: unknown): unknown {
  const buf = Buffer.isBuffer(body) ? body : Buffer.alloc(0);
  if (buf.length === 0) throw status.badRequest('the request body is empty; expected an apply configuration');
  const config = decodeYAML(buf, 'apply configuration');
  if (config === null || typeof config !== 'object' || Array.isArray(config)) {
    throw status.badRequest('the apply configuration must be a YAML or JSON object');
  }
  return config;
}

/** Returns a function that applies the decoded patch to a current object. */
export function decodePatch(kind: Exclude<PatchKind, 'apply'>, body: unknown): (current: unknown) => unknown {
  const buf = Buffer.isBuffer(body) ? body : Buffer.alloc(0);
  if (buf.length === 0) throw status.badRequest('the request body is empty; expected a patch');
  const patch = decodeJSON(buf, 'patch');
  if (kind === 'merge') {
    if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) {
      throw status.badRequest('a merge patch must be a JSON object');
    }
    return (current) => mergePatch(current, patch);
  }
  if (!Array.isArray(patch)) throw status.badRequest('a JSON patch must be a JSON array of operations');
  if (patch.length > MAX_JSON_PATCH_OPS) {
    throw new status.StatusError({
      ...status.entityTooLarge(MAX_BODY_BYTES).status,
      message: `the allowed maximum operations in a JSON patch is ${MAX_JSON_PATCH_OPS}, got ${patch.length}`,
    });
  }
  const bad = validatePatch(patch as any);
  if (bad) throw status.badRequest(`invalid JSON patch: ${bad.message.split('\n')[0]}`);
  // Patches see the object without its resourceVersion (the registry treats one in the result as
  // the client's precondition), so `replace` of it — kubectl's managedFields migration sends one —
  // works as `add` would.
  for (const op of patch as Array<{ op: string; path: string }>) {
    if (op.op === 'replace' && op.path === '/metadata/resourceVersion') op.op = 'add';
  }
  return (current) => {
    try {
      return applyPatch(current, patch as any, true, false).newDocument;
    } catch (e) {
      const msg = (e as Error).message.split('\n')[0];
      throw new status.StatusError({
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message: `the server rejected our request due to an error in our request: ${msg}`,
        reason: 'Invalid',
        details: { causes: [{ reason: 'FieldValueInvalid', message: msg, field: 'patch' }] },
        code: 422,
      });
    }
  };
}

const BOOLS: Record<string, boolean> = Object.fromEntries([
  ...['1', 't', 'T', 'TRUE', 'true', 'True'].map((k) => [k, true]),
  ...['0', 'f', 'F', 'FALSE', 'false', 'False'].map((k) => [k, false]),
]);

function optionsKind(verb: string): string {
  return verb === 'create' ? 'CreateOptions' : verb === 'patch' ? 'PatchOptions' : 'UpdateOptions';
}

/** dryRun, fieldManager, fieldValidation, force — validated as apimachinery does (422). */
export function writeOptions(q: URLSearchParams, verb: string, userAgent: string | undefined, isApply = false): WriteOptions {
  const kind = optionsKind(verb);
  const dryRuns = q.getAll('dryRun');
  for (const d of dryRuns) if (d !== 'All') throw status.invalidOptions(kind, [notSupported('dryRun', d, ['All'])]);
  let fieldManager = q.get('fieldManager') ?? '';
  if (fieldManager.length > 128) throw status.invalidOptions(kind, [tooLong('fieldManager', 128)]);
  if (/[^\x20-\x7e]/.test(fieldManager)) throw status.invalidOptions(kind, [invalidValue('fieldManager', fieldManager, 'must only contain printable characters')]);
  if (isApply && fieldManager === '') throw status.invalidOptions(kind, [required('fieldManager', 'is required for apply patch')]);
  if (fieldManager === '') fieldManager = (userAgent ?? 'unknown').split('/')[0]!.slice(0, 128) || 'unknown';
  const fv = q.get('fieldValidation');
  let fieldValidation: FieldValidation = 'Strict';
  if (fv !== null && fv !== '') {
    if (fv !== 'Strict' && fv !== 'Warn' && fv !== 'Ignore') {
      throw status.invalidOptions(kind, [notSupported('fieldValidation', fv, ['Ignore', 'Warn', 'Strict'])]);
    }
    fieldValidation = fv;
  }
  const force = q.get('force');
  if (force !== null && !isApply) {
    throw status.invalidOptions(kind, [{ type: 'FieldValueForbidden', field: 'force', detail: 'may not be specified for non-apply patch' }]);
  }
  // Go's strconv.ParseBool, which decodes the query parameter in kube-apiserver.
  const forced = force === null || force === '' ? false : BOOLS[force];
  if (forced === undefined) throw status.badRequest(`invalid value for force: ${JSON.stringify(force)}: must be true or false`);
  return { dryRun: dryRuns.length > 0, fieldManager, fieldValidation, force: forced };
}
