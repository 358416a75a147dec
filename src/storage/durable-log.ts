// Durability for the embedded store: an append-only log plus a periodic snapshot, both under
// `<dataDir>/store/`, in the checksummed format of durable-format.ts.
//
// - A write resolves only after its line is written and fdatasync'ed. Lines appended while a
//   flush is in progress are written together by the next one (group commit): one write+fsync
//   per batch, so throughput is bounded by the disk's fsync rate times the batch size.
// - Every line carries a sequence number and a checksum; the log's header names the snapshot it
//   continues. Loading refuses (StartupRefusedError) a gap, a checksum mismatch, a malformed
//   record, a missing or damaged snapshot, naming the file and byte offset. Only a torn tail (an
//   incomplete last record without its newline: a crash mid-write, never acknowledged) is dropped,
//   and that is reported through `warn`.
// - A snapshot is written beside, renamed into place, and then a fresh log naming it replaces the
//   old one the same way, so every crash point leaves a loadable pair.
// - A snapshot is taken after `snapshotEvery` records or once the log holds more bytes than
//   max(`compactBytes`, the last snapshot's size), whichever comes first: records that rewrite a
//   growing object (a GitTarget's window record) would otherwise grow the log with the square of
//   the writes. So the directory stays under about twice the state plus `compactBytes`.
// - A failed write (ENOSPC, EIO) makes the log refuse writes (the store answers 503) until a
//   snapshot of the whole in-memory state, retried every RECOVER_MS, succeeds: then it accepts
//   writes again (readiness returns). The snapshot includes the records of the failed batch: their
//   writes were answered with an error, so their outcome is unknown to the client, like a timeout,
//   and they were already visible to readers and watchers; persisting what was seen is the
//   consistent choice. Nothing acknowledged is ever dropped.

import { randomBytes } from 'node:crypto';
import { mkdir, open, readFile, rename, unlink, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { StorageError } from './types.js';
import {
  LOG_FORMAT, decodeLine, decodeSnapshot, encodeSnapshot, envelope, logRecovery, refusal, snapshotRecovery, type LogHeader,
} from './durable-format.js';

const LOG = 'log.jsonl';
const SNAPSHOT = 'snapshot.json';
/** How often a failed log tries to write a snapshot and accept writes again. */
export const RECOVER_MS = 1_000;
/** Default size past which the log is compacted into a snapshot (when larger than the snapshot). */
export const DEFAULT_COMPACT_BYTES = 16 * 1024 * 1024;

export interface LogRecord {
  s: number;
  [k: string]: unknown;
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

export type Warn = (msg: string, fields?: Record<string, unknown>) => void;

interface Waiter {
  seq: number;
  line: string;
  resolve(): void;
  reject(err: Error): void;
}

async function readIfExists(path: string): Promise<Buffer | undefined> {
  try {
    return await readFile(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

async function syncDir(dir: string): Promise<void> {
  const d = await open(dir, 'r');
  try {
    await d.sync();
  } finally {
    await d.close();
  }
}

/** Writes `text` to `path` atomically and durably (temporary file, fsync, rename, directory fsync). */
async function replaceFile(dir: string, name: string, text: string): Promise<void> {
  const tmp = join(dir, name + '.tmp');
  const t = await open(tmp, 'w');
  try {
    await t.writeFile(text);
    await t.sync();
  } catch (err) {
    // A partial temporary file (ENOSPC) must not keep the space the next attempt needs.
    await t.close().catch(() => undefined);
    await unlink(tmp).catch(() => undefined);
    throw err;
  }
  await t.close();
  await rename(tmp, join(dir, name));
  await syncDir(dir);
}

function logHeaderLine(snapshot: string | null, after: number): string {
  const h: LogHeader = { log: LOG_FORMAT, snapshot, after };
  return envelope(JSON.stringify(h));
}

export class DurableLog {
  private queue: Waiter[] = [];
  private flushing = false;
  private sinceSnapshot = 0;
  /** Batches written to the log so far (one write and one fdatasync each): group commit's measure. */
  batchesWritten = 0;
  /** Bytes of records in the log since the snapshot, and the snapshot's own size. */
  private logBytes = 0;
  private snapshotBytes = 0;
  private failed: string | undefined;
  private recovery: NodeJS.Timeout | undefined;
  private closed = false;
  private idle: Promise<void> = Promise.resolve();
  private idleResolve: (() => void) | undefined;

  private constructor(
    private readonly dir: string,
    private fh: FileHandle,
    private seq: number,
    private readonly snapshotEvery: number,
    private readonly capture: () => unknown,
    private readonly compactBytes: number,
    private readonly warn: Warn,
  ) {}

  /**
   * Open (creating) the store directory and read the snapshot and the log. Throws
   * StartupRefusedError when they are damaged; changes nothing on disk in that case.
   */
  static async open<S>(
    dir: string,
    snapshotEvery: number,
    capture: () => unknown,
    warn: Warn = () => {},
    compactBytes = DEFAULT_COMPACT_BYTES,
  ): Promise<{ log: DurableLog; loaded: Loaded<S> }> {
    await mkdir(dir, { recursive: true });
    const logPath = join(dir, LOG);
    const snapPath = join(dir, SNAPSHOT);
    const snapBuf = await readIfExists(snapPath);
    const logBuf = await readIfExists(logPath);
    const snap = snapBuf ? decodeSnapshot(snapBuf, snapPath, snapshotRecovery(dir)) : undefined;
    if (snapBuf && !logBuf) {
      throw refusal(logPath, 0, `is missing while ${snapPath} exists (the writes recorded after the snapshot would be lost)`,
        `Nothing was loaded or changed. To recover, restore ${dir} from a backup; or, accepting the loss of every write after the snapshot, create an empty ${logPath} and start again`);
    }
    // Format 1 (earlier versions): a headerless snapshot, a log of bare {"s":...} lines, or the
    // empty log an earlier version created at its first start.
    const v1 = snap?.version === 1 || (logBuf !== undefined && (/^\{"s":/.test(logBuf.subarray(0, 8).toString()) || (logBuf.length === 0 && !snap)));
    const parsed = v1
      ? DurableLog.readV1(dir, logPath, logBuf, snap ? (snap.version === 1 ? snap.body.seq : snap.header.seq) : 0, snapPath, warn)
      : DurableLog.readV2(dir, logPath, logBuf, snap?.version === 2 ? snap.header : undefined, snapPath, warn);
    const snapshot = snap ? (snap.body as S) : undefined;
    let fh: FileHandle;
    if (!logBuf) {
      await replaceFile(dir, LOG, logHeaderLine(null, 0));
      fh = await open(logPath, 'a');
    } else {
      // New appends must never follow a torn tail or a line without its newline.
      if (parsed.tornAt !== undefined) {
        const t = await open(logPath, 'r+');
        try {
          await t.truncate(parsed.tornAt);
          await t.datasync();
        } finally {
          await t.close();
        }
      }
      fh = await open(logPath, 'a');
      if (parsed.missingNewline) {
        await fh.write('\n');
        await fh.datasync();
      }
    }
    const log = new DurableLog(dir, fh, parsed.seq, snapshotEvery, capture, compactBytes, warn);
    log.sinceSnapshot = parsed.records.length;
    log.logBytes = logBuf?.length ?? 0;
    log.snapshotBytes = snapBuf?.length ?? 0;
    const loaded: Loaded<S> = { snapshot, records: parsed.records, offsets: parsed.offsets };
    if (v1) loaded.convertedFrom = 1;
    return { log, loaded };
  }

  /**
   * Splits the log into complete lines. A last line without its newline is kept when it is a
   * complete valid record (written whole; only the newline is missing: `missingNewline`), else it
   * is a torn tail: dropped (`tornAt`), reported at warn.
   */
  private static lines(logPath: string, buf: Buffer, valid: (line: string) => boolean, warn: Warn) {
    const lines: Array<{ line: string; offset: number }> = [];
    let pos = 0;
    let tornAt: number | undefined;
    let missingNewline = false;
    while (pos < buf.length) {
      const nl = buf.indexOf(0x0a, pos);
      if (nl < 0) {
        const tail = buf.subarray(pos).toString('utf8');
        if (valid(tail)) {
          lines.push({ line: tail, offset: pos });
          missingNewline = true;
        } else {
          tornAt = pos;
          warn('embedded store: dropped a torn last record (a write interrupted by a crash, never acknowledged)', { file: logPath, offset: pos, bytes: buf.length - pos });
        }
        break;
      }
      lines.push({ line: buf.subarray(pos, nl).toString('utf8'), offset: pos });
      pos = nl + 1;
    }
    return { lines, tornAt, missingNewline };
  }

  private static readV2(dir: string, logPath: string, buf: Buffer | undefined, snap: { id: string; seq: number } | undefined, snapPath: string, warn: Warn) {
    const records: LogRecord[] = [];
    const offsets: number[] = [];
    if (!buf) return { records, offsets, seq: 0, tornAt: undefined, missingNewline: false };
    const { lines, tornAt, missingNewline } = DurableLog.lines(logPath, buf, (l) => decodeLine(l).ok, warn);
    const recover = (off: number) => logRecovery(dir, logPath, off);
    const first = lines[0];
    if (!first) throw refusal(logPath, 0, 'is empty: its header naming the snapshot it continues is missing', snapshotRecovery(dir));
    const h = decodeLine(first.line);
    const header = h.ok ? (h.payload as unknown as LogHeader) : undefined;
    if (!header || header.log !== LOG_FORMAT || !Number.isInteger(header.after)) {
      throw refusal(logPath, 0, `has no valid header (${h.ok ? 'not a log header' : h.problem})`, snapshotRecovery(dir));
    }
    if (header.snapshot !== null && !snap) {
      throw refusal(logPath, 0, `continues snapshot ${header.snapshot} (sequence ${header.after}), but ${snapPath} is missing`, snapshotRecovery(dir));
    }
    // The snapshot a log names is the one beside it, or a newer one (crash between writing a
    // snapshot and replacing the log); never an older one.
    const base = snap?.seq ?? 0;
    if (snap && (snap.id === header.snapshot ? snap.seq !== header.after : snap.seq < header.after)) {
      throw refusal(snapPath, 0, `is snapshot ${snap.id} (sequence ${snap.seq}), but ${logPath} continues ${header.snapshot ?? 'no snapshot'} (sequence ${header.after})`, snapshotRecovery(dir));
    }
    let expected = header.after + 1;
    for (let i = 1; i < lines.length; i++) {
      const { line, offset } = lines[i]!;
      const d = decodeLine(line);
      if (!d.ok) throw refusal(logPath, offset, `the record ${d.problem}`, recover(offset));
      const s = d.payload.s;
      if (s !== expected) {
        throw refusal(logPath, offset, `the record has sequence ${String(s)} where ${expected} was expected (${typeof s === 'number' && s > expected ? 'records are missing' : 'out of order'})`, recover(offset));
      }
      expected++;
      if (s <= base) continue;
      records.push(d.payload as LogRecord);
      offsets.push(offset);
    }
    return { records, offsets, seq: Math.max(base, expected - 1), tornAt, missingNewline };
  }

  /** Format 1 (earlier versions): no checksums to check, but sequences must still be contiguous. */
  private static readV1(dir: string, logPath: string, buf: Buffer | undefined, base: number, snapPath: string, warn: Warn) {
    const records: LogRecord[] = [];
    const offsets: number[] = [];
    const parse = (l: string): LogRecord | undefined => {
      try {
        const r = JSON.parse(l) as LogRecord;
        return r && typeof r.s === 'number' ? r : undefined;
      } catch {
        return undefined;
      }
    };
    const { lines, tornAt, missingNewline } = buf
      ? DurableLog.lines(logPath, buf, (l) => parse(l) !== undefined, warn)
      : { lines: [], tornAt: undefined, missingNewline: false };
    let expected = base + 1;
    let seq = base;
    for (const { line, offset } of lines) {
      const rec = parse(line);
      if (!rec) throw refusal(logPath, offset, 'the format-1 record is not valid JSON', logRecovery(dir, logPath, offset));
      if (rec.s <= base) continue;
      if (rec.s !== expected) {
        const why = expected === 1 ? `records before it are missing: ${snapPath} was deleted or the log was cut` : 'records are missing';
        throw refusal(logPath, offset, `the format-1 record has sequence ${rec.s} where ${expected} was expected (${why})`, logRecovery(dir, logPath, offset));
      }
      expected++;
      seq = rec.s;
      records.push(rec);
      offsets.push(offset);
    }
    return { records, offsets, seq, tornAt, missingNewline };
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

  /**
   * Append a record (its `s` is assigned here). Call synchronously right after applying the change
   * in memory, so sequence order equals memory order. Resolves once durable.
   */
  append(rec: Omit<LogRecord, 's'>): Promise<void> {
    if (this.failed) return Promise.reject(new StorageError('Unavailable', this.failed));
    if (this.closed) return Promise.reject(new StorageError('Unavailable', 'store is closed'));
    const seq = ++this.seq;
    const line = envelope(JSON.stringify({ s: seq, ...rec }));
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
        if (this.sinceSnapshot >= this.snapshotEvery || this.logBytes > Math.max(this.compactBytes, this.snapshotBytes)) {
          await this.writeSnapshot();
          continue;
        }
        const batch = this.queue;
        this.queue = [];
        const text = batch.map((w) => w.line).join('');
        try {
          await this.fh.write(text);
          await this.fh.datasync();
          this.batchesWritten++;
        } catch (err) {
          this.fail(err as Error, batch);
          break;
        }
        this.sinceSnapshot += batch.length;
        this.logBytes += Buffer.byteLength(text);
        for (const w of batch) w.resolve();
      }
    } finally {
      this.flushing = false;
      this.idleResolve?.();
    }
  }

  /** Write a snapshot now (after loading a format-1 directory: converts it). */
  async compact(): Promise<void> {
    while (this.flushing) await this.idle;
    this.flushing = true;
    try {
      await this.writeSnapshot();
    } finally {
      this.flushing = false;
    }
    if (this.failed) throw new StorageError('Unavailable', this.failed);
  }

  /**
   * Write a snapshot of the whole in-memory state, then replace the log by an empty one naming it.
   * The capture includes every record appended so far (queued ones too), so those are durable once
   * the snapshot is.
   */
  private async writeSnapshot(): Promise<void> {
    const seq = this.seq;
    const covered = this.queue;
    this.queue = [];
    try {
      await this.snapshotNow(seq);
    } catch (err) {
      this.fail(err as Error, covered);
      return;
    }
    for (const w of covered) w.resolve();
  }

  /** Snapshot + fresh log naming it; throws (changing nothing the loader relies on) when it cannot. */
  private async snapshotNow(seq: number): Promise<void> {
    const id = randomBytes(8).toString('hex');
    const snap = encodeSnapshot(id, seq, JSON.stringify(this.capture()));
    await replaceFile(this.dir, SNAPSHOT, snap);
    const header = logHeaderLine(id, seq);
    await replaceFile(this.dir, LOG, header);
    await this.fh.close().catch(() => undefined);
    this.fh = await open(join(this.dir, LOG), 'a');
    this.sinceSnapshot = 0;
    this.snapshotBytes = Buffer.byteLength(snap);
    this.logBytes = Buffer.byteLength(header);
  }

  private fail(err: Error, batch: Waiter[]): void {
    this.failed = `data directory write failed: ${err.message}`;
    const e = new StorageError('Unavailable', this.failed);
    for (const w of [...batch, ...this.queue]) w.reject(e);
    this.queue = [];
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
    if (!this.failed || this.flushing || this.closed) return;
    this.flushing = true;
    this.idle = new Promise((r) => (this.idleResolve = r));
    try {
      await this.snapshotNow(this.seq);
      this.warn('embedded store: the data directory accepts writes again; recovered', { dir: this.dir });
      this.failed = undefined;
      clearInterval(this.recovery);
      this.recovery = undefined;
    } catch {
      // Still failing (no space yet): the next tick tries again.
    } finally {
      this.flushing = false;
      this.idleResolve?.();
      if (this.queue.length > 0 && !this.failed) void this.flushLoop();
    }
  }

  /** Flush pending lines, write a final snapshot (fast restart) and close the file. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.recovery);
    while (this.flushing) await this.idle;
    if (!this.failed && this.sinceSnapshot > 0) {
      this.flushing = true;
      await this.writeSnapshot();
      this.flushing = false;
    }
    await this.fh.close();
  }
}
