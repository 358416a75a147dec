// Durability for the embedded store: an append-only log of JSON lines plus a periodic snapshot,
// both under `<dataDir>/store/`.
//
// - A write resolves only after its line is written and fdatasync'ed. Lines appended while a
//   flush is in progress are written together by the next one (group commit): one write+fsync
//   per batch, so throughput is bounded by the disk's fsync rate times the batch size.
// - Every line carries a sequence number `s`; the snapshot records the last sequence it covers,
//   so lines at or below it are skipped on load (a crash between snapshot and truncation is safe).
// - A torn last line (crash mid-write) is ignored on load, and the file is cut back to the last
//   complete line so new appends never follow garbage.

import { mkdir, open, readFile, rename, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { StorageError } from './types.js';

const LOG = 'log.jsonl';
const SNAPSHOT = 'snapshot.json';

export interface LogRecord {
  s: number;
  [k: string]: unknown;
}

export interface Loaded<S> {
  snapshot: S | undefined;
  /** Log records newer than the snapshot, in order. */
  records: LogRecord[];
}

interface Waiter {
  seq: number;
  line: string;
  resolve(): void;
  reject(err: Error): void;
}

export class DurableLog {
  private queue: Waiter[] = [];
  private flushing = false;
  private sinceSnapshot = 0;
  private failed: string | undefined;
  private closed = false;
  private idle: Promise<void> = Promise.resolve();
  private idleResolve: (() => void) | undefined;

  private constructor(
    private readonly dir: string,
    private fh: FileHandle,
    private seq: number,
    private readonly snapshotEvery: number,
    private readonly capture: () => unknown,
  ) {}

  /** Open (creating) the store directory and read the snapshot and the log. */
  static async open<S>(
    dir: string,
    snapshotEvery: number,
    capture: () => unknown,
  ): Promise<{ log: DurableLog; loaded: Loaded<S> }> {
    await mkdir(dir, { recursive: true });
    let snapshot: (S & { seq: number }) | undefined;
    try {
      snapshot = JSON.parse(await readFile(join(dir, SNAPSHOT), 'utf8'));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    const baseSeq = snapshot?.seq ?? 0;
    let text = '';
    try {
      text = await readFile(join(dir, LOG), 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    const records: LogRecord[] = [];
    let valid = 0; // byte length of the complete, parseable prefix
    let seq = baseSeq;
    let pos = 0;
    while (pos < text.length) {
      const nl = text.indexOf('\n', pos);
      if (nl < 0) break; // torn last line: never acknowledged, ignore
      const line = text.slice(pos, nl);
      let rec: LogRecord;
      try {
        rec = JSON.parse(line);
      } catch {
        if (nl + 1 >= text.length) break; // torn last record that happened to end in a newline
        throw new Error(`${join(dir, LOG)}: corrupt record at byte ${Buffer.byteLength(text.slice(0, pos))}`);
      }
      pos = nl + 1;
      valid += Buffer.byteLength(line) + 1;
      if (rec.s <= baseSeq) continue;
      records.push(rec);
      seq = rec.s;
    }
    const fh = await open(join(dir, LOG), 'a+');
    if ((await fh.stat()).size !== valid) {
      await fh.truncate(valid);
      await fh.datasync();
    }
    const log = new DurableLog(dir, fh, seq, snapshotEvery, capture);
    log.sinceSnapshot = records.length;
    return { log, loaded: { snapshot, records } };
  }

  /** Why the log cannot accept writes, if it cannot. */
  get unhealthy(): string | undefined {
    return this.failed;
  }

  /**
   * Append a record (its `s` is assigned here). Call synchronously right after applying the change
   * in memory, so sequence order equals memory order. Resolves once durable.
   */
  append(rec: Omit<LogRecord, 's'>): Promise<void> {
    if (this.failed) return Promise.reject(new StorageError('Unavailable', this.failed));
    if (this.closed) return Promise.reject(new StorageError('Unavailable', 'store is closed'));
    const seq = ++this.seq;
    const line = JSON.stringify({ s: seq, ...rec }) + '\n';
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ seq, line, resolve, reject });
      if (!this.flushing) void this.flushLoop();
    });
  }

  private async flushLoop(): Promise<void> {
    this.flushing = true;
    this.idle = new Promise((r) => (this.idleResolve = r));
    try {
      while (this.queue.length > 0 && !this.failed) {
        if (this.sinceSnapshot >= this.snapshotEvery) {
          await this.writeSnapshot();
          continue;
        }
        const batch = this.queue;
        this.queue = [];
        try {
          await this.fh.write(batch.map((w) => w.line).join(''));
          await this.fh.datasync();
        } catch (err) {
          this.fail(err as Error, batch);
          break;
        }
        this.sinceSnapshot += batch.length;
        for (const w of batch) w.resolve();
      }
    } finally {
      this.flushing = false;
      this.idleResolve?.();
    }
  }

  /**
   * Write a snapshot of the whole in-memory state, then empty the log. The capture includes every
   * record appended so far (queued ones too), so those are durable once the snapshot is.
   */
  private async writeSnapshot(): Promise<void> {
    const seq = this.seq;
    const covered = this.queue;
    this.queue = [];
    try {
      const body = JSON.stringify({ ...(this.capture() as object), seq });
      const tmp = join(this.dir, SNAPSHOT + '.tmp');
      const t = await open(tmp, 'w');
      try {
        await t.writeFile(body);
        await t.sync();
      } finally {
        await t.close();
      }
      await rename(tmp, join(this.dir, SNAPSHOT));
      const d = await open(this.dir, 'r');
      try {
        await d.sync(); // make the rename durable before the log loses its lines
      } finally {
        await d.close();
      }
      await this.fh.truncate(0);
      await this.fh.datasync();
    } catch (err) {
      this.fail(err as Error, covered);
      return;
    }
    this.sinceSnapshot = 0;
    for (const w of covered) w.resolve();
  }

  private fail(err: Error, batch: Waiter[]): void {
    this.failed = `data directory write failed: ${err.message}`;
    const e = new StorageError('Unavailable', this.failed);
    for (const w of [...batch, ...this.queue]) w.reject(e);
    this.queue = [];
  }

  /** Flush pending lines, write a final snapshot (fast restart) and close the file. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    while (this.flushing) await this.idle;
    if (!this.failed && this.sinceSnapshot > 0) {
      this.flushing = true;
      await this.writeSnapshot();
      this.flushing = false;
    }
    await this.fh.close();
  }
}
