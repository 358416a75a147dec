// Git credentials of a GitTarget: `spec.repository.secretRef` names a Secret in the GitTarget's
// namespace, read from our own Store's core `secrets` (the sandbox serves them; a hosting-cluster
// Secret source can replace this function). The Secret's data never reaches a log or a message.
import { GitEngineError } from '../../git/errors.js';
import { credentialsFromSecret, type GitCredentials, type SecretLike } from '../../git/repository-url.js';
import type { KubeObject, Store } from '../../storage/types.js';
import { clusterOf } from '../runtime/index.js';
import type { GitTargetSpec } from '../../api/gittarget.js';

export const SECRETS = { group: '', resource: 'secrets' };

export function secretCredentials(store: Pick<Store, 'get'>) {
  return async (gt: KubeObject): Promise<GitCredentials | undefined> => {
    const name = (gt.spec as GitTargetSpec | undefined)?.repository?.secretRef?.name;
    if (!name) return undefined;
    const ns = gt.metadata.namespace ?? '';
    const secret = await store.get(SECRETS, { cluster: clusterOf(gt), namespace: ns, name });
    if (!secret) throw new GitEngineError('AuthFailed', `the credentials Secret "${name}" was not found in namespace "${ns}"`);
    const c = credentialsFromSecret(secret as unknown as SecretLike);
    if (typeof c === 'string') throw new GitEngineError('AuthFailed', `the credentials Secret "${name}": ${c}`);
    return c;
  };
}
