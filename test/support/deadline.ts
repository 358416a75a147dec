// Every wait in a test has a deadline: a regression must fail the test with a message saying what
// did not happen, never hang the suite. TEST_WAIT_SCALE stretches every default deadline on a slow
// machine (e.g. TEST_WAIT_SCALE=3) without editing the tests.
const scale = Number(process.env.TEST_WAIT_SCALE ?? '1');

/** `ms` stretched by TEST_WAIT_SCALE. */
export function waitMs(ms: number): number {
  return Number.isFinite(scale) && scale > 0 ? Math.round(ms * scale) : ms;
}

/** How long a wait in test/support lasts unless the caller says otherwise. */
export const DEFAULT_WAIT_MS = 20_000;

export class DeadlineError extends Error {
  constructor(what: string, ms: number) {
    super(`timed out after ${ms} ms waiting for ${what}`);
    this.name = 'DeadlineError';
  }
}

/**
 * Settles like `p`, or rejects with a DeadlineError naming `what` after `ms` (scaled). `onTimeout`
 * runs first, to release what the wait held (kill a process, destroy a socket).
 */
export function withDeadline<T>(p: Promise<T>, what: string, ms = DEFAULT_WAIT_MS, onTimeout?: () => void): Promise<T> {
  const limit = waitMs(ms);
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => {
      try {
        onTimeout?.();
      } finally {
        reject(new DeadlineError(what, limit));
      }
    }, limit);
    p.then(
      (v) => {
        clearTimeout(timer);
        resolve(v);
      },
      (e) => {
        clearTimeout(timer);
        reject(e);
      },
    );
  });
}

/** Polls `pred` every `everyMs` until it holds; rejects with a DeadlineError naming `what` after `ms`. */
export async function until(pred: () => boolean | Promise<boolean>, what: string, ms = DEFAULT_WAIT_MS, everyMs = 20): Promise<void> {
  const limit = waitMs(ms);
  const end = Date.now() + limit;
  for (;;) {
    if (await pred()) return;
    if (Date.now() >= end) throw new DeadlineError(what, limit);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
