// What the git engine (engine.ts) is asked and answers: its options, a commit's input (changes,
// author, committer, message), a folder listing's and a scan's, and the outcome of a commit.
import type { HttpClient } from 'isomorphic-git';
import type { KubeObject } from '../model/object.js';
import type { RemoteLimits } from './remote-limits.js';
import type { LeaseProvider } from './lease.js';
import type { ObjectIdentity } from './manifest-yaml.js';
import type { GitCredentials, RepositoryTenant } from './repository-url.js';
import type { EgressOptions } from '../net/egress.js';
import type { FolderClaim } from '../analyzer/types.js';

export interface GitEngineOptions {
  /** `<data-dir>`: clones go to `<data-dir>/cache`, `local:<name>` repositories to `<data-dir>/git/<name>.git`. */
  dataDir: string;
  /** `--committer-name` / `--committer-email`; used when a commit names no committer. */
  committerName?: string;
  committerEmail?: string;
  /** One writer per (repository, branch) across processes. Without it, only the push CAS protects. */
  lease?: LeaseProvider;
  /** This process's lease holder id (default: hostname/pid/random). */
  holder?: string;
  /**
   * TTL of the branch lease (default BRANCH_LEASE_TTL_MS). A writer that crashed mid-commit holds
   * the branch until it expires, so it is the GitTarget lease's TTL: a takeover waits for both at once.
   */
  leaseTtlMs?: number;
  /** Total time one commit may spend retrying conflicts and network errors before it reports why. */
  retryTimeoutMs?: number;
  /**
   * Of that, how long network errors and 5xx are retried inside the commit (default: retryTimeoutMs).
   * The server sets 0: the first failed attempt is reported, so the GitTarget shows it at once and
   * the controller's backoff (controllers/windows/backoff.ts) paces the retries.
   */
  unreachableRetryMs?: number;
  retryInitialDelayMs?: number;
  retryMaxDelayMs?: number;
  /** Size cap and time limits of every HTTP exchange with a remote (remote-limits.ts). */
  remoteLimits?: Partial<RemoteLimits>;
  http?: HttpClient;
  /** Where HTTP remotes may be (--egress-*); the built-in link-local rule always applies. */
  egress?: EgressOptions;
  /** --allow-insecure-credentials: credentials may go to an http:// remote (development only). */
  allowInsecureCredentials?: boolean;
  /** --allow-file-repositories: a tenant's GitTarget may name a file:// path on the server's disk. */
  allowFileRepositories?: boolean;
}

export interface Person {
  name: string;
  email: string;
  /** Default: now. */
  time?: Date;
  /** Minutes east of UTC; default 0. */
  timezoneOffset?: number;
}

export type ObjectRef = ObjectIdentity;

export type Change =
  /** `resource` is the plural used in the canonical path (default: a naive plural of the kind). */
  | { op: 'write'; object: KubeObject; resource?: string }
  | { op: 'delete'; ref: ObjectRef };

/**
 * A repository as a GitTarget names it. `tenant` (the GitTarget's logical cluster and namespace)
 * partitions `local:` names and marks the input as a tenant's: file:// then needs allowFileRepositories.
 */
export interface RepositoryInput {
  url: string;
  credentials?: GitCredentials;
  tenant?: RepositoryTenant;
}

export interface CommitInput {
  repository: RepositoryInput;
  branch: string;
  /** GitTarget path: "." or "" is the root. */
  folder: string;
  changes: Change[];
  author: Person;
  committer?: Person;
  message: string;
}

/** A folder of a branch, as listFolder reads it. */
export interface FolderInput {
  repository: RepositoryInput;
  branch: string;
  folder: string;
}

/** A RepositoryScan's question: the acceptance gate over a branch of a repository. */
export interface ScanInput {
  repository: RepositoryInput;
  /** Default: the repository's default branch. */
  branch?: string;
  /** '' or '.' is the root. */
  path: string;
  scope: 'folder' | 'repository';
  claims?: FolderClaim[];
}

export type CommitResult =
  | { outcome: 'Committed'; sha: string; attempts: number; objectsWritten: number; timings?: CommitTimings }
  | { outcome: 'AlreadyPresent'; sha?: string; attempts: number };

/** Where the last attempt of a commit spent its time (ms), for the committed window's log line. */
export interface CommitTimings {
  /** Wall-clock ms (epoch) at which this engine began the commit: after the handoff from the main thread and any commit ahead of it on the same repository. */
  startedAt: number;
  sync: number;
  build: number;
  write: number;
  push: number;
}
