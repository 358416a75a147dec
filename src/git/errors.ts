// Typed failures of a commit, shaped so a GitTarget or CommitRequest condition can say why.
import { EGRESS_DENIED } from '../net/egress.js';

export type GitErrorReason =
  | 'AuthFailed' // credentials refused (401/403): never retried
  | 'NotFound' // repository does not exist (404, missing file:// path)
  | 'Unreachable' // network error or 5xx, still failing when the retry budget ran out
  | 'Conflict' // the branch kept moving (or another writer kept the lease) until the budget ran out
  | 'LeaseLost' // this process lost the (repository, branch) lease; it stopped writing
  | 'Rejected' // the server refused the push for another reason (a hook, a protected branch)
  | 'Invalid' // bad input: URL, branch, folder or object
  | 'FolderRefused' // the folder fails the acceptance gate (src/analyzer): nothing is committed into it
  | 'EgressDenied' // the remote's address is refused by the egress policy (src/net/egress.ts)
  | 'InsecureCredentials'; // credentials would go over plain http:// (--allow-insecure-credentials not set)

export class GitEngineError extends Error {
  constructor(
    readonly reason: GitErrorReason,
    message: string,
    readonly retryable = false,
  ) {
    super(message);
    this.name = 'GitEngineError';
  }
}

interface ErrorLike {
  code?: string;
  message?: string;
  data?: { statusCode?: number; statusMessage?: string; reason?: string; result?: { refs?: Record<string, { ok: boolean; error?: string }> } };
  cause?: unknown;
}

const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'EPIPE', 'ECONNABORTED', 'UND_ERR_SOCKET', 'ERR_TIMEOUT']);

/** Maps an isomorphic-git / network error to a typed one; `where` names the repository. */
export function classifyError(err: unknown, where: string): GitEngineError {
  if (err instanceof GitEngineError) return err;
  const e = (err ?? {}) as ErrorLike;
  const msg = e.message ?? String(err);
  if (e.code === EGRESS_DENIED || (e.cause as ErrorLike | undefined)?.code === EGRESS_DENIED) {
    return new GitEngineError('EgressDenied', `${where}: ${e.code === EGRESS_DENIED ? msg : (e.cause as ErrorLike).message}`);
  }
  if (e.code === 'HttpError') {
    const status = e.data?.statusCode ?? 0;
    if (status === 401 || status === 403) return new GitEngineError('AuthFailed', `authentication to ${where} failed (HTTP ${status}); check the credentials Secret`);
    if (status === 404) return new GitEngineError('NotFound', `repository ${where} not found (HTTP 404)`);
    if (status >= 500 || status === 429 || status === 408) return new GitEngineError('Unreachable', `${where} answered HTTP ${status}`, true);
    return new GitEngineError('Rejected', `${where} answered HTTP ${status} ${e.data?.statusMessage ?? ''}`.trim());
  }
  if (e.code === 'PushRejectedError') {
    return new GitEngineError('Conflict', `push to ${where} rejected: the branch moved (${e.data?.reason ?? msg})`, true);
  }
  if (e.code === 'GitPushError') {
    const refs = e.data?.result?.refs ?? {};
    const detail = Object.entries(refs)
      .filter(([, r]) => !r.ok)
      .map(([ref, r]) => `${ref}: ${r.error}`)
      .join('; ');
    // receive-pack reports a moved ref as a failed lock / stale old value.
    if (/lock|stale|expected|fetch first|non-fast-forward|failed to update|cannot update/i.test(detail)) {
      return new GitEngineError('Conflict', `push to ${where} rejected: the branch moved (${detail})`, true);
    }
    return new GitEngineError('Rejected', `push to ${where} refused: ${detail || msg}`);
  }
  if (e.code === 'SmartHttpError') return new GitEngineError('NotFound', `${where} is not a Git smart-HTTP repository`);
  const code = e.code ?? (e.cause as ErrorLike | undefined)?.code;
  if (code && NETWORK_CODES.has(code)) return new GitEngineError('Unreachable', `${where} is unreachable (${code})`, true);
  // Anything else is not a transport problem a retry would fix.
  return new GitEngineError('Unreachable', `${where}: ${msg}`);
}
