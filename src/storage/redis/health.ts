// The Redis connection's health as requests see it: one time bound for every store operation,
// errors worded about Redis (not about ioredis' options), and the loss and recovery of the
// connection reported once each.
import { StorageError } from '../types.js';

export class RedisHealth {
  /** Since when Redis has been unreachable or unresponsive (undefined while it answers). */
  private lostSince: number | undefined;

  constructor(
    readonly timeoutMs: number,
    private readonly log: { warn(msg: string, fields?: Record<string, unknown>): void } | undefined,
    private readonly ready: () => boolean,
    private readonly lastError: () => string | undefined,
  ) {}

  /**
   * What went wrong, in words about Redis: a command refused while the connection is down
   * ("Reached the max retries per request limit (which is 0). Refer to maxRetriesPerRequest...",
   * "Stream isn't writeable...") says the connection is down and why; a timeout says how long we
   * waited; anything else is Redis's own answer.
   */
  describe(err: Error): string {
    const msg = String(err?.message ?? err);
    if (/max retries per request|Stream isn't writeable|enableOfflineQueue|Connection is closed/i.test(msg)) {
      const cause = this.lastError();
      return `redis is unreachable${cause ? ` (${cause})` : ''}`;
    }
    if (/Command timed out/i.test(msg)) return `redis did not answer within ${this.timeoutMs / 1000} s`;
    return `redis: ${msg}`;
  }

  unavailable(err: unknown): StorageError {
    if (err instanceof StorageError) return err;
    return new StorageError('Unavailable', this.describe(err as Error));
  }

  lost(cause: string): void {
    if (this.lostSince !== undefined) return;
    this.lostSince = Date.now();
    this.log?.warn('redis connection lost; requests answer 503 until it is back', { cause });
  }

  recovered(): void {
    if (this.lostSince === undefined) return;
    const downSeconds = Math.round((Date.now() - this.lostSince) / 100) / 10;
    this.lostSince = undefined;
    this.log?.warn('redis connection recovered', { downSeconds });
  }

  /**
   * One bound for every store operation (the command timeout, 3 s by default), however many
   * round trips it takes (script loading, cache catch-up): a frozen Redis costs a request that
   * long, never a multiple of it. A write cut off this way may still be applied; the caller gets
   * 503 and re-reads, as after any timeout.
   */
  bounded<T>(op: () => Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const e = new StorageError('Unavailable', `redis did not answer within ${this.timeoutMs / 1000} s`);
        this.lost(e.message);
        reject(e);
      }, this.timeoutMs);
    });
    return Promise.race([op(), deadline]).then(
      (v) => {
        clearTimeout(timer);
        if (this.lostSince !== undefined && this.ready()) this.recovered();
        return v;
      },
      (e) => {
        clearTimeout(timer);
        throw this.unavailable(e);
      },
    );
  }
}
