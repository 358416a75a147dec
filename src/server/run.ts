// Start-up, last step (after options → config → completed config, src/server/config.ts): builds
// the server's parts from the completed config, listens, then starts the audit listener, the
// controllers and the APIService registration, in that order, and gives one ordered shutdown.
import { renameSync, writeFileSync } from 'node:fs';
import { isAbsolute, join, relative } from 'node:path';
import { buildAuthentication, buildAuthorization, type AuthLogger } from '../auth/index.js';
import { createLoopback, LOOPBACK_SERVER_NAME } from '../auth/loopback.js';
import { loopbackServingCertificate } from '../certs/dev-pki.js';
import { buildServer, type BuiltServer } from '../apiserver/server.js';
import { createStore, type Store } from '../storage/index.js';
import type { Logger } from '../metrics/logger.js';
import { createServerMetrics } from '../metrics/metrics.js';
import { repositoryScanStrategy } from '../registry/repositoryscan-strategy.js';
import { commitRequestStrategy } from '../registry/commitrequest-strategy.js';
import { gitTargetStrategy } from '../registry/gittarget-strategy.js';
import { withGitTargetQuotas } from '../registry/quota.js';
import { ensureInitialNamespaces } from '../registry/namespaces.js';
import { GROUP, SANDBOX_RESOURCES } from '../api/resources.js';
import type { CommitEngine } from '../git/index.js';
import type { RunningControllers } from '../controllers/index.js';
import { secretCredentials } from '../controllers/windows/credentials.js';
import { StoreFacts } from '../attribution/facts-store.js';
import { createAuditMetrics } from '../attribution/metrics.js';
import type { AttributionFacts } from '../attribution/types.js';
import { sandboxFactRecorder } from '../attribution/sandbox.js';
import type { CompletedConfig } from './config.js';
import { runRepositoryScan } from './repositoryscan.js';
import { startNamespaceAdmission } from './namespace-admission.js';
import { startRegistration, type RunningRegistration } from './registration.js';
import { startAudit, type RunningAudit } from './audit.js';
import { startServerControllers } from './controllers.js';

/** --schema-compile-delay's default: how long after start-up the server's own schemas are compiled. */
const DEFAULT_SCHEMA_COMPILE_DELAY_MS = 1000;

export interface Running {
  server: BuiltServer;
  /**
   * The git engine controllers commit through: a worker thread (git/worker.ts), one writer per
   * branch via leases in the store. Loaded on first use; the worker starts on the first commit.
   */
  git(): Promise<CommitEngine>;
  /** The store this process serves (benchmarks and tests seed it directly). */
  store: Store;
  /**
   * Attribution facts from the audit log, in the store (every replica reads the same ones, whether
   * or not it runs the audit listener).
   */
  facts: AttributionFacts;
  /** The audit listener, when --audit-client-ca-file is given. */
  audit: { port: number; url: string } | undefined;
  /** The controllers of this replica (none with --controllers=none). */
  controllers: RunningControllers | undefined;
  url: string;
  stop(): Promise<void>;
}

function authLogger(log: Logger): AuthLogger {
  return { info: (m: string) => log.info(m), warn: (m: string) => log.warn(m), error: (m: string) => log.error(m) };
}

/** `releaseLock` runs last in the shutdown: the data directory is this process's until then. */
export async function run(c: CompletedConfig, log: Logger, releaseLock: () => void): Promise<Running> {
  const { opts } = c;
  const authn = await buildAuthentication(c.authn, { logger: authLogger(log) });
  const loopback = c.sandboxSource ? createLoopback() : undefined;
  // With --tls-cert-file (whose issuer this process may not have), the loopback client gets its own
  // self-signed serving certificate, in memory and chosen by SNI, as kube-apiserver's loopback
  // client does; with the generated dev PKI it verifies the serving certificate against the dev CA.
  const loopbackServing = loopback && c.tls.generatedCAFile === undefined ? loopbackServingCertificate(LOOPBACK_SERVER_NAME) : undefined;
  const authz = await buildAuthorization(opts.authz, { logger: authLogger(log) });
  const store = await createStore({ ...c.store, warn: (m, f) => log.warn(m, f) });
  let engine: Promise<CommitEngine> | undefined;
  const git = () => (engine ??= import('../git/worker-pool.js').then(({ GitWorkerPool }) => new GitWorkerPool({ ...c.gitEngine, lease: store }, c.gitWorkers)));
  // Declared before the server is built: the RepositoryScan strategy reads the controllers' credentials once they run.
  let controllers: RunningControllers | undefined;
  const metrics = createServerMetrics();
  const auditMetrics = createAuditMetrics(metrics.registry);
  const facts = new StoreFacts({ store, ttlMs: opts.audit.factTtlMs, metrics: auditMetrics });
  let registration: RunningRegistration | undefined;
  const namespaceAdmission = await startNamespaceAdmission(opts, log);
  const server = await buildServer({
    store,
    tls: {
      certPem: c.tls.certPem,
      keyPem: c.tls.keyPem,
      clientCAs: () => authn.tlsCAs(),
      onClientCAsChange: (l) => authn.onTLSCAsChange(l),
      sni: loopbackServing && { servername: LOOPBACK_SERVER_NAME, certPem: loopbackServing.certPem, keyPem: loopbackServing.keyPem },
    },
    authenticator: loopback ? loopback.wrap(authn.authenticator) : authn.authenticator,
    authorizer: authz.authorizer,
    rules: authz.rules,
    alwaysAllowPaths: authz.alwaysAllowPaths,
    anonymousPaths: authz.anonymousPaths,
    log,
    version: c.version,
    resources: c.resources,
    strategies: {
      commitrequests: commitRequestStrategy(authz.authorizer, { personTrailers: opts.personTrailers }),
      gittargets: withGitTargetQuotas(gitTargetStrategy(authz.authorizer), store, opts.quotas),
      repositoryscans: repositoryScanStrategy(
        authz.authorizer,
        // The controllers' own reader once they run (hosting cluster, kcp workspace); the store's before.
        runRepositoryScan({ store, engine: git, credentials: (o) => (controllers?.credentials ?? secretCredentials(store))(o) }),
      ),
    },
    namespaceLifecycle: opts.sandbox ? { rootCAPem: c.tls.rootCAPem } : undefined,
    namespaceAdmission: namespaceAdmission?.admit,
    minRequestTimeoutSeconds: opts.minRequestTimeoutSeconds,
    watchBookmarkIntervalMs: opts.watchBookmarkIntervalMs,
    metrics,
    healthChecks: opts.registration.enabled
      ? [{ name: 'apiservice-registration', check: () => undefined, info: () => registration?.registrar.healthInfo() }]
      : [],
    maxRequestBytes: opts.maxRequestBytes,
    connections: opts.connections,
    // Attribution from the request path: every stored write of a sandbox object records its fact
    // (src/attribution/sandbox.ts) when the sandbox is the mirror's default source.
    writeObserver: c.sandboxSource ? { observes: (def) => SANDBOX_RESOURCES.includes(def), observe: sandboxFactRecorder(facts) } : undefined,
  });
  // A fresh sandbox has the namespaces a fresh cluster has (default, kube-system, ...).
  if (opts.sandbox) await ensureInitialNamespaces(server.registries);
  await server.listen(opts.securePort, opts.bindAddress);
  log.info('serving', { url: c.url, storage: opts.storage, authorizationMode: opts.authz.mode, sandbox: opts.sandbox, mode: opts.mode });
  const audit: RunningAudit | undefined = await startAudit(c, facts, auditMetrics, log);
  controllers = await startServerControllers(c, {
    store, server, engine: git, facts, authorizer: authz.authorizer, metrics: metrics.registry, requestMetrics: metrics, loopback, loopbackServing, log,
  });
  if (c.adminKubeconfig) publishKubeconfig(c, c.adminKubeconfig);
  if (opts.registration.enabled) {
    registration = await startRegistration(opts, { generatedCAFile: c.tls.generatedCAFile, servingCertPem: c.tls.certPem }, log, metrics.registry);
  }
  // The server's own resources' schemas are compiled --schema-compile-delay after it started,
  // outside any request, instead of inside the first write of each (src/registry/registries.ts
  // compileValidators). Not before ready: start-up time stays as it was.
  const compileDelayMs = opts.schemaCompileDelayMs ?? DEFAULT_SCHEMA_COMPILE_DELAY_MS;
  if (compileDelayMs > 0) setTimeout(() => void server.registries.compileValidators(GROUP), compileDelayMs).unref();
  // One shutdown, however many signals ask for it (Ctrl-C of `npm start` delivers SIGINT, and npm
  // may add SIGTERM): a second call waits for the first instead of returning before the data
  // directory's lock is released.
  let stopping: Promise<void> | undefined;
  return {
    server,
    git,
    store,
    facts,
    audit: audit && { port: audit.port, url: audit.url },
    controllers,
    url: c.url,
    stop() {
      return (stopping ??= shutdown());
    },
  };

  async function shutdown(): Promise<void> {
    await audit?.close();
    // The git engine stops first: a push hanging on a dead remote must not hold the shutdown.
    // Its commits fail as Cancelled and their windows stay in the store for the next process
    // (git/worker.ts close()); the controllers then stop with nothing left waiting on a remote.
    const controllersStopped = controllers?.stop();
    if (engine) await (await engine).close();
    await controllersStopped;
    registration?.stop();
    await server.close();
    namespaceAdmission?.stop();
    authn.close();
    authz.close();
    await store.close();
    releaseLock();
  }
}

/**
 * Writes the dev PKI's admin kubeconfig and prints the line scripts and tests wait for: the last
 * start-up output before registration, so a reader that sees it finds the controllers running.
 */
function publishKubeconfig(c: CompletedConfig, yaml: string): void {
  const standalone = c.opts.mode === 'sandbox';
  const kubeconfig = join(c.opts.dataDir, standalone ? 'sandbox.kubeconfig' : 'admin.kubeconfig');
  // Written aside and renamed into place: a reader polling for the file (a script, a test, a second
  // process) never sees half of it.
  writeFileSync(`${kubeconfig}.tmp`, yaml, { mode: 0o600 });
  renameSync(`${kubeconfig}.tmp`, kubeconfig);
  const rel = relative(process.cwd(), kubeconfig);
  const shown = rel.startsWith('..') || isAbsolute(rel) ? kubeconfig : rel;
  process.stdout.write(
    standalone
      ? `reverser-apiserver sandbox is serving on ${c.url}\nkubectl --kubeconfig ${shown} get namespaces\n`
      : `reverser-apiserver is serving on ${c.url}\nkubectl --kubeconfig ${shown} get gittargets -A\n`,
  );
}
