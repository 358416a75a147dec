// The one module that builds every metav1.Status error. Messages follow
// k8s.io/apimachinery/pkg/api/errors so clients (kubectl, client-go) render them as they would
// for kube-apiserver: `details.kind` is the resource (plural) for NotFound/AlreadyExists/Conflict/
// Forbidden and the Kind for Invalid, and messages use `<resource>.<group>`.
import { type FieldError, fieldErrorBody, fieldErrorString } from './field-errors.js';

export interface StatusCause {
  reason?: string;
  message?: string;
  field?: string;
}

export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  uid?: string;
  causes?: StatusCause[];
  retryAfterSeconds?: number;
}

export interface Status {
  kind: 'Status';
  apiVersion: 'v1';
  metadata: Record<string, never>;
  status: 'Failure' | 'Success';
  message?: string;
  reason?: string;
  details?: StatusDetails;
  code: number;
}

/** An error that carries the Status the client receives. Anything else reaching the top is a 500. */
export class StatusError extends Error {
  readonly status: Status;
  readonly headers: Record<string, string>;
  constructor(status: Status, headers: Record<string, string> = {}) {
    // Without a stack trace: a Status is the answer to a client, not a fault of ours (only other
    // errors have their stack logged, src/apiserver/server.ts), and capturing one was the largest
    // cost of an anonymous request's 401 (~25 µs of ~100; bench/attack "Metrics label cardinality").
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(status.message ?? status.reason ?? 'error');
    Error.stackTraceLimit = limit;
    this.status = status;
    this.headers = headers;
    this.name = 'StatusError';
  }
  get code(): number {
    return this.status.code;
  }
}

/** Identifies the kind of object an error is about. */
export interface GroupResource {
  group: string;
  resource: string;
  kind?: string;
}

/** details.group, omitted for the core group as Go's omitempty does. */
function groupOf(gr: GroupResource): { group?: string } {
  return gr.group ? { group: gr.group } : {};
}

function qualified(gr: GroupResource): string {
  return gr.group ? `${gr.resource}.${gr.group}` : gr.resource;
}

function failure(code: number, reason: string, message: string, details?: StatusDetails): StatusError {
  const status: Status = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code };
  if (details) status.details = details;
  return new StatusError(status);
}

export function notFound(gr: GroupResource, name: string): StatusError {
  return failure(404, 'NotFound', `${qualified(gr)} "${name}" not found`, { name, ...groupOf(gr), kind: gr.resource });
}

/** Unknown paths: the generic "could not find the requested resource". */
export function pathNotFound(): StatusError {
  return failure(404, 'NotFound', 'the server could not find the requested resource', {});
}

export function alreadyExists(gr: GroupResource, name: string): StatusError {
  return failure(409, 'AlreadyExists', `${qualified(gr)} "${name}" already exists`, { name, ...groupOf(gr), kind: gr.resource });
}

export function conflict(gr: GroupResource, name: string, why: string): StatusError {
  return failure(409, 'Conflict', `Operation cannot be fulfilled on ${qualified(gr)} "${name}": ${why}`, {
    name,
    ...groupOf(gr),
    kind: gr.resource,
  });
}

/**
 * A server-side apply conflict (apimachinery errors.NewApplyConflict): 409 Conflict whose causes
 * name each conflicting field and its manager (cause type FieldManagerConflict), without details.name.
 */
export function applyConflict(message: string, causes: StatusCause[]): StatusError {
  return failure(409, 'Conflict', message, { causes });
}

export const OBJECT_MODIFIED = 'the object has been modified; please apply your changes to the latest version and try again';

export function invalid(gr: GroupResource & { kind: string }, name: string, errs: FieldError[]): StatusError {
  const body = errs.length === 1 ? fieldErrorString(errs[0]!) : `[${errs.map(fieldErrorString).join(', ')}]`;
  return failure(422, 'Invalid', `${gr.group ? `${gr.kind}.${gr.group}` : gr.kind} "${name}" is invalid: ${body}`, {
    name,
    ...groupOf(gr),
    kind: gr.kind,
    causes: errs.map((e) => ({ reason: e.type, message: fieldErrorBody(e), field: e.field })),
  });
}

/** Invalid query options (ListOptions, CreateOptions, ...), as apimachinery reports them. */
export function invalidOptions(kind: string, errs: FieldError[]): StatusError {
  const body = errs.length === 1 ? fieldErrorString(errs[0]!) : `[${errs.map(fieldErrorString).join(', ')}]`;
  return failure(422, 'Invalid', `${kind}.meta.k8s.io "" is invalid: ${body}`, {
    group: 'meta.k8s.io',
    kind,
    causes: errs.map((e) => ({ reason: e.type, message: fieldErrorBody(e), field: e.field })),
  });
}

/** A patch that cannot be applied to the object (kube-apiserver's 422 for a failed JSON or strategic merge patch). */
export function patchInvalid(message: string): StatusError {
  return new StatusError({
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: `the server rejected our request due to an error in our request: ${message}`,
    reason: 'Invalid',
    details: { causes: [{ reason: 'FieldValueInvalid', message, field: 'patch' }] },
    code: 422,
  });
}

export function badRequest(message: string): StatusError {
  return failure(400, 'BadRequest', message);
}

export function unauthorized(): StatusError {
  return failure(401, 'Unauthorized', 'Unauthorized');
}

export function forbidden(message: string, details?: StatusDetails): StatusError {
  return failure(403, 'Forbidden', message, details ?? {});
}

/** apiserver's admission.NewForbidden: `<resource> "<name>" is forbidden: <why>`. */
export function admissionForbidden(gr: GroupResource, name: string, why: string, causes?: StatusCause[]): StatusError {
  return failure(403, 'Forbidden', name ? `${qualified(gr)} "${name}" is forbidden: ${why}` : `${qualified(gr)} is forbidden: ${why}`, {
    name,
    ...groupOf(gr),
    kind: gr.resource,
    ...(causes ? { causes } : {}),
  });
}

/** NamespaceLifecycle's refusal of a create in a Terminating namespace (cause NamespaceTerminating). */
export function namespaceTerminating(gr: GroupResource, name: string, namespace: string): StatusError {
  return admissionForbidden(gr, name, `unable to create new content in namespace ${namespace} because it is being terminated`, [
    { reason: 'NamespaceTerminating', message: `namespace ${namespace} is being terminated`, field: 'metadata.namespace' },
  ]);
}

export function methodNotAllowed(): StatusError {
  return failure(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource', {});
}

/** A verb the resource does not support (e.g. a watch of a status subresource): apimachinery's NewMethodNotSupported. */
export function methodNotSupported(gr: GroupResource, verb: string): StatusError {
  return failure(405, 'MethodNotAllowed', `${verb} is not supported on resources of kind ${JSON.stringify(qualified(gr))}`, { ...groupOf(gr), kind: gr.resource });
}

export function notAcceptable(message = 'only the following media types are accepted: application/json, application/yaml'): StatusError {
  return failure(406, 'NotAcceptable', message);
}

export function gone(message: string): StatusError {
  return failure(410, 'Expired', message);
}

export const CONTINUE_TOO_OLD =
  'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.';

export function entityTooLarge(limitBytes: number): StatusError {
  return failure(413, 'RequestEntityTooLarge', `the request body is larger than the limit of ${limitBytes} bytes`);
}

/** A patch whose result would outgrow the body limit (kube-apiserver's RequestEntityTooLarge). */
export function patchTooLarge(limitBytes: number, where: string): StatusError {
  return failure(413, 'RequestEntityTooLarge', `Request entity too large: applying the patch would make the object larger than the limit of ${limitBytes} bytes (stopped at ${where})`);
}

/** Duplicate keys under fieldValidation=Strict, worded as Kubernetes' strict decoding. */
export function strictDecoding(problems: string[], kind?: { kind: string; version: string }): StatusError {
  const body = `strict decoding error: ${problems.join(', ')}`;
  return failure(400, 'BadRequest', kind ? `${kind.kind} in version "${kind.version}" cannot be handled as a ${kind.kind}: ${body}` : body);
}

/** An HTTP/1.1 request the parser refused: the body a client gets instead of the library's. */
export function malformedHTTP(code: 400 | 408 | 431): StatusError {
  if (code === 431) return failure(431, 'RequestHeaderFieldsTooLarge', 'the request headers are larger than the server accepts (16 KiB in total)');
  if (code === 408) return failure(408, 'Timeout', 'the request did not arrive in time; the connection is closed');
  return failure(400, 'BadRequest', 'the request is not valid HTTP/1.1; the connection is closed');
}

export function unsupportedMediaType(message: string): StatusError {
  return failure(415, 'UnsupportedMediaType', message);
}

export const PATCH_MEDIA_TYPES = ['application/json-patch+json', 'application/merge-patch+json', 'application/apply-patch+yaml'];

export function unsupportedPatchType(): StatusError {
  return unsupportedMediaType(
    `the body of the request was in an unknown format - accepted media types include: ${PATCH_MEDIA_TYPES.join(', ')}`,
  );
}

export function serviceUnavailable(message: string, retryAfterSeconds = 1): StatusError {
  const e = failure(503, 'ServiceUnavailable', message, { retryAfterSeconds });
  e.headers['retry-after'] = String(retryAfterSeconds);
  return e;
}

/**
 * 503 for something this server depends on for one request (a tenant's Git remote), without
 * Retry-After: client-go retries a Retry-After 503 up to ten times, which would hold a kubectl for
 * minutes on a remote that is simply down. The server itself is fine.
 */
export function dependencyUnavailable(message: string): StatusError {
  return failure(503, 'ServiceUnavailable', message, {});
}

export function timeout(message: string): StatusError {
  return failure(504, 'Timeout', message, {});
}

/**
 * A resourceVersion ahead of the store: 504 Timeout with retryAfterSeconds 1 and a Retry-After
 * header, as kube-apiserver's NewTooLargeResourceVersionError (the client retries, then re-lists).
 */
export function tooLargeResourceVersion(want: number | string, current: number | string): StatusError {
  const e = failure(504, 'Timeout', `Timeout: Too large resource version: ${want}, current: ${current}`, {
    causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }],
    retryAfterSeconds: 1,
  });
  return new StatusError(e.status, { 'retry-after': '1' });
}

export function internalError(message: string): StatusError {
  return failure(500, 'InternalError', `Internal error occurred: ${message}`, { causes: [{ message }] });
}

export function successStatus(details: StatusDetails): Status {
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', details, code: 200 };
}
