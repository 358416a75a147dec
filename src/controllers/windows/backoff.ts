// How long a GitTarget whose commit failed waits before the next attempt (the windows queue's
// backoff, controllers/runtime/queue.ts, which holds against the controller's own status and record
// writes). A failure a retry cannot fix — credentials refused, no such repository, a URL that is no
// git endpoint, a certificate that does not verify, a response over the size cap, a push the server
// refuses — is retried every few minutes at most, so a broken GitTarget costs its remote a few
// requests an hour; a transient one (network, 5xx, timeouts, a moving branch, a lost lease) within
// seconds, so an outage ends in a commit soon after the remote is back.
import { GitEngineError } from '../../git/errors.js';

export const PERMANENT_BACKOFF = { firstMs: 10_000, maxMs: 300_000 };
export const TRANSIENT_BACKOFF = { firstMs: 1_000, maxMs: 30_000 };

/** Whether retrying cannot fix this failure (only a change of the GitTarget, its Secret or the remote can). */
export function isPermanent(e: unknown): boolean {
  if (!(e instanceof GitEngineError)) return false;
  if (e.retryable) return false;
  return e.reason !== 'LeaseLost' && e.reason !== 'Conflict' && e.reason !== 'Cancelled';
}

/** The wait before the `failures`-th retry (1-based), with ±10 % jitter so many targets spread out. */
export function commitBackoff(e: unknown, failures: number): number {
  const b = isPermanent(e) ? PERMANENT_BACKOFF : TRANSIENT_BACKOFF;
  const ms = Math.min(b.firstMs * 2 ** Math.min(failures - 1, 20), b.maxMs);
  return Math.round(ms * (0.9 + 0.2 * Math.random()));
}
