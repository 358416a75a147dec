// One folder, one GitTarget: which GitTargets claim equal or nested folders of the same
// repository and branch, and which claim wins. The established claim (a GitTarget that has
// committed into its folder) wins over a pending one; creation time, then uid, only break ties.
// The losers are refused with Validated=False/PathConflict by the mirror (controller.ts) and
// never commit; deleting the winner requeues them. The overlap rule is the acceptance gate's own
// (src/analyzer/folder-rules.ts), so `reverser-apiserver analyze` and the served RepositoryScan
// report the same conflicts.
import type { KubeObject } from '../../storage/types.js';
import { foldersOverlap, pathConflictFinding } from '../../analyzer/folder-rules.js';
import { clusterOf, keyOf } from '../runtime/index.js';
import { repositoryIdentity } from '../../model/destination.js';

interface Claim {
  key: string;
  cluster: string;
  namespace: string;
  name: string;
  uid: string;
  path: string;
  created: string;
  established: boolean;
}

function claimOf(o: KubeObject): { group: string; claim: Claim } | undefined {
  const spec = o.spec as { repository?: { url?: unknown }; branch?: unknown; path?: unknown } | undefined;
  const url = spec?.repository?.url;
  if (typeof url !== 'string' || typeof spec?.branch !== 'string' || typeof spec?.path !== 'string' || o.metadata.deletionTimestamp) return undefined;
  const cluster = clusterOf(o);
  const namespace = o.metadata.namespace ?? '';
  const status = o.status as { lastCommit?: unknown } | undefined;
  return {
    group: `${repositoryIdentity(cluster, namespace, url)}\0${spec.branch}`,
    claim: {
      key: keyOf(o, cluster),
      cluster,
      namespace,
      name: o.metadata.name ?? '',
      uid: o.metadata.uid ?? '',
      path: spec.path,
      created: o.metadata.creationTimestamp ?? '',
      established: !!status?.lastCommit,
    },
  };
}

function sameClaim(a: Claim, b: Claim): boolean {
  return a.path === b.path && a.established === b.established && a.created === b.created && a.uid === b.uid;
}

/** True when claim `a` wins over claim `b`. */
function wins(a: Claim, b: Claim): boolean {
  if (a.established !== b.established) return a.established;
  if (a.created !== b.created) return a.created < b.created;
  return a.uid < b.uid;
}

export interface PathConflict {
  /** For the condition: names the winner only when it is in the same logical cluster and namespace. */
  message: string;
}

export class PathClaims {
  /** repository + branch → GitTarget key → its claim */
  private readonly groups = new Map<string, Map<string, Claim>>();
  private readonly groupOf = new Map<string, string>();

  /**
   * Records a GitTarget's claim. Returns the keys of the GitTargets whose verdict may change: those
   * overlapping the old or new folder, and only when the claim changed (a status write that leaves
   * it alone requeues nobody, so a repository shared by thousands of tenants costs nothing).
   */
  upsert(o: KubeObject): string[] {
    const key = keyOf(o, clusterOf(o));
    const c = claimOf(o);
    const group = this.groupOf.get(key);
    const old = group === undefined ? undefined : this.groups.get(group)?.get(key);
    if (c && old && group === c.group && sameClaim(old, c.claim)) return [];
    const affected = this.remove(key);
    if (!c) return affected;
    let g = this.groups.get(c.group);
    if (!g) this.groups.set(c.group, (g = new Map()));
    g.set(key, c.claim);
    this.groupOf.set(key, c.group);
    const overlapping = [...g.values()].filter((x) => x.key !== key && foldersOverlap(x.path, c.claim.path)).map((x) => x.key);
    return [...new Set([...affected, ...overlapping])];
  }

  /** Forgets a GitTarget's claim; returns the keys of the others whose folders overlapped it. */
  remove(key: string): string[] {
    const group = this.groupOf.get(key);
    if (group === undefined) return [];
    this.groupOf.delete(key);
    const g = this.groups.get(group)!;
    const mine = g.get(key)!;
    g.delete(key);
    if (g.size === 0) this.groups.delete(group);
    return [...g.values()].filter((x) => foldersOverlap(x.path, mine.path)).map((x) => x.key);
  }

  /** The conflict that refuses this GitTarget's claim, if another claim wins over it. */
  conflictFor(key: string): PathConflict | undefined {
    const group = this.groupOf.get(key);
    const g = group === undefined ? undefined : this.groups.get(group);
    const mine = g?.get(key);
    if (!g || !mine) return undefined;
    const winners = [...g.values()].filter((c) => c.key !== key && foldersOverlap(c.path, mine.path) && wins(c, mine));
    if (!winners.length) return undefined;
    const w = winners.sort((a, b) => (wins(a, b) ? -1 : 1))[0];
    // Across namespaces or logical clusters the requester may not be able to read the winner: say
    // that one exists, never its name.
    const visible = w.cluster === mine.cluster && w.namespace === mine.namespace;
    const description = visible ? `GitTarget ${w.name}${w.established ? ' (it has committed there)' : ' (created earlier)'}` : 'a GitTarget in another namespace';
    return { message: pathConflictFinding(mine.path, { path: w.path, description }).message + '; delete one of them, or choose a folder that does not overlap' };
  }
}
