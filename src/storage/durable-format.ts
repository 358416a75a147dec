// The on-disk format (version 2) of the embedded store, and the refusals a damaged store gets.
//
// snapshot.json: one header line, then the state as JSON:
//   {"format":"reverser-snapshot/v2","id":"<hex>","seq":N,"bytes":L,"sha256":"<hex>"}\n<L bytes of JSON>
// log.jsonl: one line per record, each an envelope whose checksum covers the payload's exact bytes:
//   {"c":"<32 hex>","p":<payload JSON>}\n
// The first payload is the header naming the snapshot the log continues:
//   {"log":"reverser-log/v2","snapshot":"<id>"|null,"after":N}
// and every further payload is a record {"s":<sequence>, ...} with sequences N+1, N+2, ... .
import { createHash } from 'node:crypto';
import { StartupRefusedError } from './startup-error.js';
import { HashedBytes, stringifySliced } from './sliced-json.js';

export const SNAPSHOT_FORMAT = 'reverser-snapshot/v2';
export const LOG_FORMAT = 'reverser-log/v2';

export interface SnapshotHeader {
  format: string;
  id: string;
  seq: number;
  bytes: number;
  sha256: string;
}

export interface LogHeader {
  log: string;
  snapshot: string | null;
  after: number;
}

function checksum(payload: string): string {
  return createHash('sha256').update(payload).digest('hex').slice(0, 32);
}

/** One log line (with its newline) for a payload already serialized. */
export function envelope(payload: string): string {
  return `{"c":"${checksum(payload)}","p":${payload}}\n`;
}

const ENVELOPE = /^\{"c":"([0-9a-f]{32})","p":(.*)\}$/s;

/** A decoded log line: its payload, or why it is not a valid record. */
export type Decoded = { ok: true; payload: Record<string, unknown> } | { ok: false; problem: string };

export function decodeLine(line: string): Decoded {
  const m = ENVELOPE.exec(line);
  if (!m) return { ok: false, problem: 'is not a record of this format' };
  if (checksum(m[2]!) !== m[1]) return { ok: false, problem: 'fails its checksum (the record was changed or damaged)' };
  try {
    const p: unknown = JSON.parse(m[2]!);
    if (p && typeof p === 'object' && !Array.isArray(p)) return { ok: true, payload: p as Record<string, unknown> };
  } catch {
    // a checksummed payload that is not JSON can only have been written so on purpose
  }
  return { ok: false, problem: 'is not a record of this format' };
}

/**
 * The bytes of a snapshot file holding `body` serialized: built in slices that yield the event loop (sliced-json.ts), whatever the size of the state.
 */
export async function encodeSnapshotSliced(id: string, seq: number, body: unknown): Promise<Buffer[]> {
  const out = new HashedBytes();
  await stringifySliced(body, out);
  const header: SnapshotHeader = { format: SNAPSHOT_FORMAT, id, seq, bytes: out.bytes, sha256: out.digest() };
  return [Buffer.from(`${JSON.stringify(header)}\n`), ...out.buffers];
}

/** One log line for `payload` (an object too large to serialize in one step), built in slices. */
export async function envelopeSliced(payload: unknown): Promise<Buffer[]> {
  const out = new HashedBytes();
  await stringifySliced(payload, out);
  return [Buffer.from(`{"c":"${out.digest().slice(0, 32)}","p":`), ...out.buffers, Buffer.from('}\n')];
}

export type SnapshotVersion = { version: 2; header: SnapshotHeader; body: unknown } | { version: 1; body: { seq: number } & Record<string, unknown> };

/** Reads a snapshot file (format 2, or a format-1 file of earlier versions); throws a refusal. */
export function decodeSnapshot(buf: Buffer, file: string, recovery: string): SnapshotVersion {
  const nl = buf.indexOf(0x0a);
  const first = buf.subarray(0, nl < 0 ? buf.length : nl).toString('utf8');
  let header: Partial<SnapshotHeader> | undefined;
  try {
    header = JSON.parse(first) as Partial<SnapshotHeader>;
  } catch {
    header = undefined;
  }
  if (header && header.format === SNAPSHOT_FORMAT) {
    const start = nl + 1;
    const want = Number(header.bytes);
    const have = buf.length - start;
    if (typeof header.id !== 'string' || !Number.isInteger(header.seq) || !Number.isInteger(want) || typeof header.sha256 !== 'string') {
      throw refusal(file, 0, 'has an unreadable header', recovery);
    }
    if (have < want) throw refusal(file, buf.length, `is truncated: it ends at byte ${buf.length}, but its header announces ${want} bytes of content from byte ${start}`, recovery);
    if (have > want) throw refusal(file, start + want, `has ${have - want} unexpected bytes after its content`, recovery);
    const body = buf.subarray(start);
    if (createHash('sha256').update(body).digest('hex') !== header.sha256) {
      throw refusal(file, start, 'fails its checksum (the content was changed or damaged)', recovery);
    }
    return { version: 2, header: header as SnapshotHeader, body: JSON.parse(body.toString('utf8')) };
  }
  // Format 1 (no header): one JSON object with "seq". Nothing to verify it against but its syntax.
  let v1: unknown;
  try {
    v1 = JSON.parse(buf.toString('utf8'));
  } catch (e) {
    throw refusal(file, buf.length, `is neither a format-2 snapshot nor valid format-1 JSON (${(e as Error).message}; truncated or damaged)`, recovery);
  }
  if (!v1 || typeof v1 !== 'object' || !Number.isInteger((v1 as { seq?: unknown }).seq)) {
    throw refusal(file, 0, 'is neither a format-2 snapshot nor a format-1 snapshot', recovery);
  }
  return { version: 1, body: v1 as { seq: number } };
}

/** A start-up refusal naming the file, the byte offset and how to recover. */
export function refusal(file: string, offset: number, problem: string, recovery: string): StartupRefusedError {
  return new StartupRefusedError(`embedded store damaged: ${file} at byte ${offset}: ${problem}. ${recovery}`);
}

/** Recovery advice for damage in the log at `offset`: keep what precedes it, or restore. */
export function logRecovery(storeDir: string, file: string, offset: number): string {
  return `Nothing was loaded or changed. To recover, restore ${storeDir} from a backup; or, accepting the loss of every write ` +
    `recorded from byte ${offset} on, cut the log there (truncate -s ${offset} ${file}) and start again`;
}

export function snapshotRecovery(storeDir: string): string {
  return `Nothing was loaded or changed. To recover, restore ${storeDir} from a backup (a snapshot cannot be partly recovered)`;
}
