// Cancellation of a commit's remote work. isomorphic-git's fetch takes no AbortSignal, so the
// signal of the commit being worked on travels with the async context instead: the worker thread
// (worker-thread.ts) runs each commit inside `remoteWork.run(signal, ...)`, and the HTTP client
// (http-client.ts) and the engine's retry waits (engine.ts) read it from there. A GitTarget that is
// deleted, or a process that shuts down, stops its transfer at once instead of reading on.
import { AsyncLocalStorage } from 'node:async_hooks';
import { GitEngineError } from './errors.js';

export const remoteWork = new AsyncLocalStorage<AbortSignal>();

/** The signal of the commit this code runs for (undefined outside one). */
export function currentSignal(): AbortSignal | undefined {
  return remoteWork.getStore();
}

export function cancelledError(): GitEngineError {
  return new GitEngineError('Cancelled', 'the commit was cancelled (its GitTarget was deleted or the server is shutting down); its changes stay pending');
}

export function throwIfCancelled(): void {
  if (currentSignal()?.aborted) throw cancelledError();
}

/** Waits `ms`, or rejects with Cancelled as soon as the current commit is cancelled. */
export function cancellableSleep(ms: number): Promise<void> {
  const signal = currentSignal();
  if (signal?.aborted) return Promise.reject(cancelledError());
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(cancelledError());
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
