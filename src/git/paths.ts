// File layout in the repository (docs/git-engine.md).
import { normalizeTargetPath, validateTargetPath } from '../model/destination.js';

// The folder rules live in the shared model (the API validates GitTargets with them); re-exported here.
export { normalizeTargetPath, validateTargetPath };

export interface CanonicalPathInput {
  /** The GitTarget folder ("." or "" for the root). */
  path: string;
  /** Empty or undefined for cluster-scoped objects. */
  namespace?: string;
  /** Empty or undefined for the core group. */
  group?: string;
  /** Plural resource name, e.g. "configmaps". */
  resource: string;
  name: string;
}

/** `{path}/{namespace or _cluster}/{group, omitted for core}/{resource}/{name}.yaml` */
export function canonicalPath(input: CanonicalPathInput): string {
  // `_cluster` cannot clash with a namespace: namespaces may not contain "_".
  const segments = [normalizeTargetPath(input.path), input.namespace || '_cluster', input.group ?? '', input.resource, `${input.name}.yaml`];
  return segments.filter((s) => s !== '').join('/');
}
