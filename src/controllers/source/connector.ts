// Which cluster a GitTarget mirrors, and with which credentials. Without `spec.source` it is the
// server's default source (the hosting cluster from --kubeconfig or in-cluster config, or the
// sandbox in development). With `spec.source.kubeConfig.secretRef` it is the kubeconfig in that
// Secret, read from the GitTarget's namespace on the hosting cluster — uncached, on every check, so
// a rotation or a deletion is seen within one check interval. The answer carries a version token
// (a hash of the kubeconfig text): the mirror rebuilds its client only when the token changes.
//
// A GitTarget in a kcp logical cluster X belongs to workspace X: its default source is workspace X
// (`<kcp URL>/clusters/X`, with the default source's credentials) and its kubeconfig Secrets are
// read there, never from the hosting cluster's default view or from another workspace.
import { createHash } from 'node:crypto';
import type { KubeConfig } from '../../kubeconfig/kubeconfig.js';
import { DEFAULT_CLUSTER } from '../../storage/types.js';
import { SourceClient, SourceError } from './client.js';
import { kubeconfigFromSecret, vetKubeconfig, type KubeConfigVerdict, type SecretData, type VetOptions } from './kubeconfig.js';
import { workspaceSourceConfig } from './default.js';

export interface SourceSpec {
  kubeConfig?: { secretRef: { name: string; key?: string } };
}

export type Connection =
  | { ok: true; config: KubeConfig; token: string; description: string }
  | {
      ok: false;
      reason: string;
      message: string;
      /** The refusal may go away by itself (the hosting cluster could not be asked): Validated is Unknown, not False. */
      transient?: boolean;
    };

export interface SourceConnectorOptions {
  /** The default source; undefined when the server has none (no --kubeconfig, not in a Pod, no sandbox). */
  defaultConfig?: KubeConfig;
  /**
   * kcp's base URL (--kcp-server-url): a logical cluster's default source and Secrets are at
   * `<this>/clusters/<name>`. Undefined = the default source's server.
   */
  kcpServerURL?: string;
  /** --allow-insecure-credentials and the --egress-* policy, for kubeconfig Secrets (kubeconfig.ts). */
  vet?: VetOptions;
}

/** Verdicts kept by the kubeconfig text's hash: a Secret re-read every recheck is not re-parsed. */
const VERDICT_CACHE_SIZE = 512;

/** A logical cluster's view of the default source: its config and a client for its Secrets. */
interface Workspace {
  config: KubeConfig;
  secrets: SourceClient;
}

export class SourceConnector {
  private readonly workspaces = new Map<string, Workspace>();
  private readonly verdicts = new Map<string, KubeConfigVerdict>();

  constructor(private readonly opts: SourceConnectorOptions) {}

  /** The default source as seen by logical cluster `cluster` (built once per cluster). */
  private workspace(cluster: string): Workspace | undefined {
    const base = this.opts.defaultConfig;
    if (!base) return undefined;
    let w = this.workspaces.get(cluster);
    if (!w) {
      const config = cluster === DEFAULT_CLUSTER ? base : workspaceSourceConfig(base, cluster, this.opts.kcpServerURL);
      w = { config, secrets: new SourceClient(config) };
      this.workspaces.set(cluster, w);
    }
    return w;
  }

  /**
   * Where a GitTarget in `namespace` of logical cluster `cluster` mirrors from. Without
   * spec.source: the default source (for a kcp logical cluster: that workspace). With a kubeconfig
   * Secret: the Secret is read from the same place.
   */
  async connect(namespace: string, source: SourceSpec | undefined, cluster: string = DEFAULT_CLUSTER): Promise<Connection> {
    const ref = source?.kubeConfig?.secretRef;
    const inWorkspace = cluster === DEFAULT_CLUSTER ? '' : ` in logical cluster "${cluster}"`;
    const ws = this.workspace(cluster);
    if (!ref) {
      if (!ws) {
        return {
          ok: false,
          reason: 'NoDefaultSource',
          message: 'the server has no default source cluster (start it with --kubeconfig, in a Pod, or with --sandbox), and spec.source names none',
        };
      }
      return cluster === DEFAULT_CLUSTER
        ? { ok: true, config: ws.config, token: 'default', description: 'the default source' }
        : { ok: true, config: ws.config, token: 'default', description: `logical cluster "${cluster}" of the default source (${ws.secrets.server})` };
    }
    if (!ws) {
      return { ok: false, reason: 'KubeConfigSecretNotFound', message: `Secret "${ref.name}" cannot be read: the server has no hosting cluster to read it from` };
    }
    let secret: SecretData;
    try {
      secret = await ws.secrets.getJSON<SecretData>(`/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets/${encodeURIComponent(ref.name)}`);
    } catch (e) {
      if (e instanceof SourceError && e.reason === 'NotFound') {
        return { ok: false, reason: 'KubeConfigSecretNotFound', message: `Secret "${ref.name}" not found in namespace "${namespace}"${inWorkspace}` };
      }
      const why = e instanceof SourceError ? `${e.reason}: ${e.message}` : String(e);
      return { ok: false, reason: 'KubeConfigSecretUnreadable', message: `Secret "${ref.name}" could not be read (${why})`, transient: true };
    }
    const found = kubeconfigFromSecret(secret, ref.name, ref.key);
    if (!('text' in found)) return { ok: false, ...found };
    const digest = createHash('sha256').update(found.text).digest('hex');
    const token = digest.slice(0, 16);
    const memo = `${digest}\0${ref.name}`;
    let verdict = this.verdicts.get(memo);
    if (!verdict) {
      verdict = vetKubeconfig(found.text, ref.name, this.opts.vet);
      if (this.verdicts.size >= VERDICT_CACHE_SIZE) this.verdicts.delete(this.verdicts.keys().next().value!);
      this.verdicts.set(memo, verdict);
    }
    if (!verdict.ok) return { ok: false, reason: verdict.reason, message: verdict.message };
    return { ok: true, config: verdict.config, token, description: `the kubeconfig in Secret "${ref.name}"` };
  }

  /**
   * A Secret of logical cluster `cluster` (the default source itself for the default cluster);
   * undefined when it does not exist or there is no default source. Other failures reject (SourceError).
   */
  async readSecret(cluster: string, namespace: string, name: string): Promise<SecretData | undefined> {
    const ws = this.workspace(cluster);
    if (!ws) return undefined;
    try {
      return await ws.secrets.getJSON<SecretData>(`/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets/${encodeURIComponent(name)}`);
    } catch (e) {
      if (e instanceof SourceError && e.reason === 'NotFound') return undefined;
      throw e;
    }
  }

  close(): void {
    for (const w of this.workspaces.values()) w.secrets.close();
    this.workspaces.clear();
  }
}
