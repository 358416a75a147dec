// A clock that moves only when the test says so: cache TTLs are tested at their exact edges
// (one millisecond before and at expiry) without sleeping, so a loaded machine cannot flake them.
// It is also a controller Clock (src/controllers/runtime/clock.ts): its timers run when advance()
// passes their time, in time order, so a test drives a work queue's requeues and backoffs.
import type { Clock, ClockTimer } from '../../src/controllers/runtime/clock.js';

interface Pending {
  at: number;
  seq: number;
  fn: () => void;
  every?: number;
}

export class ManualClock implements Clock {
  private readonly pending = new Set<Pending>();
  private seq = 0;

  constructor(private t = 1_700_000_000_000) {}
  /** Pass as a `now` dependency. */
  readonly now = (): number => this.t;

  /** Moves time forward by `ms`, running every timer due on the way (at its own time, in order). */
  advance(ms: number): void {
    const end = this.t + ms;
    for (;;) {
      const next = [...this.pending].filter((p) => p.at <= end).sort((a, b) => a.at - b.at || a.seq - b.seq)[0];
      if (!next) break;
      this.t = Math.max(this.t, next.at);
      if (next.every !== undefined) next.at += Math.max(1, next.every);
      else this.pending.delete(next);
      next.fn();
    }
    this.t = end;
  }

  /** When the earliest pending timer runs (ms since the epoch), if any. */
  nextTimerAt(): number | undefined {
    let at: number | undefined;
    for (const p of this.pending) if (at === undefined || p.at < at) at = p.at;
    return at;
  }

  /** Timers waiting to run. */
  get timers(): number {
    return this.pending.size;
  }

  readonly setTimeout = (fn: () => void, ms: number): ClockTimer => this.add({ at: this.t + Math.max(0, ms), seq: this.seq++, fn });
  readonly setInterval = (fn: () => void, ms: number): ClockTimer => this.add({ at: this.t + Math.max(1, ms), seq: this.seq++, fn, every: ms });

  private add(p: Pending): ClockTimer {
    this.pending.add(p);
    return { cancel: () => void this.pending.delete(p) };
  }
}
