// Start-up step: the hosting cluster's NamespaceLifecycle admission (src/admission/namespace-lifecycle.ts),
// on when this server has a hosting cluster (--kubeconfig, or in-cluster) and no sandbox. The sandbox
// keeps its own namespaces (src/registry/namespaces.ts); a standalone server has no namespaces to ask
// and admits every one (docs/api.md#namespaces).
import { HostingClient } from '../auth/hosting.js';
import { NamespaceLifecycle } from '../admission/namespace-lifecycle.js';
import type { Logger } from '../metrics/logger.js';
import type { RegistriesOptions } from '../registry/registries.js';
import type { ServeOptions } from './options.js';

const HOSTING_TIMEOUT_MS = 10_000;

export interface NamespaceAdmission {
  admit: NonNullable<RegistriesOptions['namespaceAdmission']>;
  stop(): void;
}

export async function startNamespaceAdmission(opts: ServeOptions, log: Logger): Promise<NamespaceAdmission | undefined> {
  const hosting = !!opts.kubeconfig || !!process.env.KUBERNETES_SERVICE_HOST;
  if (opts.mode !== 'serve' || opts.sandbox || !hosting) return undefined;
  const client = await HostingClient.create({ kubeconfig: opts.kubeconfig, inCluster: !opts.kubeconfig, timeoutMs: HOSTING_TIMEOUT_MS, kcpServerURL: opts.kcpServerURL });
  const lifecycle = new NamespaceLifecycle(client, { warn: (m, f) => log.warn(m, f) });
  lifecycle.start();
  return {
    admit: (ctx, namespace, target) => lifecycle.admitCreate(ctx.cluster, namespace, target.gr, target.name),
    stop() {
      lifecycle.stop();
      client.close();
    },
  };
}
