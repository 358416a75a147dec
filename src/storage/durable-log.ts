// Durability for the embedded store: an append-only log plus a periodic snapshot, both under
// `<dataDir>/store/`, in the checksummed format of durable-format.ts (read back by durable-read.ts).
//
// - A write resolves only after its line is written and fdatasync'ed. Lines appended while a
//   flush is in progress are written together by the next one (group commit): one write+fsync
//   per batch, so throughput is bounded by the disk's fsync rate times the batch size.
// - Every line carries a sequence number and a checksum; the log's header names the snapshot it
//   continues. Loading refuses (StartupRefusedError) a gap, a checksum mismatch, a malformed
//   record, a missing or damaged snapshot, naming the file and byte offset. Only a torn tail (an
//   incomplete last record without its newline: a crash mid-write, never acknowledged) is dropped,
//   and that is reported through `warn`.
// - A snapshot captures the in-memory state at one sequence number S in one cheap step (references
//   to objects that are replaced, never mutated, on write), then serializes and checksums it in
//   slices that yield the event loop (sliced-json.ts), so no size of state holds other clients up.
//   Meanwhile writes go on: each is appended to the current log and acknowledged as usual, and the
//   lines after S are also kept aside (the tail). The snapshot is written beside, fsync'ed and
//   renamed into place; then a new log (its header naming the snapshot, then the tail) replaces
//   the old one the same way, while no batch is being written. Every crash point leaves a
//   loadable pair: the old snapshot and log, the new snapshot and the old log (whose records up to
//   S are skipped), or the new pair; every acknowledged write is in the log of each.
// - Large records (over ~32 KiB of JSON) are serialized and checksummed the same way, in slices,
//   when their batch is written; small ones at once, in one step.
// - A snapshot is taken after `snapshotEvery` records or once the log holds more bytes than
//   max(`compactBytes`, the last snapshot's size), whichever comes first: records that rewrite a
//   growing object (a GitTarget's window record) would otherwise grow the log with the square of
//   the writes. So the directory stays under about twice the state plus `compactBytes`. When
//   writes stop for `idleCompactMs` with a log worth compacting (over 1 MiB and a quarter of the
//   snapshot), a snapshot is taken too, so a restart does not replay it; the timer exists only
//   while such a log does.
// - A failed write (ENOSPC, EIO) makes the log refuse writes (the store answers 503) until a
//   snapshot of the whole in-memory state, retried every RECOVER_MS, succeeds: then it accepts
//   writes again (readiness returns). The snapshot includes the records of the failed batch: their
//   writes were answered with an error, so their outcome is unknown to the client, like a timeout,
//   and they were already visible to readers and watchers; persisting what was seen is the
//   consistent choice. Nothing acknowledged is ever dropped.

import { randomBytes } from 'node:crypto';
import { open, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { StorageError } from './types.js';
import { encodeSnapshotSliced, envelope, envelopeSliced, logRecovery, refusal } from './durable-format.js';
import { LOG, SNAPSHOT, logHeaderLine, openStoreDir, type LogRecord, type Warn } from './durable-read.js';
import { replaceFile, writeAll } from './durable-files.js';
import { sizeWithin } from './sliced-json.js';

export type { LogRecord, Warn } from './durable-read.js';

/** How often a failed log tries to write a snapshot and accept writes again. */
export const RECOVER_MS = 1_000;
/** Default size past which the log is compacted into a snapshot (when larger than the snapshot). */
export const DEFAULT_COMPACT_BYTES = 16 * 1024 * 1024;
/** Default quiet time after which a log worth compacting is compacted. */
export const DEFAULT_IDLE_COMPACT_MS = 30_000;
/** An idle log smaller than this (and than a quarter of the snapshot) is left to the next trigger. */
const IDLE_COMPACT_MIN_BYTES = 1024 * 1024;
/** Records whose JSON is estimated above this are serialized in slices (sliced-json.ts). */
const INLINE_RECORD_CHARS = 32 * 1024;

export interface DurableLogOptions {
  /** Records between snapshots (default 10,000). */
  snapshotEvery?: number;
  compactBytes?: number;
  idleCompactMs?: number;
  warn?: Warn;
}

export interface Loaded<S> {
  snapshot: S | undefined;
  /** Log records newer than the snapshot, in order. */
  records: LogRecord[];
  /** Byte offset of each record in the log (for refusals raised while replaying). */
  offsets: number[];
  /** Set when the directory was written by an earlier version (format 1) and was converted. */
  convertedFrom?: 1;
}

export interface DurableStats {
  batches: number;
  snapshots: number;
  snapshotting: boolean;
  idleCompactionScheduled: boolean;
}

interface Waiter {
  seq: number;
  /** The encoded line: at once for small records, when its batch is written for large ones. */
  data?: string | Buffer[];
  payload?: Record<string, unknown>;
  resolve(): void;
  reject(err: Error): void;
}

function toBuffers(lines: ReadonlyArray<string | Buffer[]>): Buffer[] {
  const out: Buffer[] = [];
  let text = '';
  for (const l of lines) {
    if (typeof l === 'string') text += l;
    else {
      if (text) out.push(Buffer.from(text));
      text = '';
      out.push(...l);
    }
  }
  if (text) out.push(Buffer.from(text));
  return out;
}

const byteLength = (bufs: readonly Buffer[]) => bufs.reduce((n, b) => n + b.length, 0);

export class DurableLog {
  private queue: Waiter[] = [];
  private flushing = false;
  private sinceSnapshot = 0;
  /** Batches written to the log so far (one write and one fdatasync each): group commit's measure. */
  batchesWritten = 0;
  /** Snapshots written so far (a diagnostic for tests). */
  snapshotsWritten = 0;
  /** Bytes of records in the log since the snapshot, and the snapshot's own size. */
  private logBytes = 0;
  private snapshotBytes = 0;
  private failed: string | undefined;
  private recovery: NodeJS.Timeout | undefined;
  private closed = false;
  private idle: Promise<void> = Promise.resolve();
  private idleResolve: (() => void) | undefined;
  /** The snapshot being written: its sequence and the lines written after it (the new log's tail). */
  private snapshotting: { seq: number; tail: Array<string | Buffer[]> } | undefined;
  private snapshotTask: Promise<void> | undefined;
  /** Batch writes and the log's replacement take turns (the file handle changes). */
  private turn: Promise<unknown> = Promise.resolve();
  private idleTimer: NodeJS.Timeout | undefined;
  private lastWriteAt = 0;
  /** The sequence of the snapshot the current log continues. */
  private logAfter = 0;
  private readonly snapshotEvery: number;
  private readonly compactBytes: number;
  private readonly idleCompactMs: number;

  private constructor(
    private readonly dir: string,
    private fh: FileHandle,
    private seq: number,
    private readonly capture: () => unknown,
    opts: DurableLogOptions,
    private readonly warn: Warn,
  ) {
    this.snapshotEvery = opts.snapshotEvery ?? 10_000;
    this.compactBytes = opts.compactBytes ?? DEFAULT_COMPACT_BYTES;
    this.idleCompactMs = opts.idleCompactMs ?? DEFAULT_IDLE_COMPACT_MS;
  }

  /**
   * Open (creating) the store directory and read the snapshot and the log. Throws
   * StartupRefusedError when they are damaged; changes nothing on disk in that case.
   */
  static async open<S>(dir: string, capture: () => unknown, opts: DurableLogOptions = {}): Promise<{ log: DurableLog; loaded: Loaded<S> }> {
    const warn = opts.warn ?? (() => {});
    const { snapshot, parsed, v1, fh, logBytes, snapshotBytes } = await openStoreDir(dir, warn);
    const log = new DurableLog(dir, fh, parsed.seq, capture, opts, warn);
    log.sinceSnapshot = parsed.records.length;
    log.logBytes = logBytes;
    log.snapshotBytes = snapshotBytes;
    const loaded: Loaded<S> = { snapshot: snapshot as S | undefined, records: parsed.records, offsets: parsed.offsets };
    if (v1) loaded.convertedFrom = 1;
    return { log, loaded };
  }

  /** A start-up refusal for a record found wrong while replaying it (at `offset` in the log). */
  damaged(offset: number, problem: string): Error {
    const file = join(this.dir, LOG);
    return refusal(file, offset, problem, logRecovery(this.dir, file, offset));
  }

  /** Why the log cannot accept writes, if it cannot. */
  get unhealthy(): string | undefined {
    return this.failed;
  }

  /** Diagnostics: snapshots written, one in progress, an idle compaction scheduled (none at rest). */
  get stats(): DurableStats {
    return { batches: this.batchesWritten, snapshots: this.snapshotsWritten, snapshotting: this.snapshotting !== undefined, idleCompactionScheduled: this.idleTimer !== undefined };
  }

  /**
   * Append a record (its `s` is assigned here). Call synchronously right after applying the change
   * in memory, so sequence order equals memory order. Resolves once durable.
   */
  append(rec: Omit<LogRecord, 's'>): Promise<void> {
    if (this.failed) return Promise.reject(new StorageError('Unavailable', this.failed));
    if (this.closed) return Promise.reject(new StorageError('Unavailable', 'store is closed'));
    const seq = ++this.seq;
    const payload = { s: seq, ...rec };
    return new Promise<void>((resolve, reject) => {
      const w: Waiter = { seq, resolve, reject };
      if (sizeWithin(payload, INLINE_RECORD_CHARS) <= INLINE_RECORD_CHARS) w.data = envelope(JSON.stringify(payload));
      else w.payload = payload;
      this.queue.push(w);
      if (!this.flushing) void this.flushLoop();
    });
  }

  /** Runs `fn` when no batch write or log replacement is in progress. */
  private inTurn<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.turn.then(fn, fn);
    this.turn = run.catch(() => undefined);
    return run;
  }

  private async flushLoop(): Promise<void> {
    this.flushing = true;
    this.idle = new Promise((r) => (this.idleResolve = r));
    try {
      while (this.queue.length > 0 && !this.failed) {
        const batch = this.queue;
        this.queue = [];
        for (const w of batch) {
          if (w.data === undefined) w.data = await envelopeSliced(w.payload);
          w.payload = undefined;
        }
        if (!(await this.inTurn(() => this.writeBatch(batch)))) break;
        for (const w of batch) w.resolve();
        if (this.sinceSnapshot >= this.snapshotEvery || this.logBytes > Math.max(this.compactBytes, this.snapshotBytes)) this.startSnapshot();
      }
    } finally {
      this.flushing = false;
      this.idleResolve?.();
      this.scheduleIdleCompaction();
    }
  }

  /** Writes one batch and fdatasyncs it; false (every waiter rejected) when the log failed. */
  private async writeBatch(batch: Waiter[]): Promise<boolean> {
    if (this.failed) {
      const e = new StorageError('Unavailable', this.failed);
      for (const w of batch) w.reject(e);
      return false;
    }
    // Records up to the sequence the log continues are in its snapshot already (a batch taken
    // before a snapshot's capture can be written after its log replaced the old one).
    const buffers = toBuffers(batch.filter((w) => w.seq > this.logAfter).map((w) => w.data!));
    try {
      await writeAll(this.fh, buffers);
      await this.fh.datasync();
      this.batchesWritten++;
    } catch (err) {
      this.fail(err as Error, batch);
      return false;
    }
    this.sinceSnapshot += batch.length;
    this.logBytes += byteLength(buffers);
    this.lastWriteAt = performance.now();
    const s = this.snapshotting;
    if (s) for (const w of batch) if (w.seq > s.seq) s.tail.push(w.data!);
    return true;
  }

  /** Starts a snapshot in the background unless one is running; a failure fails the log. */
  private startSnapshot(): void {
    if (this.snapshotTask || this.failed) return;
    this.snapshotTask = this.snapshot(false)
      .catch((err: Error) => this.fail(err, []))
      .finally(() => {
        this.snapshotTask = undefined;
        this.scheduleIdleCompaction();
      });
  }

  /**
   * Captures the state at the current sequence, writes it as the snapshot, then replaces the log by
   * one naming it and holding the lines written since. While the log is failed only `recovering`
   * replaces it (a failed batch may have left a torn line: recovery starts a clean log).
   */
  private async snapshot(recovering: boolean): Promise<void> {
    const seq = this.seq;
    const state = this.capture();
    const pending = { seq, tail: [] as Array<string | Buffer[]> };
    this.snapshotting = pending;
    try {
      const id = randomBytes(8).toString('hex');
      const snap = await encodeSnapshotSliced(id, seq, state);
      await replaceFile(this.dir, SNAPSHOT, snap);
      await this.inTurn(async () => {
        // Loadable as it is (the old log continues an older snapshot); recovery replaces the log.
        if (this.failed && !recovering) return;
        const log = toBuffers([logHeaderLine(id, seq), ...pending.tail]);
        await replaceFile(this.dir, LOG, log);
        await this.fh.close().catch(() => undefined);
        this.fh = await open(join(this.dir, LOG), 'a');
        this.sinceSnapshot = pending.tail.length;
        this.logAfter = seq;
        this.snapshotBytes = byteLength(snap);
        this.logBytes = byteLength(log);
        this.snapshotsWritten++;
      });
    } finally {
      this.snapshotting = undefined;
    }
  }

  /** Arms (or re-arms for the rest of the quiet time) the idle compaction, when the log is worth it. */
  private scheduleIdleCompaction(): void {
    if (this.idleTimer || this.closed || this.failed || this.snapshotTask || this.sinceSnapshot === 0) return;
    if (this.logBytes < Math.max(IDLE_COMPACT_MIN_BYTES, this.snapshotBytes / 4)) return;
    const wait = Math.max(0, this.lastWriteAt + this.idleCompactMs - performance.now());
    this.idleTimer = setTimeout(() => {
      this.idleTimer = undefined;
      if (this.flushing || this.queue.length > 0) return; // the flush loop re-arms it when it ends
      if (performance.now() - this.lastWriteAt < this.idleCompactMs) this.scheduleIdleCompaction();
      else this.startSnapshot();
    }, wait);
    this.idleTimer.unref();
  }

  /** Write a snapshot now (after loading a format-1 directory: converts it). */
  async compact(): Promise<void> {
    await this.settle();
    try {
      await this.snapshot(false);
    } catch (err) {
      this.fail(err as Error, []);
    }
    if (this.failed) throw new StorageError('Unavailable', this.failed);
  }

  /** Waits until no batch and no snapshot is in progress. */
  async settle(): Promise<void> {
    while (this.flushing || this.snapshotTask) {
      if (this.flushing) await this.idle;
      if (this.snapshotTask) await this.snapshotTask;
    }
  }

  private fail(err: Error, batch: Waiter[]): void {
    this.failed = `data directory write failed: ${err.message}`;
    const e = new StorageError('Unavailable', this.failed);
    for (const w of [...batch, ...this.queue]) w.reject(e);
    this.queue = [];
    clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
    this.warn('embedded store: a write to the data directory failed; writes are refused until a snapshot can be written', { dir: this.dir, error: err.message });
    if (!this.recovery && !this.closed) {
      this.recovery = setInterval(() => void this.recover(), RECOVER_MS);
      this.recovery.unref();
    }
  }

  /**
   * After a failed write: a snapshot of the whole in-memory state (which includes the failed
   * batch) replaces the snapshot and the log (whose tail may be torn). Once it is durable, writes
   * are accepted again.
   */
  private async recover(): Promise<void> {
    if (!this.failed || this.flushing || this.snapshotTask || this.closed) return;
    let done!: () => void;
    this.snapshotTask = new Promise<void>((r) => (done = r));
    try {
      await this.snapshot(true);
      this.warn('embedded store: the data directory accepts writes again; recovered', { dir: this.dir });
      this.failed = undefined;
      clearInterval(this.recovery);
      this.recovery = undefined;
    } catch {
      // Still failing (no space yet): the next tick tries again.
    } finally {
      this.snapshotTask = undefined;
      done();
      if (this.queue.length > 0 && !this.failed && !this.flushing) void this.flushLoop();
    }
  }

  /** Flush pending lines, write a final snapshot (fast restart) and close the file. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.recovery);
    clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
    await this.settle();
    if (!this.failed && this.sinceSnapshot > 0) {
      try {
        await this.snapshot(false);
      } catch (err) {
        this.fail(err as Error, []);
      }
    }
    await this.fh.close();
  }
}
