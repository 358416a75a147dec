// The HTTP server: fastify over TLS (HTTP/2 with HTTP/1.1 fallback), authentication and
// authorization of every request, and dispatch to discovery, OpenAPI, health and resource
// handlers. `buildServer` assembles everything without listening, so tests can inject requests.
import fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { createSecureContext, type SecureContext, type TLSSocket } from 'node:tls';
import type { Http2SecureServer } from 'node:http2';
import type { X509Certificate } from 'node:crypto';
import { RESOURCES, type ResourceDefinition } from '../api/resources.js';
import * as status from '../api/status.js';
import { forbiddenMessage, forbiddenDetails, impersonate, pathMatches, peerChainFromSocket, peerVerificationFromSocket, SYSTEM_MASTERS } from '../auth/index.js';
import { ANONYMOUS_USER, type Attributes, type Authenticator, type Authorizer, type PeerVerification, type RuleResolver, type UserInfo } from '../auth/types.js';
import { Registries, type RegistriesOptions } from '../registry/registries.js';
import type { ResourceStrategy } from '../registry/strategy.js';
import { DEFAULT_CLUSTER, type Store } from '../storage/types.js';
import type { Logger } from '../metrics/logger.js';
import { createServerMetrics, requestLabels, type ServerMetrics } from '../metrics/metrics.js';
import { instrumentStore } from '../metrics/instrumented-store.js';
import { buildOpenAPIDocuments, type OpenAPIDocuments } from './openapi/index.js';
import { buildDiscovery, type DiscoveryDocs } from './discovery.js';
import { MAX_BODY_BYTES } from './body.js';
import { DEFAULT_CONNECTION_LIMITS, NO_ROUTE_SCHEMAS, clientErrorHandler, connectionServerOptions, guardConnections, type ConnectionLimits } from './connections.js';
import { BadClusterError, parseRequestInfo, type RequestInfo } from './request-info.js';
import { send, sendStatus } from './respond.js';
import type { HandlerContext, ServerState } from './handlers/context.js';
import { BOOKMARK_INTERVAL_MS } from './handlers/watch.js';
import type { WriteObserver } from './write-observer.js';
import { reviewOf, serveReview } from './reviews.js';
import { handleGet, handleLegacyWatch, handleList } from './handlers/read.js';
import { handleCreate, handleDelete, handleDeleteCollection, handlePatch, handleUpdate } from './handlers/write.js';
import { serveNonResource, type HealthCheck } from './non-resource.js';

export interface ServerConfig {
  store: Store;
  tls: {
    certPem: string;
    keyPem: string;
    clientCAs(): string[];
    onClientCAsChange?(listener: () => void): void;
    /**
     * A second serving certificate chosen by SNI name: the loopback client's (src/auth/loopback.ts),
     * as kube-apiserver's `apiserver-loopback-client`, so the in-process client verifies this server
     * whatever --tls-cert-file is.
     */
    sni?: { servername: string; certPem: string; keyPem: string };
  };
  authenticator: Authenticator;
  authorizer: Authorizer;
  /** What a user may do, for SelfSubjectRulesReview (src/apiserver/reviews.ts); without it the answer is incomplete. */
  rules?: RuleResolver;
  alwaysAllowPaths: string[];
  /** Non-resource paths an anonymous client may be authorized for (RBAC's system:public-info-viewer). */
  anonymousPaths?: string[];
  log: Logger;
  version: Record<string, string>;
  /** The served resources (default: configbutler.ai/v1alpha1 only). */
  resources?: ResourceDefinition[];
  /** Per-resource strategies beyond what a definition implies, by plural (e.g. CommitRequest's submitter and assert-author). */
  strategies?: Record<string, ResourceStrategy>;
  /** The sandbox's namespace lifecycle (namespaces must exist, kube-root-ca.crt); on when namespaces are served. */
  namespaceLifecycle?: { rootCAPem: string };
  /** Without the sandbox: the hosting cluster's NamespaceLifecycle admission (src/admission/namespace-lifecycle.ts). */
  namespaceAdmission?: RegistriesOptions['namespaceAdmission'];
  minRequestTimeoutSeconds?: number;
  /** How often an idle watch gets a BOOKMARK (default: handlers/watch.ts BOOKMARK_INTERVAL_MS). */
  watchBookmarkIntervalMs?: number;
  healthChecks?: HealthCheck[];
  metrics?: ServerMetrics;
  /** Connection timeouts and the HTTP/2 stream cap (defaults: DEFAULT_CONNECTION_LIMITS). */
  connections?: Partial<ConnectionLimits>;
  /** Largest request body, and largest object a patch may produce (--max-request-bytes). */
  maxRequestBytes?: number;
  /**
   * Called after each stored (not dry-run) write of a resource for which `observes` is true, before
   * the client is answered: the sandbox records attribution facts here (src/attribution/sandbox.ts).
   */
  writeObserver?: { observes(def: ResourceDefinition): boolean; observe: WriteObserver };
}

export interface BuiltServer {
  app: FastifyInstance;
  /** Every served resource's registry; in-process controllers use these under a system identity. */
  registries: Registries;
  openapi: OpenAPIDocuments;
  listen(port: number, host: string): Promise<string>;
  close(): Promise<void>;
}

const ALLOWED_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];
const NONE: ReadonlySet<string> = new Set();

export async function buildServer(cfg: ServerConfig): Promise<BuiltServer> {
  const log = cfg.log;
  let signalShutdown!: () => void;
  const metrics = cfg.metrics ?? createServerMetrics();
  const maxRequestBytes = cfg.maxRequestBytes ?? MAX_BODY_BYTES;
  const store = instrumentStore(cfg.store, metrics.registry);
  const state: ServerState = {
    storageHealth: () => store.unhealthyReason(),
    log,
    shuttingDown: new Promise<void>((r) => (signalShutdown = r)),
    minRequestTimeoutSeconds: cfg.minRequestTimeoutSeconds ?? 1800,
    watchBookmarkIntervalMs: cfg.watchBookmarkIntervalMs ?? BOOKMARK_INTERVAL_MS,
    metrics,
    maxRequestBytes,
  };
  const resources = cfg.resources ?? RESOURCES;
  const registries = new Registries(store, resources, { strategies: cfg.strategies, namespaceLifecycle: cfg.namespaceLifecycle, namespaceAdmission: cfg.namespaceAdmission });
  const discovery: DiscoveryDocs = buildDiscovery(resources, cfg.version);
  const openapi = buildOpenAPIDocuments(resources, { title: 'reverser-apiserver', version: cfg.version.gitVersion ?? 'v0.0.0' });

  const limits: ConnectionLimits = { ...DEFAULT_CONNECTION_LIMITS, ...cfg.connections };
  const sniContext = cfg.tls.sni ? createSecureContext({ cert: cfg.tls.sni.certPem, key: cfg.tls.sni.keyPem, minVersion: 'TLSv1.2' }) : undefined;
  const app = fastify({
    http2: true,
    // Idle sessions are closed by guardConnections (only when no stream is open), not by fastify.
    http2SessionTimeout: 0,
    https: {
      ...connectionServerOptions(limits),
      allowHTTP1: true,
      cert: cfg.tls.certPem,
      key: cfg.tls.keyPem,
      ca: cfg.tls.clientCAs(),
      requestCert: true,
      rejectUnauthorized: false,
      minVersion: 'TLSv1.2',
      ...(sniContext ? { SNICallback: (name: string, cb: (err: Error | null, ctx?: SecureContext) => void) => cb(null, name === cfg.tls.sni!.servername ? sniContext : undefined) } : {}),
    },
    bodyLimit: maxRequestBytes,
    logger: false,
    return503OnClosing: true,
    clientErrorHandler,
    forceCloseConnections: true,
    schemaController: NO_ROUTE_SCHEMAS,
    // URLs fastify cannot decode (bad percent-encoding) must still get a Status body, not fastify's own JSON.
    frameworkErrors: (err: any, _req: FastifyRequest, reply: FastifyReply) => {
      const s = err?.code === 'FST_ERR_BAD_URL' ? status.badRequest('the request URL is malformed: invalid percent-encoding') : status.badRequest(String(err?.message ?? 'bad request'));
      sendStatus(reply, s.status);
    },
  } as any) as unknown as FastifyInstance;

  guardConnections(app.server as unknown as Http2SecureServer, limits, log);

  cfg.tls.onClientCAsChange?.(() => {
    // CA rotation: new handshakes verify against the new bundles, no restart.
    (app.server as unknown as { setSecureContext(o: object): void }).setSecureContext({
      cert: cfg.tls.certPem,
      key: cfg.tls.keyPem,
      ca: cfg.tls.clientCAs(),
      minVersion: 'TLSv1.2',
    });
    log.info('client CA bundles reloaded');
  });

  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: maxRequestBytes }, (_req, body, done) => done(null, body));

  app.setErrorHandler((err: any, req, reply) => {
    if (err instanceof status.StatusError) return sendStatus(reply, err.status, err.headers);
    if (err?.code === 'FST_ERR_CTP_BODY_TOO_LARGE' || err?.statusCode === 413) {
      return sendStatus(reply, status.entityTooLarge(maxRequestBytes).status);
    }
    if (typeof err?.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 500) {
      return sendStatus(reply, status.badRequest(String(err.message ?? 'bad request')).status);
    }
    log.error('internal error', { method: req.method, url: req.url.split('?')[0], error: String(err?.stack ?? err) });
    return sendStatus(reply, status.internalError('an unexpected error occurred; the server logged it').status);
  });
  app.setNotFoundHandler((_req, reply) => sendStatus(reply, status.methodNotAllowed().status));

  app.addHook('onResponse', (req, reply, done) => {
    const info = (req as unknown as { k8s?: RequestInfo }).k8s;
    // The resource label comes from the closed set of served resources (any group, the sandbox's too).
    const served = info?.isResourceRequest && registries.lookup(info.apiGroup, info.apiVersion, info.resource) ? new Set([info.resource]) : NONE;
    const labels = requestLabels({ ...info, method: req.method }, info?.apiGroup ?? '', info?.apiVersion ?? '', served);
    metrics.requests.inc({ ...labels, code: String(reply.statusCode) });
    metrics.requestDuration.observe(labels, reply.elapsedTime / 1000);
    // One line per request at debug, like kube-apiserver's httplog: never the body, the query or a
    // credential (tokens travel in headers, which are not logged).
    if (log.enabled('debug')) {
      const who = (req as unknown as { k8sUser?: UserInfo }).k8sUser;
      log.debug('request', {
        verb: info?.verb ?? req.method.toLowerCase(),
        path: req.url.split('?')[0],
        user: who?.username ?? '',
        code: reply.statusCode,
        latencyMs: Math.round(reply.elapsedTime * 1000) / 1000,
      });
    }
    done();
  });
  const ctx = { cfg, state, registries, discovery, openapi, metrics };
  app.route({
    method: ALLOWED_METHODS,
    url: '/*',
    handler: (req, reply) => handle(ctx, req, reply),
  });

  return {
    app,
    registries,
    openapi,
    async listen(port, host) {
      return app.listen({ port, host });
    },
    async close() {
      signalShutdown();
      await app.close();
    },
  };
}

interface Ctx {
  cfg: ServerConfig;
  state: ServerState;
  registries: Registries;
  discovery: DiscoveryDocs;
  openapi: OpenAPIDocuments;
  metrics: ServerMetrics;
}

// The peer chain of a connection and the handshake's verdict on it never change, so they are read
// once per connection. Over HTTP/2 `req.raw.socket` is a new proxy per stream; the session object
// is what stays the same.
interface Peer {
  chain?: X509Certificate[];
  verified?: PeerVerification;
}
const peerByConnection = new WeakMap<object, Peer>();

function peerOf(req: FastifyRequest): Peer {
  const raw = req.raw as unknown as { socket?: TLSSocket; stream?: { session?: object } };
  const conn: object | undefined = raw.stream?.session ?? raw.socket;
  if (!conn) return {};
  const known = peerByConnection.get(conn);
  if (known) return known;
  const socket = raw.socket;
  const chain = socket && typeof socket.getPeerCertificate === 'function' ? peerChainFromSocket(socket) : undefined;
  const peer: Peer = chain ? { chain, verified: peerVerificationFromSocket(socket!) } : {};
  peerByConnection.set(conn, peer);
  return peer;
}

async function authenticate(ctx: Ctx, req: FastifyRequest, info: RequestInfo): Promise<UserInfo | undefined> {
  const path = info.path;
  const peer = peerOf(req);
  const res = await ctx.cfg.authenticator.authenticate({
    peerChain: peer.chain,
    peerVerified: peer.verified,
    headers: req.headers,
    rawHeaders: req.raw.rawHeaders,
    // A bearer token is reviewed in the logical cluster it addresses (kcp tokens are per workspace).
    ...(info.cluster !== DEFAULT_CLUSTER ? { cluster: info.cluster } : {}),
  });
  // Headers an authenticator consumed (or refused to believe) never reach the handlers.
  for (const h of res.consumedHeaders ?? []) delete req.headers[h.toLowerCase()];
  if (res.kind === 'user') return res.user;
  if (res.kind === 'anonymous' && pathMatches(ctx.cfg.alwaysAllowPaths, path)) return undefined;
  if (res.kind === 'anonymous' && ctx.cfg.anonymousPaths?.includes(path)) return ANONYMOUS_USER;
  throw status.unauthorized();
}

/** Impersonation headers: authorized for the authenticated user, then the request is the impersonated user's. */
async function actAs(ctx: Ctx, req: FastifyRequest, user: UserInfo, info: RequestInfo): Promise<UserInfo> {
  const r = await impersonate(ctx.cfg.authorizer, user, req.raw.rawHeaders, info.cluster === DEFAULT_CLUSTER ? undefined : info.cluster);
  switch (r.kind) {
    case 'none':
      return user;
    case 'bad':
      throw status.badRequest(r.message);
    case 'forbidden':
      throw status.forbidden(forbiddenMessage(r.attrs, r.reason), forbiddenDetails(r.attrs));
    case 'user':
      for (const h of r.consumed) delete req.headers[h.toLowerCase()];
      return r.user;
  }
}

async function authorize(ctx: Ctx, user: UserInfo, info: RequestInfo): Promise<void> {
  if (user.groups.includes(SYSTEM_MASTERS)) return;
  if (!info.isResourceRequest && pathMatches(ctx.cfg.alwaysAllowPaths, info.path)) return;
  const attrs: Attributes = info.isResourceRequest
    ? {
        user,
        verb: info.verb,
        resourceRequest: true,
        namespace: info.namespace || undefined,
        apiGroup: info.apiGroup,
        apiVersion: info.apiVersion,
        resource: info.resource,
        subresource: info.subresource || undefined,
        name: info.authorizationName || undefined,
      }
    : { user, verb: info.verb === 'head' ? 'get' : info.verb, resourceRequest: false, path: info.path };
  // A kcp workspace's requests are authorized by that workspace (as assert-author already was);
  // the default cluster by the hosting cluster; the wildcard only by an explicit grant for it.
  if (info.cluster !== DEFAULT_CLUSTER) attrs.cluster = info.cluster;
  let decision: string;
  let reason: string | undefined;
  try {
    ({ decision, reason } = await ctx.cfg.authorizer.authorize(attrs));
  } catch (e) {
    // Fail closed: an authorizer that cannot answer denies.
    reason = `the authorization check could not be made: ${(e as Error).message}`;
    decision = 'deny';
  }
  if (decision !== 'allow') throw status.forbidden(forbiddenMessage(attrs, reason), forbiddenDetails(attrs));
}

async function handle(ctx: Ctx, req: FastifyRequest, reply: FastifyReply): Promise<void> {
  const url = req.url;
  const q = url.indexOf('?');
  const rawPath = q < 0 ? url : url.slice(0, q);
  const query = new URLSearchParams(q < 0 ? '' : url.slice(q + 1));
  let info: RequestInfo;
  try {
    info = parseRequestInfo(req.method, rawPath, query);
  } catch (e) {
    if (e instanceof BadClusterError) throw status.badRequest(e.message);
    throw e;
  }
  (req as unknown as { k8s?: RequestInfo }).k8s = info;
  const authenticated = await authenticate(ctx, req, info);
  const user = authenticated && (await actAs(ctx, req, authenticated, info));
  if (user) (req as unknown as { k8sUser?: UserInfo }).k8sUser = user;
  if (user) await authorize(ctx, user, info);
  if (!info.isResourceRequest) return serveNonResource(ctx, req, reply, info, query);
  return serveResource(ctx, req, reply, info, query, user!, user !== authenticated ? authenticated : undefined);
}

async function serveResource(
  ctx: Ctx,
  req: FastifyRequest,
  reply: FastifyReply,
  info: RequestInfo,
  query: URLSearchParams,
  user: UserInfo,
  impersonator: UserInfo | undefined,
): Promise<void> {
  const registry = ctx.registries.lookup(info.apiGroup, info.apiVersion, info.resource);
  if (!registry) {
    if (isCRDList(info, req.method) && ctx.cfg.namespaceLifecycle) {
      // The sandbox is a cluster without CustomResourceDefinitions, and says so: kubectl asks before
      // validating a kind whose OpenAPI has no PATCH operation (a create-only RepositoryScan), and
      // would otherwise refuse `kubectl create -f` with "failed to check CRD".
      send(reply, 200, { kind: 'CustomResourceDefinitionList', apiVersion: 'apiextensions.k8s.io/v1', metadata: { resourceVersion: '0' }, items: [] });
      return;
    }
    const review = reviewOf(info);
    if (review) return serveReview({ authorizer: ctx.cfg.authorizer, rules: ctx.cfg.rules, alwaysAllowPaths: ctx.cfg.alwaysAllowPaths }, req, reply, info, review, user);
    throw status.pathNotFound();
  }
  const def = registry.def;
  if (info.subresource && (info.subresource !== 'status' || !def.statusSubresource)) throw status.pathNotFound();
  // A cluster-scoped resource has no namespaced path (a namespace's own path names it twice).
  if (!def.namespaced && info.namespace && !(def.plural === 'namespaces' && info.namespace === info.name)) throw status.pathNotFound();
  const method = req.method === 'HEAD' ? 'GET' : req.method;
  if (info.cluster === '*' && method !== 'GET') throw status.badRequest('writes are not allowed through the wildcard cluster "*"');
  if (def.namespaced && !info.namespace && (info.name || method !== 'GET')) throw status.methodNotAllowed();
  // A create-only review (RepositoryScan): every other verb is refused as kube refuses it for TokenReview.
  if (def.verbs && !(method === 'POST' && !info.name && !info.subresource && !info.legacyWatch && def.verbs.includes('create'))) throw status.methodNotAllowed();
  const observer = ctx.cfg.writeObserver?.observes(def) ? ctx.cfg.writeObserver.observe : undefined;
  const h: HandlerContext = { req, reply, info, query, registry, user, impersonator, state: ctx.state, observeWrite: observer };
  if (info.legacyWatch) {
    // The status subresource has no watch (kube's CRD handler answers this 405).
    if (info.subresource) throw status.methodNotSupported({ group: def.group, resource: def.plural }, 'watch');
    if (method !== 'GET') throw status.methodNotAllowed();
    return handleLegacyWatch(h);
  }
  if (!info.name) {
    if (method === 'GET') return handleList(h);
    if (method === 'POST') return handleCreate(h);
    if (method === 'DELETE') return handleDeleteCollection(h);
    throw status.methodNotAllowed();
  }
  if (info.subresource && !['GET', 'PUT', 'PATCH'].includes(method)) throw status.methodNotAllowed();
  switch (method) {
    case 'GET':
      return handleGet(h);
    case 'PUT':
      return handleUpdate(h);
    case 'PATCH':
      return handlePatch(h);
    case 'DELETE':
      return handleDelete(h);
    default:
      throw status.methodNotAllowed();
  }
}

function isCRDList(info: RequestInfo, method: string): boolean {
  return info.apiGroup === 'apiextensions.k8s.io' && info.apiVersion === 'v1' && info.resource === 'customresourcedefinitions' && !info.name && !info.namespace && method === 'GET' && !info.subresource;
}

export type { Ctx as ServerContext };
