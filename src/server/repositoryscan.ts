// How the served RepositoryScan (src/registry/repositoryscan-strategy.ts) runs: credentials from
// the Secret the spec names (read as the GitTarget controllers read them), the folders other
// GitTargets claim on the same repository and branch (named only within the requester's own
// namespace), and the scan itself in the git engine's worker, off the event loop.
import type { ScanInput } from '../git/engine.js';
import type { CommitEngine } from '../git/worker.js';
import { GitEngineError } from '../git/errors.js';
import type { GitCredentials } from '../git/repository-url.js';
import type { FolderClaim } from '../analyzer/types.js';
import type { RunScan } from '../registry/repositoryscan-strategy.js';
import type { KubeObject, Store } from '../storage/types.js';
import { repositoryIdentity } from '../model/destination.js';
import * as status from '../api/status.js';

interface ScanSpec {
  repository: { url: string; secretRef?: { name: string } };
  branch?: string;
  path?: string;
  scope?: 'Folder' | 'Repository';
}

const GITTARGETS = { group: 'configbutler.ai', resource: 'gittargets' };

/** Folders of the GitTargets on the same repository and branch (every logical cluster: a remote is one repository whoever names it). */
async function claimsOn(store: Store, cluster: string, namespace: string, spec: ScanSpec, branch: string | undefined): Promise<FolderClaim[]> {
  const want = repositoryIdentity(cluster, namespace, spec.repository.url);
  const { items } = await store.list(GITTARGETS, {});
  const out: FolderClaim[] = [];
  for (const gt of items) {
    const s = gt.spec as { repository?: { url?: string }; branch?: string; path?: string } | undefined;
    if (typeof s?.repository?.url !== 'string' || typeof s.path !== 'string' || gt.metadata.deletionTimestamp) continue;
    const gtCluster = gt.metadata.annotations?.['kcp.io/cluster'] ?? cluster;
    if (repositoryIdentity(gtCluster, gt.metadata.namespace ?? '', s.repository.url) !== want) continue;
    if (branch !== undefined && s.branch !== branch) continue;
    const visible = gtCluster === cluster && gt.metadata.namespace === namespace;
    out.push({ path: s.path, description: visible ? `GitTarget ${gt.metadata.name}` : 'a GitTarget in another namespace' });
  }
  return out;
}

export function runRepositoryScan(deps: {
  store: Store;
  engine: () => Promise<CommitEngine>;
  credentials: (scan: KubeObject) => Promise<GitCredentials | undefined>;
}): RunScan {
  return async (ctx, scan) => {
    const spec = scan.spec as unknown as ScanSpec;
    const namespace = scan.metadata.namespace ?? '';
    try {
      const credentials = await deps.credentials(scan);
      const input: ScanInput = {
        repository: { url: spec.repository.url, credentials, tenant: { cluster: ctx.cluster, namespace } },
        branch: spec.branch,
        path: spec.path ?? '.',
        scope: (spec.scope ?? (spec.path !== undefined ? 'Folder' : 'Repository')) === 'Folder' ? 'folder' : 'repository',
        claims: await claimsOn(deps.store, ctx.cluster, namespace, spec, spec.branch),
      };
      const engine = await deps.engine();
      if (!engine.scan) throw status.serviceUnavailable('the git engine cannot scan repositories');
      return await engine.scan(input);
    } catch (e) {
      if (!(e instanceof GitEngineError)) throw e;
      // The repository could not be read: a Status saying why, never a 500 (the request was well formed).
      if (e.retryable || e.reason === 'Unreachable') throw status.dependencyUnavailable(`the repository could not be read: ${e.message}`);
      throw status.badRequest(`the repository could not be read: ${e.message}`);
    }
  };
}
