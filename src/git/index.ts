// Public surface of the git engine (docs/git-engine.md). Controllers import from here.
export {
  GitEngine,
  DEFAULT_COMMITTER_EMAIL,
  DEFAULT_COMMITTER_NAME,
  validateBranchName,
  type Change,
  type CommitInput,
  type CommitResult,
  type GitEngineOptions,
  type ObjectRef,
  type Person,
} from './engine.js';
export { GitEngineError, type GitErrorReason } from './errors.js';
export { GitWorker, type CommitEngine, type GitWorkerOptions } from './worker.js';
export { type LeaseProvider } from './lease.js';
export { canonicalPath, normalizeTargetPath, validateTargetPath, type CanonicalPathInput } from './paths.js';
export { credentialsFromSecret, validateRepositoryURL, type GitCredentials, type SecretLike } from './repository-url.js';
export { encodeObject, identityKey, type ObjectIdentity } from './manifest-yaml.js';
