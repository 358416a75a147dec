// `reverser-apiserver serve`: options → config → server, then listen. Nothing imports this module.
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { isAbsolute, join, relative } from 'node:path';
import { buildAuthentication, buildAuthorization, type AuthLogger } from '../auth/index.js';
import { buildServer, type BuiltServer } from '../apiserver/server.js';
import { ensureDevPKI, kubeconfigYAML } from '../certs/dev-pki.js';
import { createStore, type Store } from '../storage/index.js';
import { lockDataDir } from '../storage/data-dir-lock.js';
import { createLogger, type Logger } from '../metrics/logger.js';
import { repositoryScanStrategy } from '../registry/repositoryscan-strategy.js';
import { runRepositoryScan } from './repositoryscan.js';
import { secretCredentials } from '../controllers/windows/credentials.js';
import { commitRequestStrategy } from '../registry/commitrequest-strategy.js';
import { gitTargetStrategy } from '../registry/gittarget-strategy.js';
import { withGitTargetQuotas } from '../registry/quota.js';
import { ensureInitialNamespaces } from '../registry/namespaces.js';
import { servedResources } from '../api/resources.js';
import type { ServeOptions } from './options.js';
import { versionInfo } from './version.js';
import type { CommitEngine } from '../git/index.js';
import { createServerMetrics } from '../metrics/metrics.js';
import type { RunningControllers } from '../controllers/index.js';
import { startRegistration, type RunningRegistration } from './registration.js';
import { StoreFacts } from '../attribution/facts-store.js';
import { createAuditMetrics } from '../attribution/metrics.js';
import type { AttributionFacts } from '../attribution/types.js';
import { startNamespaceAdmission } from './namespace-admission.js';
import { sandboxFactRecorder } from '../attribution/sandbox.js';
import { createLoopback, LOOPBACK_SERVER_NAME, LOOPBACK_USER } from '../auth/loopback.js';
import { loopbackServingCertificate } from '../certs/dev-pki.js';
import { SANDBOX_RESOURCES } from '../api/resources.js';

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

export async function serve(opts: ServeOptions, log: Logger = createLogger(opts.logLevel)): Promise<Running> {
  mkdirSync(opts.dataDir, { recursive: true, mode: 0o700 });
  // Before anything is written into the directory (certificates, store, kubeconfig).
  const lock = lockDataDir(opts.dataDir);
  if (lock.tookOver) log.warn('took over a stale data directory lock', { lock: lock.path, previousPid: lock.tookOver.pid, previousHost: lock.tookOver.host });
  try {
    return await serveLocked(opts, log, lock.release);
  } catch (e) {
    lock.release();
    throw e;
  }
}

async function serveLocked(opts: ServeOptions, log: Logger, releaseLock: () => void): Promise<Running> {
  const clientHost = opts.bindAddress === '0.0.0.0' || opts.bindAddress === '::' ? '127.0.0.1' : opts.bindAddress;
  let certPem: string;
  let keyPem: string;
  let devAdmin: { caPem: string; certFile: string; keyFile: string } | undefined;
  // The sandbox's kube-root-ca.crt: the CA a client needs to trust this server.
  let rootCAPem: string;
  /** The CA that signed the serving certificate when we generated it (the APIService caBundle). */
  let generatedCAFile: string | undefined;
  if (opts.tlsCertFile && opts.tlsKeyFile) {
    certPem = readFileSync(opts.tlsCertFile, 'utf8');
    keyPem = readFileSync(opts.tlsKeyFile, 'utf8');
    rootCAPem = certPem;
  } else {
    const pki = ensureDevPKI(opts.certDir, {
      dnsNames: ['localhost', 'reverser-apiserver', 'reverser-apiserver.reverser-system.svc', 'reverser-apiserver.reverser-system.svc.cluster.local'],
      ipAddresses: ['127.0.0.1', '::1', ...(clientHost !== '127.0.0.1' && /^[\d.]+$/.test(clientHost) ? [clientHost] : [])],
    });
    certPem = pki.serving.certPem;
    keyPem = pki.serving.keyPem;
    rootCAPem = pki.caPem;
    generatedCAFile = pki.caFile;
    if (opts.devPKI) {
      opts.authn.clientCAFile = pki.caFile;
      devAdmin = { caPem: pki.caPem, certFile: pki.adminCertFile, keyFile: pki.adminKeyFile };
    }
  }
  const authn = await buildAuthentication(opts.authn, { logger: authLogger(log) });
  // The sandbox as the mirror's default source (no --kubeconfig, not in a Pod): the mirror reads it
  // over loopback with an in-memory token, whatever CA authenticates clients (src/auth/loopback.ts).
  const sandboxSource = opts.mode === 'serve' && opts.sandbox && !opts.kubeconfig && !process.env.KUBERNETES_SERVICE_HOST;
  const loopback = sandboxSource ? createLoopback() : undefined;
  // With --tls-cert-file (whose issuer this process may not have), the loopback client gets its own
  // self-signed serving certificate, in memory and chosen by SNI, as kube-apiserver's loopback
  // client does; with the generated dev PKI it verifies the serving certificate against the dev CA.
  const loopbackServing = loopback && generatedCAFile === undefined ? loopbackServingCertificate(LOOPBACK_SERVER_NAME) : undefined;
  const authz = await buildAuthorization(opts.authz, { logger: authLogger(log) });
  const store = await createStore({
    storage: opts.storage,
    dataDir: join(opts.dataDir),
    redisUrl: opts.redisUrl,
    redisOptions: opts.redisPassword ? { password: opts.redisPassword } : undefined,
    redisKeyPrefix: opts.redisKeyPrefix,
    eventLogRetention: opts.eventLogRetention,
    warn: (m, f) => log.warn(m, f),
  });
  let engine: Promise<CommitEngine> | undefined;
  const git = () =>
    (engine ??= import('../git/worker.js').then(
      ({ GitWorker }) =>
        new GitWorker({
          dataDir: opts.dataDir,
          committerName: opts.committer.name,
          committerEmail: opts.committer.email,
          lease: store,
          egress: opts.tenantInput.egress,
          allowInsecureCredentials: opts.tenantInput.allowInsecureCredentials,
          allowFileRepositories: opts.tenantInput.allowFileRepositories,
          remoteLimits: { maxResponseBytes: opts.git.maxResponseBytes },
          // A network failure is reported by its first attempt (the GitTarget shows it at once);
          // the windows controller's backoff paces the retries (controllers/windows/backoff.ts).
          unreachableRetryMs: 0,
        }),
    ));
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
      certPem,
      keyPem,
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
    version: versionInfo(),
    resources: servedResources({ configbutler: opts.mode === 'serve', sandbox: opts.sandbox }),
    strategies: {
      commitrequests: commitRequestStrategy(authz.authorizer, { personTrailers: opts.personTrailers }),
      gittargets: withGitTargetQuotas(gitTargetStrategy(authz.authorizer), store, opts.quotas),
      repositoryscans: repositoryScanStrategy(
        authz.authorizer,
        // The controllers' own reader once they run (hosting cluster, kcp workspace); the store's before.
        runRepositoryScan({ store, engine: git, credentials: (o) => (controllers?.credentials ?? secretCredentials(store))(o) }),
      ),
    },
    namespaceLifecycle: opts.sandbox ? { rootCAPem } : undefined,
    namespaceAdmission: namespaceAdmission?.admit,
    minRequestTimeoutSeconds: opts.minRequestTimeoutSeconds,
    metrics,
    healthChecks: opts.registration.enabled
      ? [{ name: 'apiservice-registration', check: () => undefined, info: () => registration?.registrar.healthInfo() }]
      : [],
    maxRequestBytes: opts.maxRequestBytes,
    connections: opts.connections,
    // Attribution from the request path: every stored write of a sandbox object records its fact
    // (src/attribution/sandbox.ts) when the sandbox is the mirror's default source.
    writeObserver: sandboxSource ? { observes: (def) => SANDBOX_RESOURCES.includes(def), observe: sandboxFactRecorder(facts) } : undefined,
  });
  // A fresh sandbox has the namespaces a fresh cluster has (default, kube-system, ...).
  if (opts.sandbox) await ensureInitialNamespaces(server.registries);
  await server.listen(opts.securePort, opts.bindAddress);
  const url = `https://${clientHost.includes(':') ? `[${clientHost}]` : clientHost}:${opts.securePort}`;
  log.info('serving', { url, storage: opts.storage, authorizationMode: opts.authz.mode, sandbox: opts.sandbox, mode: opts.mode });
  // Start-up step: the audit listener, once the API serves (its facts go to the same store).
  let audit: { port: number; url: string; close(): Promise<void> } | undefined;
  if (opts.mode === 'serve' && opts.audit.clientCAFile) {
    const { startAuditListener, AUDIT_PATH } = await import('../attribution/endpoint.js');
    const listener = await startAuditListener(
      {
        tls: { certPem, keyPem, clientCAFile: opts.audit.clientCAFile },
        facts,
        log,
        metrics: auditMetrics,
        maxRequestBytes: opts.audit.maxRequestBytes,
        connections: opts.connections,
      },
      opts.audit.port,
      opts.audit.bindAddress,
    );
    const host = opts.audit.bindAddress === '0.0.0.0' || opts.audit.bindAddress === '::' ? '127.0.0.1' : opts.audit.bindAddress;
    const auditUrl = `https://${host.includes(':') ? `[${host}]` : host}:${listener.port}${AUDIT_PATH}`;
    audit = { port: listener.port, url: auditUrl, close: () => listener.close() };
    log.info('serving audit webhook', { url: auditUrl, port: listener.port, factTTL: `${opts.audit.factTtlMs / 1000}s` });
    // Before the kubectl line, which is what scripts and tests wait for: the port is known by then.
    process.stdout.write(`reverser-apiserver audit webhook is serving on ${auditUrl}\n`);
  }
  // The admin kubeconfig of the dev PKI; in development also the mirror's way into this server's own sandbox.
  const adminKubeconfig = devAdmin
    ? kubeconfigYAML({
        server: url,
        caPem: devAdmin.caPem,
        certPem: readFileSync(devAdmin.certFile, 'utf8'),
        keyPem: readFileSync(devAdmin.keyFile, 'utf8'),
        user: 'admin',
        name: opts.mode === 'sandbox' ? 'reverser-sandbox' : 'reverser',
      })
    : undefined;
  // Start-up step: the controllers, once the API serves and before the process reports ready (they read and write through the same store).
  // The standalone sandbox runs none: it is a stand-in cluster, not a reverser-apiserver.
  if (opts.mode === 'serve' && opts.controllers.size > 0) {
    const { startControllers } = await import('../controllers/index.js');
    const { defaultSourceConfig } = await import('../controllers/source/index.js');
    // With --sandbox (and no hosting cluster), the mirror's default source is this server's own sandbox.
    const sandboxKubeconfig = loopback
      ? kubeconfigYAML({
          server: url,
          ...(loopbackServing ? { caPem: loopbackServing.certPem, tlsServerName: LOOPBACK_SERVER_NAME } : { caPem: rootCAPem }),
          token: loopback.token,
          user: LOOPBACK_USER,
          name: 'reverser-sandbox-loopback',
        })
      : undefined;
    const defaultSource = defaultSourceConfig({ kubeconfigPath: opts.kubeconfig, env: process.env, sandboxKubeconfig });
    // kcp's URL goes with kcp's credentials (--kubeconfig or in-cluster), never with the sandbox's.
    const fromHosting = !!opts.kubeconfig || !!process.env.KUBERNETES_SERVICE_HOST;
    const kcpServerURL = fromHosting ? opts.kcpServerURL : undefined;
    // Per-edit attribution: default-source GitTargets join on the sandbox's route when the sandbox is
    // the default source, else on the hosting route when this server takes audit posts.
    const attribution = { facts, auditListener: opts.audit.clientCAFile !== undefined, sandboxSource, graceMs: opts.attribution.graceMs, noFactsGraceMs: opts.attribution.noFactsGraceMs };
    const events = await eventRecorder(opts, fromHosting, kcpServerURL, server, log);
    controllers = await startControllers({
      store, log, engine: git, committer: opts.committer, metrics: metrics.registry, defaultSource, kcpServerURL, workspaceSecrets: fromHosting,
      attribution, registries: server.registries, requestMetrics: metrics, tenantInput: opts.tenantInput, events,
      authority: { authorizer: authz.authorizer, intervalMs: opts.authorityReverifyIntervalMs },
    }, opts.controllers);
  }
  if (adminKubeconfig) {
    const standalone = opts.mode === 'sandbox';
    const kubeconfig = join(opts.dataDir, standalone ? 'sandbox.kubeconfig' : 'admin.kubeconfig');
    // Written aside and renamed into place: a reader polling for the file (a script, a test, a second
    // process) never sees half of it.
    writeFileSync(`${kubeconfig}.tmp`, adminKubeconfig, { mode: 0o600 });
    renameSync(`${kubeconfig}.tmp`, kubeconfig);
    const rel = relative(process.cwd(), kubeconfig);
    const shown = rel.startsWith('..') || isAbsolute(rel) ? kubeconfig : rel;
    process.stdout.write(
      standalone
        ? `reverser-apiserver sandbox is serving on ${url}\nkubectl --kubeconfig ${shown} get namespaces\n`
        : `reverser-apiserver is serving on ${url}\nkubectl --kubeconfig ${shown} get gittargets -A\n`,
    );
  }
  if (opts.registration.enabled) {
    registration = await startRegistration(opts, { generatedCAFile, servingCertPem: certPem }, log, metrics.registry);
  }
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
    url,
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
 * Where the controllers' Events go (src/controllers/events/): the hosting cluster when there is one
 * (a kcp GitTarget's own workspace under --kcp-server-url), else the sandbox, else nowhere.
 */
async function eventRecorder(opts: ServeOptions, fromHosting: boolean, kcpServerURL: string | undefined, server: BuiltServer, log: Logger) {
  const { CorrelatingRecorder, HostingEventSink, NoEventSink, SandboxEventSink } = await import('../controllers/events/index.js');
  let sink;
  if (fromHosting) {
    const { HostingClient } = await import('../auth/hosting.js');
    const { HOSTING_TIMEOUT_MS } = await import('../auth/options.js');
    const client = await HostingClient.create({ kubeconfig: opts.kubeconfig, inCluster: !opts.kubeconfig, timeoutMs: HOSTING_TIMEOUT_MS, ...(kcpServerURL ? { kcpServerURL } : {}) });
    sink = new HostingEventSink(client, true);
  } else if (opts.sandbox) sink = new SandboxEventSink(server.registries);
  else sink = new NoEventSink(log);
  log.info('events', { to: sink.where });
  return new CorrelatingRecorder(sink, log, process.env.POD_NAME || undefined);
}
