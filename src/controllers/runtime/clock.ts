// The time the controllers see: the wall clock and its timers by default, a clock a test moves by
// hand otherwise (test/support/clock.ts ManualClock), so that idle windows, max ages, requeues and
// failure backoffs are tested at their edges without sleeping. Every controller timer is unref'd:
// a pending requeue never keeps the process alive (cli/serve.ts stops the controllers on shutdown).

/** A scheduled callback; cancel() is idempotent and harmless after it ran. */
export interface ClockTimer {
  cancel(): void;
}

export interface Clock {
  /** ms since the epoch. */
  now(): number;
  /** Runs `fn` once, `ms` from now. */
  setTimeout(fn: () => void, ms: number): ClockTimer;
  /** Runs `fn` every `ms`. */
  setInterval(fn: () => void, ms: number): ClockTimer;
}

export const realClock: Clock = {
  now: () => Date.now(),
  setTimeout(fn, ms) {
    const t = setTimeout(fn, ms);
    t.unref?.();
    return { cancel: () => clearTimeout(t) };
  },
  setInterval(fn, ms) {
    const t = setInterval(fn, ms);
    t.unref?.();
    return { cancel: () => clearInterval(t) };
  },
};
