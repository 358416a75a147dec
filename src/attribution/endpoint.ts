// The audit listener: kube-apiserver's webhook audit backend (batch mode) POSTs audit.k8s.io/v1
// EventLists here, over its own HTTPS port, and only with a client certificate that chains to the
// audit CA (--audit-client-ca-file): the TLS handshake refuses every other client, so nothing
// anonymous ever reaches a handler. The CA is a shared trust boundary, not tenant isolation: any
// holder of such a certificate may post for any route (docs/attribution.md).
//
//   POST /audit-webhook/<route>   the route of a source cluster (one DNS-subdomain segment)
//   POST /audit-webhook           the hosting cluster (route HOSTING_ROUTE)
//
// Answers, all metav1.Status: 200 once the facts are stored; 400 for a body that is not an
// EventList (kube-apiserver does not retry it); 413 over --audit-max-request-bytes; 415 for a media
// type other than JSON; 500 when the store fails (kube-apiserver retries the batch; a repeated
// batch stores the same facts again, which changes nothing); 404 for other paths (routes are not
// checked against GitTargets: kube-apiserver does not retry a 404, so an early post would be lost);
// 405 for other methods. Connections get the main listener's guards (handshake timeout, idle close,
// HTTP/2 stream cap) plus a cap on open connections. The CA file is re-read when it changes.
import fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Http2SecureServer } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { FILE_RESYNC_MS, watchFileContent } from '../auth/filewatch.js';
import * as status from '../api/status.js';
import { isDNS1123Subdomain } from '../api/object-meta.js';
import { decodeJSONInSlices } from '../apiserver/decode.js';
import { mediaType } from '../apiserver/negotiation.js';
import { sendStatus } from '../apiserver/respond.js';
import { NO_ROUTE_SCHEMAS, clientErrorHandler, connectionServerOptions, guardConnections, type ConnectionLimits } from '../apiserver/connections.js';
import type { Logger } from '../metrics/logger.js';
import { EVENT_OUTCOMES, eventListItems, factFromEvent, type EventOutcome } from './decode.js';
import type { AuditMetrics, EventListOutcome } from './metrics.js';
import { HOSTING_ROUTE, type AttributionFacts, type AuditFact } from './types.js';

import { AUDIT_MAX_CONNECTIONS, AUDIT_PATH, DEFAULT_AUDIT_MAX_REQUEST_BYTES } from './limits.js';

export { AUDIT_MAX_CONNECTIONS, AUDIT_PATH, DEFAULT_AUDIT_MAX_REQUEST_BYTES, DEFAULT_AUDIT_PORT } from './limits.js';

export interface AuditListenerConfig {
  /**
   * The main server's serving certificate and key, and the file of the CA bundle client
   * certificates must chain to (re-read when it changes: new handshakes use the new bundle).
   */
  tls: { certPem: string; keyPem: string; clientCAFile: string };
  /** How often the CA file is checked for changes (default 2000 ms). */
  caPollMs?: number;
  facts: AttributionFacts;
  log: Logger;
  metrics: AuditMetrics;
  maxRequestBytes?: number;
  connections: ConnectionLimits;
  maxConnections?: number;
}

export interface AuditListener {
  /** The bound port (the chosen one when asked for port 0). */
  port: number;
  close(): Promise<void>;
}

/** The route a path names, or undefined for a path the listener does not serve. */
export function routeOf(path: string): string | undefined {
  if (path === AUDIT_PATH) return HOSTING_ROUTE;
  if (!path.startsWith(`${AUDIT_PATH}/`)) return undefined;
  const seg = path.slice(AUDIT_PATH.length + 1);
  return isDNS1123Subdomain(seg) ? seg : undefined;
}

/** The CA bundle's text when it holds at least one readable certificate; throws otherwise. */
function caBundle(text: string): string {
  if (!text.includes('-----BEGIN CERTIFICATE-----')) throw new Error('no "-----BEGIN CERTIFICATE-----" block');
  new X509Certificate(text);
  return text;
}

export async function startAuditListener(cfg: AuditListenerConfig, port: number, host: string): Promise<AuditListener> {
  const { log, metrics, facts } = cfg;
  const caFile = cfg.tls.clientCAFile;
  let clientCAPem = caBundle(readFileSync(caFile, 'utf8'));
  const maxRequestBytes = cfg.maxRequestBytes ?? DEFAULT_AUDIT_MAX_REQUEST_BYTES;
  for (const o of EVENT_OUTCOMES) metrics.events.inc({ outcome: o }, 0);
  const app = fastify({
    http2: true,
    http2SessionTimeout: 0,
    https: {
      ...connectionServerOptions(cfg.connections),
      allowHTTP1: true,
      cert: cfg.tls.certPem,
      key: cfg.tls.keyPem,
      ca: clientCAPem,
      // mTLS required: a client without a certificate chaining to the audit CA fails the handshake.
      requestCert: true,
      rejectUnauthorized: true,
      minVersion: 'TLSv1.2',
    },
    bodyLimit: maxRequestBytes,
    logger: false,
    return503OnClosing: true,
    clientErrorHandler,
    forceCloseConnections: true,
    schemaController: NO_ROUTE_SCHEMAS,
    frameworkErrors: (_err: unknown, _req: FastifyRequest, reply: FastifyReply) => {
      metrics.eventLists.inc({ outcome: 'not_found' });
      sendStatus(reply, status.pathNotFound().status);
    },
  } as any) as unknown as FastifyInstance;
  const server = app.server as unknown as Http2SecureServer;
  guardConnections(server, cfg.connections, log);
  (server as unknown as { maxConnections: number }).maxConnections = cfg.maxConnections ?? AUDIT_MAX_CONNECTIONS;

  // CA rotation without a restart: new handshakes verify against the new bundle; an unusable file
  // keeps the previous one (and says so).
  const stopWatching = watchFileContent(
    caFile,
    cfg.caPollMs ?? FILE_RESYNC_MS,
    (text) => {
      try {
        const next = caBundle(text);
        if (next === clientCAPem) return;
        clientCAPem = next;
        (server as unknown as { setSecureContext(o: object): void }).setSecureContext({
          cert: cfg.tls.certPem,
          key: cfg.tls.keyPem,
          ca: clientCAPem,
          minVersion: 'TLSv1.2',
        });
        log.info(`audit listener: reloaded --audit-client-ca-file ${caFile}`);
      } catch (e) {
        log.error(`audit listener: --audit-client-ca-file ${caFile} changed but is unusable, keeping the previous CA: ${(e as Error).message}`);
      }
    },
    (e) => log.error(`audit listener: re-reading --audit-client-ca-file ${caFile}: ${e.message}`),
  );

  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: maxRequestBytes }, (_req, body, done) => done(null, body));
  const count = (o: EventListOutcome) => metrics.eventLists.inc({ outcome: o });
  app.setErrorHandler((err: any, _req, reply) => {
    if (err instanceof status.StatusError) return sendStatus(reply, err.status, err.headers);
    if (err?.code === 'FST_ERR_CTP_BODY_TOO_LARGE' || err?.statusCode === 413) {
      count('too_large');
      return sendStatus(reply, status.entityTooLarge(maxRequestBytes).status);
    }
    if (typeof err?.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 500) {
      count('decode_error');
      return sendStatus(reply, status.badRequest(String(err.message ?? 'bad request')).status);
    }
    log.error('audit listener: internal error', { error: String(err?.stack ?? err) });
    return sendStatus(reply, status.internalError('an unexpected error occurred; the server logged it').status);
  });
  app.setNotFoundHandler((_req, reply) => {
    count('not_found');
    sendStatus(reply, status.pathNotFound().status);
  });
  app.route({
    method: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'],
    url: '/*',
    handler: (req, reply) => handle(req, reply),
  });

  let lastStoreWarning = 0;
  async function handle(req: FastifyRequest, reply: FastifyReply): Promise<void> {
    const q = req.url.indexOf('?');
    const route = routeOf(q < 0 ? req.url : req.url.slice(0, q));
    if (route === undefined) {
      count('not_found');
      return void sendStatus(reply, status.pathNotFound().status);
    }
    if (req.method !== 'POST') {
      count('method_not_allowed');
      return void sendStatus(reply, status.methodNotAllowed().status);
    }
    const mt = mediaType(req.headers['content-type']);
    if (mt !== '' && mt !== 'application/json') {
      count('unsupported_media_type');
      return void sendStatus(reply, status.unsupportedMediaType('the audit webhook accepts application/json (an audit.k8s.io/v1 EventList)').status);
    }
    let items: unknown[];
    try {
      const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
      if (body.length === 0) throw status.badRequest('the request body is empty; expected an audit.k8s.io/v1 EventList');
      items = eventListItems((await decodeJSONInSlices(body, 'audit EventList')).value);
    } catch (e) {
      count('decode_error');
      throw e;
    }
    const accepted: AuditFact[] = [];
    const outcomes = new Map<EventOutcome, number>();
    for (const item of items) {
      const r = factFromEvent(item, route);
      outcomes.set(r.outcome, (outcomes.get(r.outcome) ?? 0) + 1);
      if (r.fact) accepted.push(r.fact);
    }
    try {
      if (accepted.length) await facts.put(accepted);
    } catch (e) {
      count('storage_error');
      // Once a minute at most: kube-apiserver retries every batch while the store is down.
      if (Date.now() - lastStoreWarning > 60_000) {
        lastStoreWarning = Date.now();
        log.warn('audit listener: storing facts failed; answering 500 so kube-apiserver retries', { error: (e as Error).message });
      }
      return void sendStatus(reply, status.internalError('the audit facts could not be stored; retry the batch').status);
    }
    for (const [o, n] of outcomes) metrics.events.inc({ outcome: o }, n);
    metrics.eventListSize.observe(items.length);
    count('accepted');
    sendStatus(reply, status.successStatus({}));
  }

  await app.listen({ port, host });
  const bound = (server.address() as AddressInfo).port;
  return {
    port: bound,
    async close() {
      stopWatching();
      await app.close();
    },
  };
}
