// The self reviews kube-apiserver serves, answered from this server's own authenticator and
// authorizer, so `kubectl auth can-i` and `kubectl auth whoami` work against it directly (the
// sandbox, a kcp workspace path, any client not going through kube-apiserver):
//
//   POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews   "may I <verb> <resource>?"
//   POST /apis/authorization.k8s.io/v1/selfsubjectrulesreviews    "what may I do in <namespace>?"
//   POST /apis/authentication.k8s.io/v1/selfsubjectreviews        "who am I?"
//
// Served always: behind the aggregator kube-apiserver answers these paths itself (they are its
// groups, never delegated to an APIService), so only direct clients reach ours. The request itself
// is authorized like any create (kube's system:basic-user grants it to every authenticated user).
// The subject is the request's effective user (the impersonated one when it impersonates).
import type { FastifyReply, FastifyRequest } from 'fastify';
import * as status from '../api/status.js';
import { invalidValue, required, type FieldError } from '../api/field-errors.js';
import { ALL_RULES, pathMatches, SYSTEM_MASTERS } from '../auth/index.js';
import type { Attributes, Authorizer, RuleResolver, SubjectRules, UserInfo } from '../auth/types.js';
import { DEFAULT_CLUSTER } from '../storage/types.js';
import { decodeObjectBody } from './body.js';
import { mediaType } from './negotiation.js';
import { decodeProtobufObject, PROTOBUF_CONTENT_TYPE } from './protobuf-body.js';
import type { RequestInfo } from './request-info.js';
import { send } from './respond.js';

const AUTHZ = 'authorization.k8s.io';
const AUTHN = 'authentication.k8s.io';

interface Review {
  group: string;
  resource: string;
  kind: string;
}
const REVIEWS: Review[] = [
  { group: AUTHZ, resource: 'selfsubjectaccessreviews', kind: 'SelfSubjectAccessReview' },
  { group: AUTHZ, resource: 'selfsubjectrulesreviews', kind: 'SelfSubjectRulesReview' },
  { group: AUTHN, resource: 'selfsubjectreviews', kind: 'SelfSubjectReview' },
];

/** The review `info` addresses (v1 only), or undefined. */
export function reviewOf(info: RequestInfo): Review | undefined {
  if (info.apiVersion !== 'v1') return undefined;
  return REVIEWS.find((r) => r.group === info.apiGroup && r.resource === info.resource);
}

export interface ReviewDeps {
  authorizer: Authorizer;
  rules?: RuleResolver;
  alwaysAllowPaths: string[];
}

type Obj = Record<string, any>;

async function decodeBody(req: FastifyRequest, review: Review): Promise<Obj> {
  const ct = req.headers['content-type'];
  // kubectl sends these as protobuf (its typed client), like its typed create commands.
  const value = mediaType(ct) === PROTOBUF_CONTENT_TYPE
    ? decodeProtobufObject(Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0), [{ apiVersion: `${review.group}/v1`, kind: review.kind }])
    : (await decodeObjectBody(ct, req.body, 'Ignore')).value;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw status.badRequest(`the body must be a ${review.kind} object`);
  const o = value as Obj;
  if ((o.kind !== undefined && o.kind !== review.kind) || (o.apiVersion !== undefined && o.apiVersion !== `${review.group}/v1`)) {
    throw status.badRequest(`the body must be a ${review.group}/v1 ${review.kind}, got ${String(o.apiVersion ?? '?')} ${String(o.kind ?? '?')}`);
  }
  return o;
}

function invalid(review: Review, errs: FieldError[]): status.StatusError {
  return status.invalid({ group: review.group, resource: review.resource, kind: review.kind }, '', errs);
}

const str = (v: unknown): string => (typeof v === 'string' ? v : '');

/** The decision `authorize` in server.ts would make for `attrs`, as a SubjectAccessReviewStatus. */
async function decide(deps: ReviewDeps, attrs: Attributes): Promise<Obj> {
  if (attrs.user.groups.includes(SYSTEM_MASTERS)) return { allowed: true };
  if (!attrs.resourceRequest && pathMatches(deps.alwaysAllowPaths, attrs.path ?? '')) return { allowed: true, reason: 'always-allowed path' };
  try {
    const r = await deps.authorizer.authorize(attrs);
    const out: Obj = { allowed: r.decision === 'allow' };
    if (r.decision === 'deny') out.denied = true;
    if (r.reason) out.reason = r.reason;
    return out;
  } catch (e) {
    // Fail closed, as every check: the error is said, never an allow.
    return { allowed: false, evaluationError: `the authorization check could not be made: ${(e as Error).message}` };
  }
}

async function accessReview(deps: ReviewDeps, review: Review, body: Obj, user: UserInfo, cluster: string): Promise<Obj> {
  const spec: Obj = body.spec && typeof body.spec === 'object' ? body.spec : {};
  const ra: Obj | undefined = spec.resourceAttributes ?? undefined;
  const nra: Obj | undefined = spec.nonResourceAttributes ?? undefined;
  if ((ra === undefined) === (nra === undefined)) {
    throw invalid(review, [invalidValue('spec.resourceAttributes', ra ?? null, 'exactly one of nonResourceAttributes or resourceAttributes must be specified')]);
  }
  const attrs: Attributes = ra
    ? {
        user,
        verb: str(ra.verb),
        resourceRequest: true,
        namespace: str(ra.namespace) || undefined,
        apiGroup: str(ra.group),
        apiVersion: str(ra.version) || undefined,
        resource: str(ra.resource) || undefined,
        subresource: str(ra.subresource) || undefined,
        name: str(ra.name) || undefined,
      }
    : { user, verb: str(nra!.verb), resourceRequest: false, path: str(nra!.path) };
  if (cluster !== DEFAULT_CLUSTER) attrs.cluster = cluster;
  return { apiVersion: `${review.group}/v1`, kind: review.kind, metadata: { creationTimestamp: null }, spec, status: await decide(deps, attrs) };
}

function rulesReview(deps: ReviewDeps, review: Review, body: Obj, user: UserInfo, cluster: string): Obj {
  const namespace = str(body.spec?.namespace);
  if (!namespace) throw invalid(review, [required('spec.namespace', 'no namespace on request')]);
  const c = cluster === DEFAULT_CLUSTER ? undefined : cluster;
  const own: SubjectRules = deps.rules?.rulesFor(user, namespace, c) ?? { resourceRules: [], nonResourceRules: [], incomplete: true };
  // system:masters may do everything (kube's privileged-group authorizer), on top of its other grants.
  const masters = user.groups.includes(SYSTEM_MASTERS) ? ALL_RULES : undefined;
  const st: Obj = {
    resourceRules: [...(masters?.resourceRules ?? []), ...own.resourceRules],
    nonResourceRules: [...(masters?.nonResourceRules ?? []), ...own.nonResourceRules],
    incomplete: own.incomplete,
  };
  if (own.evaluationError) st.evaluationError = own.evaluationError;
  return { apiVersion: `${review.group}/v1`, kind: review.kind, metadata: { creationTimestamp: null }, spec: { namespace }, status: st };
}

function whoAmI(review: Review, body: Obj, user: UserInfo): Obj {
  const userInfo: Obj = { username: user.username };
  if (user.uid) userInfo.uid = user.uid;
  if (user.groups.length) userInfo.groups = [...user.groups];
  if (user.extra && Object.keys(user.extra).length) userInfo.extra = user.extra;
  return { apiVersion: `${review.group}/v1`, kind: review.kind, metadata: { creationTimestamp: null }, status: { userInfo } };
}

/** Answers one review request (already authenticated and authorized as `create` of the review). */
export async function serveReview(deps: ReviewDeps, req: FastifyRequest, reply: FastifyReply, info: RequestInfo, review: Review, user: UserInfo): Promise<void> {
  // Create-only, cluster-scoped, unnamed: anything else has no route, as in kube-apiserver.
  if (info.name || info.subresource || info.namespace) throw status.pathNotFound();
  if (req.method !== 'POST') throw status.methodNotSupported({ group: review.group, resource: review.resource }, info.verb);
  const body = await decodeBody(req, review);
  let out: Obj;
  if (review.resource === 'selfsubjectaccessreviews') out = await accessReview(deps, review, body, user, info.cluster);
  else if (review.resource === 'selfsubjectrulesreviews') out = rulesReview(deps, review, body, user, info.cluster);
  else out = whoAmI(review, body, user);
  send(reply, 201, out);
}
