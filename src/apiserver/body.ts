// Request bodies and write options: decoding (JSON, YAML, protobuf for the sandbox), patch application, and the query
// parameters every write shares (dryRun, fieldManager, fieldValidation, force).
import fastJsonPatch, { type Operation } from 'fast-json-patch';
import { invalidValue, notSupported, required, tooLong } from '../api/field-errors.js';
import * as status from '../api/status.js';
import type { FieldValidation } from '../api/validation.js';
import type { WriteOptions } from '../registry/registry.js';
import { mediaType } from './negotiation.js';
import { decodeJSONInSlices, decodeYAMLInSlices, type Decoded } from './decode.js';
import { applyJSONPatch, checkPatchedSizeInSlices, mergePatch } from './patch.js';
import { strategicMergePatchWork } from './strategic-merge-patch.js';
import { inSlices } from '../registry/apply/work.js';
import { decodeProtobufObject, PROTOBUF_CONTENT_TYPE } from './protobuf-body.js';

const { validate: validatePatch } = fastJsonPatch as unknown as typeof import('fast-json-patch');

export const MAX_BODY_BYTES = 3 * 1024 * 1024;
const MAX_JSON_PATCH_OPS = 10_000;

export { mergePatch };

/** A decoded body and the warnings its decoding produced (duplicate keys under Warn). */
export interface DecodedBody {
  value: unknown;
  warnings: string[];
}

/**
 * Duplicate keys, as kube-apiserver's strict decoding treats them: refused under Strict (the
 * default), a warning under Warn, ignored (last one wins) under Ignore.
 */
function strictness(d: Decoded, mode: FieldValidation, kind?: { kind: string; version: string }): DecodedBody {
  const problems = d.duplicates.map((p) => `duplicate field ${JSON.stringify(p)}`);
  if (problems.length === 0 || mode === 'Ignore') return { value: d.value, warnings: [] };
  if (mode === 'Strict') throw status.strictDecoding(problems, kind);
  return { value: d.value, warnings: problems };
}

/**
 * Decodes a create/update body by its Content-Type: JSON, YAML for curl users, and Kubernetes
 * protobuf when `protobuf` is set (the sandbox's core kinds, which kubectl's typed commands send so).
 */
export async function decodeObjectBody(
  contentType: string | undefined,
  body: unknown,
  mode: FieldValidation = 'Strict',
  kind?: { kind: string; version: string },
  protobuf = false,
): Promise<DecodedBody> {
  const buf = Buffer.isBuffer(body) ? body : Buffer.alloc(0);
  if (buf.length === 0) throw status.badRequest('the request body is empty; expected an object');
  const mt = mediaType(contentType);
  if (mt === 'application/json' || mt === '') return strictness(await decodeJSONInSlices(buf, 'object provided'), mode, kind);
  if (mt === 'application/yaml' || mt === 'application/x-yaml' || mt === 'text/yaml') return strictness(await decodeYAMLInSlices(buf, 'object provided'), mode, kind);
  if (mt === PROTOBUF_CONTENT_TYPE && protobuf) return { value: decodeProtobufObject(buf), warnings: [] };
  throw status.unsupportedMediaType(
    `the body of the request was in an unknown format - accepted media types include: application/json, application/yaml`,
  );
}

export type PatchKind = 'merge' | 'json' | 'strategic' | 'apply';

export function patchKind(contentType: string | undefined): PatchKind {
  const mt = mediaType(contentType);
  if (mt === 'application/merge-patch+json') return 'merge';
  if (mt === 'application/json-patch+json') return 'json';
  if (mt === 'application/strategic-merge-patch+json') return 'strategic';
  if (mt === 'application/apply-patch+yaml') return 'apply';
  throw status.unsupportedPatchType();
}

/** The body of a server-side apply: a (partial) object in YAML or JSON (JSON is YAML). */
export async function decodeApplyPatch(body: unknown, mode: FieldValidation = 'Strict'): Promise<DecodedBody> {
  const buf = Buffer.isBuffer(body) ? body : Buffer.alloc(0);
  if (buf.length === 0) throw status.badRequest('the request body is empty; expected an apply configuration');
  const decoded = strictness(await decodeYAMLInSlices(buf, 'apply configuration'), mode);
  const config = decoded.value;
  if (config === null || typeof config !== 'object' || Array.isArray(config)) {
    throw status.badRequest('the apply configuration must be a YAML or JSON object');
  }
  return decoded;
}

/** Decodes a patch; returns the function that applies it to a current object, and decoding warnings. */
export async function decodePatch(
  kind: Exclude<PatchKind, 'apply'>,
  body: unknown,
  mode: FieldValidation = 'Strict',
  limitBytes = MAX_BODY_BYTES,
  mergeKeys: Record<string, string> = {},
): Promise<{ apply: (current: unknown) => unknown | Promise<unknown>; warnings: string[] }> {
  const buf = Buffer.isBuffer(body) ? body : Buffer.alloc(0);
  if (buf.length === 0) throw status.badRequest('the request body is empty; expected a patch');
  const { value: patch, warnings } = strictness(await decodeJSONInSlices(buf, 'patch'), mode);
  if (kind === 'merge') {
    if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) {
      throw status.badRequest('a merge patch must be a JSON object');
    }
    return { apply: (current) => checkPatchedSizeInSlices(mergePatch(current, patch), limitBytes, current), warnings };
  }
  if (kind === 'strategic') {
    if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) throw status.badRequest('a strategic merge patch must be a JSON object');
    // In slices: a patch of one long list takes long enough to delay everyone else otherwise.
    return { apply: async (current) => checkPatchedSizeInSlices(await inSlices(strategicMergePatchWork(current, patch, mergeKeys)), limitBytes, current), warnings };
  }
  if (!Array.isArray(patch)) throw status.badRequest('a JSON patch must be a JSON array of operations');
  if (patch.length > MAX_JSON_PATCH_OPS) {
    throw new status.StatusError({
      ...status.entityTooLarge(limitBytes).status,
      message: `the allowed maximum operations in a JSON patch is ${MAX_JSON_PATCH_OPS}, got ${patch.length}`,
    });
  }
  const bad = validatePatch(patch as Operation[]);
  if (bad) throw status.badRequest(`invalid JSON patch: operation ${bad.index ?? 0}: ${patchShapeError(bad.name)}`);
  // Patches see the object without its resourceVersion (the registry treats one in the result as
  // the client's precondition), so `replace` of it — kubectl's managedFields migration sends one —
  // works as `add` would.
  for (const op of patch as Array<{ op: string; path: string }>) {
    if (op.op === 'replace' && op.path === '/metadata/resourceVersion') op.op = 'add';
  }
  return { apply: (current) => applyJSONPatch(current, patch as Operation[], limitBytes), warnings };
}

/** fast-json-patch's validation errors, reworded (its messages quote its own internals). */
function patchShapeError(name: string): string {
  switch (name) {
    case 'OPERATION_NOT_AN_OBJECT':
      return 'each operation must be a JSON object';
    case 'OPERATION_OP_INVALID':
      return '"op" must be one of add, remove, replace, move, copy, test';
    case 'OPERATION_PATH_INVALID':
      return '"path" must be a JSON pointer string';
    case 'OPERATION_FROM_REQUIRED':
      return '"from" is required for move and copy';
    case 'OPERATION_VALUE_REQUIRED':
      return '"value" is required for add, replace and test';
    case 'OPERATION_VALUE_CANNOT_CONTAIN_UNDEFINED':
      return '"value" is not valid JSON';
    default:
      return 'the operation is malformed';
  }
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
