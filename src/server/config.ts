// Start-up, after the options (src/cli/options.ts) and before run.ts, as k8s.io/apiserver and
// sample-apiserver split it: newConfig() derives everything the server is built from and only
// reads files (the given serving certificate); complete() fills the defaults, of which the dev PKI
// writes its certificates under --cert-dir, so it runs with the data directory's lock held
// (src/server/index.ts). Nothing here listens, connects or starts a timer.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AuthnOptions } from '../auth/index.js';
import { ensureDevPKI, kubeconfigYAML } from '../certs/dev-pki.js';
import { servedResources } from '../api/resources.js';
import type { ResourceDefinition } from '../api/definition.js';
import type { StoreOptions } from '../storage/index.js';
import type { GitWorkerOptions } from '../git/worker.js';
import type { ServeOptions } from './options.js';

/** Everything the server is built from, derived from the options. */
export interface Config {
  opts: ServeOptions;
  /** What /version answers (the caller's: src/cli/version.ts). */
  version: Record<string, string>;
  /** The host this process's own clients dial: a wildcard bind address is reached on 127.0.0.1. */
  clientHost: string;
  /** The API's URL as printed and written into kubeconfigs. */
  url: string;
  /** The serving certificate of --tls-cert-file, or where complete() generates one. */
  serving: { certPem: string; keyPem: string } | { generate: { certDir: string; dnsNames: string[]; ipAddresses: string[] } };
  /**
   * The sandbox as the mirror's default source (no --kubeconfig, not in a Pod): the mirror reads it
   * over loopback with an in-memory token (src/auth/loopback.ts), and the request path records the
   * sandbox's attribution facts (src/attribution/sandbox.ts).
   */
  sandboxSource: boolean;
  /** A hosting cluster is configured (--kubeconfig, or in-cluster). */
  fromHosting: boolean;
  /** kcp's URL goes with kcp's credentials (--kubeconfig or in-cluster), never with the sandbox's. */
  controllersKcpServerURL?: string;
  resources: ResourceDefinition[];
  store: Omit<StoreOptions, 'warn'>;
  /** The git engine's options but its lease provider, which is the store once it is open. */
  gitEngine: Omit<GitWorkerOptions, 'lease'>;
  /** Worker threads of the git engine (--git-workers; src/git/worker-pool.ts). */
  gitWorkers: number;
}

/** The config with its defaults filled: the serving certificate, the dev CA, the admin kubeconfig. */
export interface CompletedConfig extends Config {
  tls: {
    certPem: string;
    keyPem: string;
    /** The sandbox's kube-root-ca.crt: the CA a client needs to trust this server. */
    rootCAPem: string;
    /** The CA that signed the serving certificate when we generated it (the APIService caBundle). */
    generatedCAFile?: string;
  };
  /** --client-ca-file defaults to the dev CA in dev mode (ServeOptions.devPKI). */
  authn: AuthnOptions;
  /** The dev PKI's admin kubeconfig; in development also the mirror's way into this server's own sandbox. */
  adminKubeconfig?: string;
}

export function newConfig(opts: ServeOptions, version: Record<string, string>): Config {
  const clientHost = opts.bindAddress === '0.0.0.0' || opts.bindAddress === '::' ? '127.0.0.1' : opts.bindAddress;
  const fromHosting = !!opts.kubeconfig || !!process.env.KUBERNETES_SERVICE_HOST;
  return {
    opts,
    version,
    clientHost,
    url: `https://${clientHost.includes(':') ? `[${clientHost}]` : clientHost}:${opts.securePort}`,
    serving:
      opts.tlsCertFile && opts.tlsKeyFile
        ? { certPem: readFileSync(opts.tlsCertFile, 'utf8'), keyPem: readFileSync(opts.tlsKeyFile, 'utf8') }
        : {
            generate: {
              certDir: opts.certDir,
              dnsNames: ['localhost', 'reverser-apiserver', 'reverser-apiserver.reverser-system.svc', 'reverser-apiserver.reverser-system.svc.cluster.local'],
              ipAddresses: ['127.0.0.1', '::1', ...(clientHost !== '127.0.0.1' && /^[\d.]+$/.test(clientHost) ? [clientHost] : [])],
            },
          },
    sandboxSource: opts.mode === 'serve' && opts.sandbox && !opts.kubeconfig && !process.env.KUBERNETES_SERVICE_HOST,
    fromHosting,
    controllersKcpServerURL: fromHosting ? opts.kcpServerURL : undefined,
    resources: servedResources({ configbutler: opts.mode === 'serve', sandbox: opts.sandbox }),
    store: {
      storage: opts.storage,
      dataDir: join(opts.dataDir),
      redisUrl: opts.redisUrl,
      redisOptions: opts.redisPassword ? { password: opts.redisPassword } : undefined,
      redisKeyPrefix: opts.redisKeyPrefix,
      eventLogRetention: opts.eventLogRetention,
    },
    gitEngine: {
      dataDir: opts.dataDir,
      committerName: opts.committer.name,
      committerEmail: opts.committer.email,
      egress: opts.tenantInput.egress,
      allowInsecureCredentials: opts.tenantInput.allowInsecureCredentials,
      allowFileRepositories: opts.tenantInput.allowFileRepositories,
      remoteLimits: { maxResponseBytes: opts.git.maxResponseBytes },
      // A network failure is reported by its first attempt (the GitTarget shows it at once);
      // the windows controller's backoff paces the retries (src/controllers/windows/backoff.ts).
      unreachableRetryMs: 0,
    },
    gitWorkers: opts.git.workers,
  };
}

/** Fills the defaults; generates the dev PKI under --cert-dir when no serving certificate is given. */
export function complete(config: Config): CompletedConfig {
  const { opts } = config;
  if ('certPem' in config.serving) {
    const { certPem, keyPem } = config.serving;
    return { ...config, tls: { certPem, keyPem, rootCAPem: certPem }, authn: opts.authn };
  }
  const { certDir, dnsNames, ipAddresses } = config.serving.generate;
  const pki = ensureDevPKI(certDir, { dnsNames, ipAddresses });
  const tls = { certPem: pki.serving.certPem, keyPem: pki.serving.keyPem, rootCAPem: pki.caPem, generatedCAFile: pki.caFile };
  if (!opts.devPKI) return { ...config, tls, authn: opts.authn };
  return {
    ...config,
    tls,
    authn: { ...opts.authn, clientCAFile: pki.caFile },
    adminKubeconfig: kubeconfigYAML({
      server: config.url,
      caPem: pki.caPem,
      certPem: readFileSync(pki.adminCertFile, 'utf8'),
      keyPem: readFileSync(pki.adminKeyFile, 'utf8'),
      user: 'admin',
      name: opts.mode === 'sandbox' ? 'reverser-sandbox' : 'reverser',
    }),
  };
}
