// Non-resource endpoints: health, version, discovery and OpenAPI documents.
import type { FastifyReply, FastifyRequest } from 'fastify';
import * as status from '../api/status.js';
import { aggregatedContentType, type Doc } from './discovery.js';
import { V2_PROTOBUF_CONTENT_TYPE, type OpenAPIGroupVersionDoc } from './openapi/index.js';
import { parseAccept, wantsAggregatedDiscovery } from './negotiation.js';
import { sendRaw } from './respond.js';
import type { RequestInfo } from './request-info.js';
import type { DiscoveryDocs } from './discovery.js';
import type { OpenAPIDocuments } from './openapi/index.js';
import type { ServerMetrics } from '../metrics/metrics.js';

export interface HealthCheck {
  name: string;
  /** undefined when healthy, else why not. */
  check(): string | undefined;
  /** Shown after "ok" on ?verbose: a state worth seeing that does not fail the check. */
  info?(): string | undefined;
}

/** What the non-resource endpoints read; the server passes its own context (imports stay one-way). */
export interface NonResourceContext {
  cfg: { healthChecks?: HealthCheck[] };
  state: { storageHealth(): string | undefined };
  discovery: DiscoveryDocs;
  openapi: OpenAPIDocuments;
  metrics: ServerMetrics;
}

const HEALTH_PATHS = new Set(['/healthz', '/livez', '/readyz']);

function health(ctx: NonResourceContext, reply: FastifyReply, path: string, query: URLSearchParams): FastifyReply {
  const checks: HealthCheck[] = [{ name: 'ping', check: () => undefined }];
  if (path === '/readyz') {
    checks.push({ name: 'storage', check: () => ctx.state.storageHealth() });
    checks.push(...(ctx.cfg.healthChecks ?? []));
  }
  const results = checks.map((c) => ({ name: c.name, why: c.check(), info: c.info?.() }));
  const failed = results.filter((r) => r.why !== undefined);
  const verbose = query.has('verbose');
  const kind = path.slice(1);
  let text: string;
  if (verbose || failed.length) {
    const lines = results.map((r) => (r.why === undefined ? `[+]${r.name} ok${r.info ? ` (${r.info})` : ''}` : `[-]${r.name} failed: ${r.why}`));
    lines.push(failed.length ? `${kind} check failed` : `${kind} check passed`);
    text = `${lines.join('\n')}\n`;
  } else text = 'ok';
  return sendRaw(reply, failed.length ? 500 : 200, 'text/plain; charset=utf-8', text, { 'x-content-type-options': 'nosniff' });
}

function sendDoc(req: FastifyRequest, reply: FastifyReply, doc: Doc, contentType: string, extra: Record<string, string> = {}): FastifyReply {
  if (req.headers['if-none-match'] === doc.etag) return reply.code(304).headers({ etag: doc.etag, ...extra }).send();
  return sendRaw(reply, 200, contentType, doc.body, { etag: doc.etag, ...extra });
}

function discoveryRoot(ctx: NonResourceContext, req: FastifyRequest, reply: FastifyReply, core: boolean): FastifyReply {
  const want = wantsAggregatedDiscovery(req.headers.accept);
  if (want === 'none') throw status.notAcceptable();
  if (want === 'v2' || want === 'v2beta1') {
    const docs = core ? ctx.discovery.coreAggregated : ctx.discovery.aggregated;
    return sendDoc(req, reply, docs[want], aggregatedContentType(want), { vary: 'Accept', 'cache-control': 'public' });
  }
  return sendRaw(reply, 200, 'application/json', core ? ctx.discovery.coreVersions.body : ctx.discovery.groupList.body, { vary: 'Accept' });
}

function openapiV2(ctx: NonResourceContext, req: FastifyRequest, reply: FastifyReply): FastifyReply {
  for (const r of parseAccept(req.headers.accept)) {
    if (r.type === 'application/com.github.proto-openapi.spec.v2@v1.0+protobuf' || r.type === 'application/com.github.proto-openapi.spec.v2.v1.0+protobuf') {
      return sendDoc(req, reply, ctx.openapi.v2Protobuf, V2_PROTOBUF_CONTENT_TYPE);
    }
    if (r.type === 'application/json' || r.type === '*/*' || r.type === 'application/*') {
      return sendDoc(req, reply, ctx.openapi.v2Json, 'application/json');
    }
  }
  throw status.notAcceptable('only the following media types are accepted: application/json, application/com.github.proto-openapi.spec.v2@v1.0+protobuf');
}

const V3_PROTOBUF = new Set(['com.github.proto-openapi.spec.v3@v1.0+protobuf', 'com.github.proto-openapi.spec.v3.v1.0+protobuf']);

/**
 * Whether a group-version's OpenAPI v3 may be answered with JSON. kube-openapi's handler3 takes the
 * Accept alternatives by quality, concrete types before wildcards, and serves the first of JSON or
 * protobuf that one matches (a q=0 alternative counts too, as there). We produce no protobuf, so a
 * protobuf alternative is passed over for a later JSON one; none means 406, as kube answers a type it
 * cannot produce.
 */
export function openapiV3AcceptsJSON(accept: string | undefined): boolean {
  const ranges = parseAccept(accept).map((r, i) => {
    const [type = '', sub = ''] = r.type.split('/');
    const q = Number(r.params['q'] ?? '1');
    return { type, sub, q: Number.isFinite(q) ? q : 0, i };
  });
  ranges.sort((a, b) => b.q - a.q || Number(a.type === '*') - Number(b.type === '*') || Number(a.sub === '*') - Number(b.sub === '*') || a.i - b.i);
  for (const r of ranges) {
    if (r.type !== 'application' && r.type !== '*') continue;
    if (r.sub === 'json' || r.sub === '*') return true;
    // A V3_PROTOBUF alternative is what kube would send here; we cannot, so read on.
  }
  return false;
}

function openapiV3GroupVersion(req: FastifyRequest, reply: FastifyReply, query: URLSearchParams, gv: OpenAPIGroupVersionDoc): FastifyReply {
  if (!openapiV3AcceptsJSON(req.headers.accept)) {
    throw new status.StatusError(
      status.notAcceptable(
        `only the following media types are accepted: application/json (this server does not produce ${[...V3_PROTOBUF].map((t) => `application/${t}`).join(' or ')})`,
      ).status,
      { vary: 'Accept' },
    );
  }
  const hash = query.get('hash');
  if (hash !== null && hash !== gv.hash) {
    return reply.code(301).header('location', `/openapi/v3/${gv.path}?hash=${gv.hash}`).send();
  }
  const extra: Record<string, string> = { vary: 'Accept' };
  if (hash !== null) {
    extra['cache-control'] = 'public, immutable';
    extra.expires = new Date(Date.now() + 365 * 24 * 3600 * 1000).toUTCString();
  }
  return sendDoc(req, reply, { body: gv.body, etag: gv.etag }, 'application/json', extra);
}

export async function serveNonResource(
  ctx: NonResourceContext,
  req: FastifyRequest,
  reply: FastifyReply,
  info: RequestInfo,
  query: URLSearchParams,
): Promise<void> {
  const path = info.path.length > 1 ? info.path.replace(/\/+$/, '') : info.path;
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    if (HEALTH_PATHS.has(path) || path.startsWith('/apis') || path.startsWith('/openapi') || path === '/version' || path === '/api' || path.startsWith('/api/')) {
      throw status.methodNotAllowed();
    }
    throw status.pathNotFound();
  }
  if (HEALTH_PATHS.has(path)) {
    health(ctx, reply, path, query);
    return;
  }
  switch (path) {
    case '/metrics':
      sendRaw(reply, 200, ctx.metrics.registry.contentType, await ctx.metrics.registry.metrics());
      return;
    case '/version':
      sendRaw(reply, 200, 'application/json', ctx.discovery.version.body);
      return;
    case '/api':
      discoveryRoot(ctx, req, reply, true);
      return;
    case '/apis':
      discoveryRoot(ctx, req, reply, false);
      return;
    case '/openapi/v2':
      openapiV2(ctx, req, reply);
      return;
    case '/openapi/v3':
      sendDoc(req, reply, ctx.openapi.v3Root, 'application/json');
      return;
  }
  const discovery = ctx.discovery.byPath.get(path);
  if (discovery) {
    sendRaw(reply, 200, 'application/json', discovery.body);
    return;
  }
  const gv = path.startsWith('/openapi/v3/') ? ctx.openapi.v3GroupVersions.get(path.slice('/openapi/v3/'.length)) : undefined;
  if (gv) {
    openapiV3GroupVersion(req, reply, query, gv);
    return;
  }
  throw status.pathNotFound();
}
