// A counting semaphore: at most `n` holders at once, the others wait in arrival order. The windows
// controller bounds its commits in flight with it once they have left the work queue's slots
// (runtime/queue.ts detach): the queue's slots then serve the quick reconciles, and a window that
// is due is closed without waiting for the commits in progress (controllers/windows/controller.ts).
// The events recorder bounds its writes in flight with it too (controllers/events/recorder.ts).
export class Permits {
  private free: number;
  private readonly waiting: Array<() => void> = [];

  constructor(readonly size: number) {
    this.free = size;
  }

  /** Permits held now (tests, metrics). */
  get inUse(): number {
    return this.size - this.free;
  }

  /** Waits for a permit; the function returned gives it back (once, whatever the number of calls). */
  async take(): Promise<() => void> {
    if (this.free > 0) this.free--;
    else await new Promise<void>((r) => this.waiting.push(r));
    let given = false;
    return () => {
      if (given) return;
      given = true;
      const next = this.waiting.shift();
      if (next) next();
      else this.free++;
    };
  }
}
