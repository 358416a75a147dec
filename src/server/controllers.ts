// Start-up step of run.ts: the in-process controllers (src/controllers/index.ts), once the API
// serves and before the process reports ready (they read and write through the same store), with
// their default source and where their Events go. The standalone sandbox runs none: it is a
// stand-in cluster, not a reverser-apiserver.
import type { Registry as MetricsRegistry } from 'prom-client';
import { kubeconfigYAML } from '../certs/dev-pki.js';
import { LOOPBACK_SERVER_NAME, LOOPBACK_USER, type Loopback } from '../auth/loopback.js';
import type { Authorizer } from '../auth/types.js';
import type { BuiltServer } from '../apiserver/server.js';
import type { RequestMetrics } from '../controllers/client.js';
import type { RunningControllers } from '../controllers/index.js';
import type { AttributionFacts } from '../attribution/types.js';
import type { CommitEngine } from '../git/index.js';
import type { Logger } from '../metrics/logger.js';
import type { Store } from '../storage/index.js';
import type { CompletedConfig } from './config.js';

export interface ControllerInputs {
  store: Store;
  server: BuiltServer;
  engine: () => Promise<CommitEngine>;
  facts: AttributionFacts;
  authorizer: Authorizer;
  metrics: MetricsRegistry;
  requestMetrics: RequestMetrics;
  /** The sandbox's loopback identity, when the sandbox is the mirror's default source. */
  loopback?: Loopback;
  /** The loopback client's own serving certificate (with --tls-cert-file; see run.ts). */
  loopbackServing?: { certPem: string };
  log: Logger;
}

/** Undefined when this process runs no controllers (--controllers=none, or the sandbox command). */
export async function startServerControllers(c: CompletedConfig, inputs: ControllerInputs): Promise<RunningControllers | undefined> {
  const { opts } = c;
  if (opts.mode !== 'serve' || opts.controllers.size === 0) return undefined;
  const { store, server, loopback, loopbackServing, log } = inputs;
  const { startControllers } = await import('../controllers/index.js');
  const { defaultSourceConfig } = await import('../controllers/source/index.js');
  // With --sandbox (and no hosting cluster), the mirror's default source is this server's own sandbox.
  const sandboxKubeconfig = loopback
    ? kubeconfigYAML({
        server: c.url,
        ...(loopbackServing ? { caPem: loopbackServing.certPem, tlsServerName: LOOPBACK_SERVER_NAME } : { caPem: c.tls.rootCAPem }),
        token: loopback.token,
        user: LOOPBACK_USER,
        name: 'reverser-sandbox-loopback',
      })
    : undefined;
  const defaultSource = defaultSourceConfig({ kubeconfigPath: opts.kubeconfig, env: process.env, sandboxKubeconfig });
  const kcpServerURL = c.controllersKcpServerURL;
  // Per-edit attribution: default-source GitTargets join on the sandbox's route when the sandbox is
  // the default source, else on the hosting route when this server takes audit posts.
  const attribution = {
    facts: inputs.facts,
    auditListener: opts.audit.clientCAFile !== undefined,
    sandboxSource: c.sandboxSource,
    graceMs: opts.attribution.graceMs,
    noFactsGraceMs: opts.attribution.noFactsGraceMs,
  };
  const events = await eventRecorder(c, server, log, inputs.metrics);
  return startControllers(
    {
      store, log, engine: inputs.engine, committer: opts.committer, metrics: inputs.metrics, defaultSource, kcpServerURL, workspaceSecrets: c.fromHosting,
      attribution, registries: server.registries, requestMetrics: inputs.requestMetrics, tenantInput: opts.tenantInput, events,
      authority: { authorizer: inputs.authorizer, intervalMs: opts.authorityReverifyIntervalMs },
      leaseTtlMs: opts.replicas.leaseTtlMs, heartbeatMs: opts.replicas.heartbeatMs, soloLeaseTtlMs: opts.replicas.soloLeaseTtlMs,
    },
    opts.controllers,
  );
}

/**
 * Where the controllers' Events go (src/controllers/events/): the hosting cluster when there is one
 * (a kcp GitTarget's own workspace under --kcp-server-url), else the sandbox, else nowhere.
 */
async function eventRecorder(c: CompletedConfig, server: BuiltServer, log: Logger, metrics: ControllerInputs['metrics']) {
  const { CorrelatingRecorder, HostingEventSink, NoEventSink, SandboxEventSink } = await import('../controllers/events/index.js');
  const kcpServerURL = c.controllersKcpServerURL;
  let sink;
  if (c.fromHosting) {
    const { HostingClient } = await import('../auth/hosting.js');
    const { HOSTING_TIMEOUT_MS } = await import('../auth/options.js');
    const client = await HostingClient.create({ kubeconfig: c.opts.kubeconfig, inCluster: !c.opts.kubeconfig, timeoutMs: HOSTING_TIMEOUT_MS, ...(kcpServerURL ? { kcpServerURL } : {}) });
    sink = new HostingEventSink(client, true);
  } else if (c.opts.sandbox) sink = new SandboxEventSink(server.registries);
  else sink = new NoEventSink(log);
  log.info('events', { to: sink.where });
  return new CorrelatingRecorder(sink, log, process.env.POD_NAME || undefined, undefined, { metrics });
}
