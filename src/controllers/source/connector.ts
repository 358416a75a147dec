// Which cluster a GitTarget mirrors, and with which credentials. Without `spec.source` it is the
// server's default source (the hosting cluster from --kubeconfig or in-cluster config, or the
// sandbox in development). With `spec.source.kubeConfig.secretRef` it is the kubeconfig in that
// Secret, read from the GitTarget's namespace on the hosting cluster — uncached, on every check, so
// a rotation or a deletion is seen within one check interval. The answer carries a version token
// (a hash of the kubeconfig text): the mirror rebuilds its client only when the token changes.
import { createHash } from 'node:crypto';
import type { KubeConfig } from '@kubernetes/client-node';
import { SourceError, type SourceClient } from './client.js';
import { kubeconfigFromSecret, vetKubeconfig, type SecretData } from './kubeconfig.js';

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
  /** A client of the hosting cluster, where kubeconfig Secrets live (usually built from defaultConfig). */
  hosting?: SourceClient;
}

export class SourceConnector {
  constructor(private readonly opts: SourceConnectorOptions) {}

  async connect(namespace: string, source: SourceSpec | undefined): Promise<Connection> {
    const ref = source?.kubeConfig?.secretRef;
    if (!ref) {
      if (!this.opts.defaultConfig) {
        return {
          ok: false,
          reason: 'NoDefaultSource',
          message: 'the server has no default source cluster (start it with --kubeconfig, in a Pod, or with --sandbox), and spec.source names none',
        };
      }
      return { ok: true, config: this.opts.defaultConfig, token: 'default', description: 'the default source' };
    }
    if (!this.opts.hosting) {
      return { ok: false, reason: 'KubeConfigSecretNotFound', message: `Secret "${ref.name}" cannot be read: the server has no hosting cluster to read it from` };
    }
    let secret: SecretData;
    try {
      secret = await this.opts.hosting.getJSON<SecretData>(`/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets/${encodeURIComponent(ref.name)}`);
    } catch (e) {
      if (e instanceof SourceError && e.reason === 'NotFound') {
        return { ok: false, reason: 'KubeConfigSecretNotFound', message: `Secret "${ref.name}" not found in namespace "${namespace}"` };
      }
      const why = e instanceof SourceError ? `${e.reason}: ${e.message}` : String(e);
      return { ok: false, reason: 'KubeConfigSecretUnreadable', message: `Secret "${ref.name}" could not be read (${why})`, transient: true };
    }
    const found = kubeconfigFromSecret(secret, ref.name, ref.key);
    if (!('text' in found)) return { ok: false, ...found };
    const verdict = vetKubeconfig(found.text, ref.name);
    if (!verdict.ok) return { ok: false, reason: verdict.reason, message: verdict.message };
    const token = createHash('sha256').update(found.text).digest('hex').slice(0, 16);
    return { ok: true, config: verdict.config, token, description: `the kubeconfig in Secret "${ref.name}"` };
  }
}
