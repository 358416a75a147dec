// Git credentials (`spec.repository.secretRef`) when the server has a hosting cluster (--kubeconfig,
// in-cluster, or kcp): the Secret is read where the GitTarget's tenant keeps its Secrets — the
// hosting cluster's namespace for the default cluster, workspace X for a GitTarget in kcp logical
// cluster X — like kubeconfig Secrets. A tenant cannot create Secrets in this server's own store
// (that is only the development sandbox, `fallback`, used when there is no hosting cluster and for
// the wildcard view). The Secret's data never reaches a message.
import { GitEngineError } from '../../git/errors.js';
import { credentialsFromSecret, type GitCredentials, type SecretLike } from '../../git/repository-url.js';
import { DEFAULT_CLUSTER, type KubeObject } from '../../storage/types.js';
import { clusterOf } from '../runtime/index.js';
import { SourceError } from './client.js';
import type { SourceConnector } from './connector.js';
import type { GitTargetSpec } from '../../api/gittarget.js';

export type GitCredentialsOf = (gitTarget: KubeObject) => Promise<GitCredentials | undefined>;

export function workspaceGitCredentials(connector: SourceConnector, fallback: GitCredentialsOf): GitCredentialsOf {
  return async (gt) => {
    const cluster = clusterOf(gt);
    if (cluster === '*') return fallback(gt);
    const name = (gt.spec as GitTargetSpec | undefined)?.repository?.secretRef?.name;
    if (!name) return undefined;
    const ns = gt.metadata.namespace ?? '';
    const where = cluster === DEFAULT_CLUSTER ? `namespace "${ns}" of the hosting cluster` : `namespace "${ns}" of logical cluster "${cluster}"`;
    let secret: SecretLike | undefined;
    try {
      secret = await connector.readSecret(cluster, ns, name);
    } catch (e) {
      // The workspace could not be asked: retried like an unreachable remote.
      const why = e instanceof SourceError ? `${e.reason}: ${e.message}` : String(e);
      throw new GitEngineError('Unreachable', `the credentials Secret "${name}" in ${where} could not be read (${why})`, true);
    }
    if (!secret) throw new GitEngineError('AuthFailed', `the credentials Secret "${name}" was not found in ${where}`);
    const c = credentialsFromSecret(secret);
    if (typeof c === 'string') throw new GitEngineError('AuthFailed', `the credentials Secret "${name}": ${c}`);
    return c;
  };
}
