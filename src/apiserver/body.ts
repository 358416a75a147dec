// Request bodies and write options: decoding (JSON, YAML), patch application, and the query
// parameters every write shares (dryRun, fieldManager, fieldValidation, force).
import { parse as parseYAML } from 'yaml';
import fastJsonPatch from 'fast-json-patch';
import { invalidValue, notSupported, tooLong } from '../api/field-errors.js';
import * as status from '../api/status.js';
import type { FieldValidation } from '../api/validation.js';
import type { WriteOptions } from '../registry/registry.js';
import { mediaType } from './negotiation.js';
import { strategicMergePatch } from './strategic-merge-patch.js';
import { decodeProtobufObject, PROTOBUF_CONTENT_TYPE } from './protobuf-body.js';

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

/** Flow collections ({ [) a YAML body may nest; deeper ones would take the parser to the stack limit. */
const MAX_YAML_FLOW_DEPTH = 100;

/**
 * Deepest nesting of YAML flow collections, outside quoted scalars and comments. The YAML parser
 * recurses per level: at the stack limit V8 can abort the process (a regular expression compiled
 * there fails fatally), so a body nested like '{"a":' × 5000 is refused before it is parsed.
 */
function yamlFlowDepth(text: string): number {
  let depth = 0;
  let max = 0;
  let quote = '';
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quote) {
      if (c === '\\' && quote === '"') i++;
      else if (c === quote) quote = '';
      continue;
    }
    if (c === '"' || c === "'") quote = c;
    else if (c === '#' && (i === 0 || /\s/.test(text[i - 1]!))) {
      const nl = text.indexOf('\n', i);
      i = nl < 0 ? text.length : nl;
    } else if (c === '{' || c === '[') max = Math.max(max, ++depth);
    else if ((c === '}' || c === ']') && depth > 0) depth--;
  }
  return max;
}

function decodeYAML(buf: Buffer, what: string): unknown {
  const text = buf.toString('utf8');
  if (yamlFlowDepth(text) > MAX_YAML_FLOW_DEPTH) {
    throw status.badRequest(`the ${what} could not be decoded as YAML: it nests collections deeper than ${MAX_YAML_FLOW_DEPTH} levels`);
  }
  try {
    return parseYAML(text, { maxAliasCount: 100 });
  } catch (e) {
    throw status.badRequest(`the ${what} could not be decoded as YAML: ${(e as Error).message.split('\n')[0]}`);
  }
}

/** Decodes a create/update body by its Content-Type (JSON, YAML for curl users, protobuf for the sandbox's core kinds). */
export function decodeObjectBody(contentType: string | undefined, body: unknown, protobuf = false): unknown {
  const buf = Buffer.isBuffer(body) ? body : Buffer.alloc(0);
  if (buf.length === 0) throw status.badRequest('the request body is empty; expected an object');
  const mt = mediaType(contentType);
  if (mt === 'application/json' || mt === '') return decodeJSON(buf, 'object provided');
  if (mt === 'application/yaml' || mt === 'application/x-yaml' || mt === 'text/yaml') return decodeYAML(buf, 'object provided');
  if (mt === PROTOBUF_CONTENT_TYPE && protobuf) return decodeProtobufObject(buf);
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

export type PatchKind = 'merge' | 'json' | 'strategic';

export function patchKind(contentType: string | undefined): PatchKind {
  const mt = mediaType(contentType);
  if (mt === 'application/merge-patch+json') return 'merge';
  if (mt === 'application/json-patch+json') return 'json';
  if (mt === 'application/strategic-merge-patch+json') return 'strategic';
  if (mt === 'application/apply-patch+yaml') {
    throw status.unsupportedMediaType(
      'server-side apply (application/apply-patch+yaml) is not implemented yet by this server; use kubectl apply without --server-side, or a merge patch',
    );
  }
  throw status.unsupportedPatchType();
}

/** Returns a function that applies the decoded patch to a current object. */
export function decodePatch(kind: PatchKind, body: unknown, mergeKeys: Record<string, string> = {}): (current: unknown) => unknown {
  const buf = Buffer.isBuffer(body) ? body : Buffer.alloc(0);
  if (buf.length === 0) throw status.badRequest('the request body is empty; expected a patch');
  const patch = decodeJSON(buf, 'patch');
  if (kind === 'merge') {
    if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) {
      throw status.badRequest('a merge patch must be a JSON object');
    }
    return (current) => mergePatch(current, patch);
  }
  if (kind === 'strategic') {
    if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) throw status.badRequest('a strategic merge patch must be a JSON object');
    return (current) => strategicMergePatch(current, patch, mergeKeys);
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
  return { dryRun: dryRuns.length > 0, fieldManager, fieldValidation };
}
