// The default size of the git engine's worker pool (--git-workers), apart from the pool itself so
// that parsing flags loads nothing of the engine (src/cli/options.ts).
import { availableParallelism } from 'node:os';

/** Each worker holds its own isomorphic-git and cached clones (tens of MiB), so the default stops here. */
export const MAX_DEFAULT_GIT_WORKERS = 8;

/** One worker per CPU this process may use, at most MAX_DEFAULT_GIT_WORKERS. */
export function defaultGitWorkers(): number {
  return Math.max(1, Math.min(availableParallelism(), MAX_DEFAULT_GIT_WORKERS));
}
