// The server's default source cluster: --kubeconfig when given, else the in-cluster config in a Pod,
// else (development) the sandbox this server serves itself, reached over loopback with the dev
// admin certificate. Undefined when there is none: GitTargets must then name a kubeconfig Secret.
import { KubeConfig } from '../../kubeconfig/kubeconfig.js';

export interface DefaultSourceOptions {
  kubeconfigPath?: string;
  /** Pass process.env; KUBERNETES_SERVICE_HOST selects the in-cluster config. */
  env?: NodeJS.ProcessEnv;
  /** A kubeconfig (YAML) for this server's own sandbox, when it serves one. */
  sandboxKubeconfig?: string;
}

export function defaultSourceConfig(opts: DefaultSourceOptions): KubeConfig | undefined {
  const kc = new KubeConfig();
  if (opts.kubeconfigPath) {
    kc.loadFromFile(opts.kubeconfigPath);
    return kc;
  }
  if (opts.env?.KUBERNETES_SERVICE_HOST) {
    kc.loadFromCluster();
    return kc;
  }
  if (opts.sandboxKubeconfig) {
    kc.loadFromString(opts.sandboxKubeconfig);
    return kc;
  }
  return undefined;
}

/**
 * The default source as logical cluster `cluster` sees it: the same credentials and CA, the server
 * `<kcpServerURL or the default source's server>/clusters/<cluster>` (a kcp workspace; our own
 * sandbox serves the same paths). Only the current context's cluster entry is rewritten.
 */
export function workspaceSourceConfig(base: KubeConfig, cluster: string, kcpServerURL?: string): KubeConfig {
  const current = base.getCurrentCluster();
  if (!current) throw new Error('the default source kubeconfig has no current cluster');
  const root = (kcpServerURL ?? current.server).replace(/\/+$/, '');
  const server = `${root}/clusters/${encodeURIComponent(cluster)}`;
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: base.clusters.map((c) => (c.name === current.name ? { ...c, server } : c)),
    users: base.users,
    contexts: base.contexts,
    currentContext: base.currentContext,
  });
  return kc;
}
