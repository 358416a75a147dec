// What one HTTP exchange with a tenant's git remote may cost, and the streaming reader that
// enforces it. A remote is tenant input: one that streams without end, trickles, or never answers
// must end as a condition on its GitTarget, never as this process's memory or a stuck commit.
//
// The default cap, 128 MiB per response: the engine's largest response is the pack of a shallow
// (depth 1) fetch of one branch tip on first contact (repository.ts); later fetches are
// incremental, and ref advertisements are a few bytes per ref (100,000 refs ≈ 6 MiB). A
// configuration repository of 10,000 manifests packs to a few MiB, and GitHub refuses files over
// 100 MiB, so 128 MiB admits any real configuration repository's tip while bounding what one
// response can hold in memory (isomorphic-git keeps a fetched pack in memory to index it).
import type { IncomingMessage } from 'node:http';
import { GitEngineError } from './errors.js';

export interface RemoteLimits {
  /** Bytes one response body may have (`--git-max-response-bytes`). */
  maxResponseBytes: number;
  /** TCP (and TLS) connection set up. */
  connectTimeoutMs: number;
  /** From the request sent to the response's status line and headers. */
  headersTimeoutMs: number;
  /** Longest pause between two chunks of a response body. */
  bodyIdleTimeoutMs: number;
  /** One request from start to the body's last byte. */
  totalTimeoutMs: number;
}

export const DEFAULT_MAX_RESPONSE_BYTES = 128 * 1024 * 1024;

export const DEFAULT_REMOTE_LIMITS: RemoteLimits = {
  maxResponseBytes: DEFAULT_MAX_RESPONSE_BYTES,
  connectTimeoutMs: 10_000,
  headersTimeoutMs: 30_000,
  bodyIdleTimeoutMs: 30_000,
  // A 128 MiB pack at ~1 MiB/s still fits; a trickling remote does not hold a commit for longer.
  totalTimeoutMs: 300_000,
};

export function remoteLimits(partial: Partial<RemoteLimits> | undefined): RemoteLimits {
  return { ...DEFAULT_REMOTE_LIMITS, ...(partial ?? {}) };
}

export function tooLargeError(where: string, limit: number): GitEngineError {
  return new GitEngineError('RemoteResponseTooLarge', `${where} sent a response larger than ${limit} bytes (--git-max-response-bytes); the transfer was stopped`);
}

export function timeoutError(where: string, what: string, ms: number): GitEngineError {
  return new GitEngineError('Unreachable', `${where}: ${what} within ${ms} ms`, true);
}

/**
 * The body of `res` as chunks, as they arrive: at most `maxResponseBytes` in all and at most
 * `bodyIdleTimeoutMs` between two chunks. Past either limit the response is destroyed (its
 * connection closed, nothing more read) and the iteration throws. `fail` destroys the exchange from
 * outside (total deadline, cancellation): the iteration then throws that error.
 */
export async function* cappedBody(res: IncomingMessage, limits: RemoteLimits, where: string): AsyncGenerator<Uint8Array> {
  let received = 0;
  let idle: NodeJS.Timeout | undefined;
  const arm = () => {
    clearTimeout(idle);
    idle = setTimeout(() => res.destroy(timeoutError(where, 'no data of the response body arrived', limits.bodyIdleTimeoutMs)), limits.bodyIdleTimeoutMs);
  };
  arm();
  try {
    for await (const chunk of res as AsyncIterable<Buffer>) {
      received += chunk.length;
      if (received > limits.maxResponseBytes) {
        const err = tooLargeError(where, limits.maxResponseBytes);
        res.destroy(err);
        throw err;
      }
      arm();
      yield new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    }
  } finally {
    clearTimeout(idle);
    // A consumer that stopped early leaves nothing half-read on a kept-alive connection.
    if (!res.complete) res.destroy();
  }
}
