// What every resource handler receives.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { UserInfo } from '../../auth/types.js';
import type { Registry, RequestContext } from '../../registry/registry.js';
import type { RequestInfo } from '../request-info.js';
import type { Logger } from '../../metrics/logger.js';
import type { ServerMetrics } from '../../metrics/metrics.js';
import type { WriteObserver } from '../write-observer.js';

export interface ServerState {
  /** Why storage is unhealthy (for /readyz), or undefined. Handlers reach objects only through registries. */
  storageHealth(): string | undefined;
  log: Logger;
  /** Resolves when the server begins shutting down; long-running watches end then. */
  shuttingDown: Promise<void>;
  /** Watch timeout when the client gives none (seconds, randomised per watch like kube-apiserver). */
  minRequestTimeoutSeconds: number;
  /** How often a watch that was sent nothing gets a BOOKMARK while the resourceVersion moves (handlers/watch.ts). */
  watchBookmarkIntervalMs: number;
  metrics: ServerMetrics;
  /** Largest request body and largest object a patch may produce, in bytes. */
  maxRequestBytes: number;
}

export interface HandlerContext {
  req: FastifyRequest;
  reply: FastifyReply;
  info: RequestInfo;
  query: URLSearchParams;
  registry: Registry;
  /** The effective user (the impersonated one when the request impersonated). */
  user: UserInfo;
  /** The authenticated user, when the request impersonated `user`. */
  impersonator?: UserInfo;
  state: ServerState;
  /** Told of every stored write before the client is answered (the sandbox's attribution facts). */
  observeWrite?: WriteObserver;
}

export function requestContext(h: HandlerContext): RequestContext {
  return { cluster: h.info.cluster, user: h.user };
}
