// Opening the embedded store's directory at start-up for durable-log.ts: reading the snapshot and
// splitting and checking the log's lines: format 2 with checksums and a header naming the snapshot, or format 1 of
// earlier versions. Every problem is a StartupRefusedError naming the file and byte offset.
import { mkdir, open, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { LOG_FORMAT, decodeLine, decodeSnapshot, envelope, logRecovery, refusal, snapshotRecovery, type LogHeader } from './durable-format.js';
import { readIfExists, replaceFile } from './durable-files.js';

export const LOG = 'log.jsonl';
export const SNAPSHOT = 'snapshot.json';

export function logHeaderLine(snapshot: string | null, after: number): string {
  const h: LogHeader = { log: LOG_FORMAT, snapshot, after };
  return envelope(JSON.stringify(h));
}

export interface LogRecord {
  s: number;
  [k: string]: unknown;
}

export type Warn = (msg: string, fields?: Record<string, unknown>) => void;

export interface ReadLog {
  records: LogRecord[];
  offsets: number[];
  /** The last sequence number (the snapshot's when the log has no newer record). */
  seq: number;
  /** Where a torn last record starts (to be cut before appending). */
  tornAt: number | undefined;
  /** The last record is complete but lacks its newline (to be added before appending). */
  missingNewline: boolean;
}

/**
 * Splits the log into complete lines. A last line without its newline is kept when it is a
 * complete valid record (written whole; only the newline is missing: `missingNewline`), else it
 * is a torn tail: dropped (`tornAt`), reported at warn.
 */
function splitLines(logPath: string, buf: Buffer, valid: (line: string) => boolean, warn: Warn) {
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

export function readV2(dir: string, logPath: string, buf: Buffer | undefined, snap: { id: string; seq: number } | undefined, snapPath: string, warn: Warn): ReadLog {
  const records: LogRecord[] = [];
  const offsets: number[] = [];
  if (!buf) return { records, offsets, seq: 0, tornAt: undefined, missingNewline: false };
  const { lines, tornAt, missingNewline } = splitLines(logPath, buf, (l) => decodeLine(l).ok, warn);
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
export function readV1(dir: string, logPath: string, buf: Buffer | undefined, base: number, snapPath: string, warn: Warn): ReadLog {
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
    ? splitLines(logPath, buf, (l) => parse(l) !== undefined, warn)
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


/**
 * Reads (creating the directory and an empty log) the snapshot and the log, repairs a torn tail
 * or a missing last newline so appends can follow, and opens the log for appending. Throws
 * StartupRefusedError when they are damaged; changes nothing on disk in that case.
 */
export async function openStoreDir(dir: string, warn: Warn) {
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
      ? readV1(dir, logPath, logBuf, snap ? (snap.version === 1 ? snap.body.seq : snap.header.seq) : 0, snapPath, warn)
      : readV2(dir, logPath, logBuf, snap?.version === 2 ? snap.header : undefined, snapPath, warn);
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
    return { snapshot: snap?.body, parsed, v1, fh, logBytes: logBuf?.length ?? 0, snapshotBytes: snapBuf?.length ?? 0 };
}
