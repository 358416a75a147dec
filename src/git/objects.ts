// Git object encoding and writing, done with node:crypto and node:zlib rather than through
// isomorphic-git: its pure-JS deflate and one-file-per-object writes made a 10,000-object snapshot
// take seconds. Small batches become loose objects; large ones become one packfile with its
// version-2 index written here too, so nothing has to re-read the pack to index it.
// isomorphic-git still reads objects (loose or packed) and does all network transport.
import { createHash } from 'node:crypto';
import { deflateSync, crc32 } from 'node:zlib';
import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export type ObjectType = 'blob' | 'tree' | 'commit';

export interface TreeEntry {
  mode: string; // '100644', '100755', '040000', '120000', '160000'
  path: string; // one path segment
  oid: string;
}

export interface PendingObject {
  type: ObjectType;
  oid: string;
  content: Buffer;
}

export function hashObject(type: ObjectType, content: Buffer): string {
  const h = createHash('sha1');
  h.update(`${type} ${content.length}\0`);
  h.update(content);
  return h.digest('hex');
}

export function isTreeMode(mode: string): boolean {
  return mode === '040000' || mode === '40000';
}

/** Git's tree order: byte order of names, where a tree's name sorts as if it ended in '/'. */
export function compareTreeEntries(a: TreeEntry, b: TreeEntry): number {
  const an = isTreeMode(a.mode) ? a.path + '/' : a.path;
  const bn = isTreeMode(b.mode) ? b.path + '/' : b.path;
  return Buffer.compare(Buffer.from(an), Buffer.from(bn));
}

// The encoded bytes of each entry object, so a tree rewritten for a one-file change re-encodes one
// entry and copies the other 9,999 (entries are shared between a cached tree and its successor).
const encodedEntries = new WeakMap<TreeEntry, Buffer>();

function encodeEntry(e: TreeEntry): Buffer {
  let b = encodedEntries.get(e);
  if (!b) {
    // Git writes tree modes without the leading zero ("40000"); fsck --strict insists on it.
    const mode = isTreeMode(e.mode) ? '40000' : e.mode;
    b = Buffer.concat([Buffer.from(`${mode} ${e.path}\0`, 'utf8'), Buffer.from(e.oid, 'hex')]);
    encodedEntries.set(e, b);
  }
  return b;
}

export function serializeTree(entries: readonly TreeEntry[]): Buffer {
  return Buffer.concat(entries.map(encodeEntry));
}

export function parseTree(buf: Buffer): TreeEntry[] {
  const entries: TreeEntry[] = [];
  let i = 0;
  while (i < buf.length) {
    const space = buf.indexOf(0x20, i);
    const nul = buf.indexOf(0, space);
    let mode = buf.toString('latin1', i, space);
    if (mode.length === 5) mode = '0' + mode;
    const path = buf.toString('utf8', space + 1, nul);
    const oid = buf.toString('hex', nul + 1, nul + 21);
    const entry = { mode, path, oid };
    if (mode !== '040000' || buf[i] === 0x34) encodedEntries.set(entry, buf.subarray(i, nul + 21));
    entries.push(entry);
    i = nul + 21;
  }
  return entries;
}

export interface Signature {
  name: string;
  email: string;
  /** Seconds since the epoch. */
  timestamp: number;
  /** Minutes east of UTC (+120 for UTC+2). */
  timezoneOffset: number;
}

// Git refuses names and emails containing angle brackets or newlines (fsck: badName/badEmail).
function clean(s: string): string {
  return s.replace(/[<>\n\r\0]/g, '').trim();
}

function formatSignature(s: Signature): string {
  const sign = s.timezoneOffset < 0 ? '-' : '+';
  const abs = Math.abs(s.timezoneOffset);
  const tz = `${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}${String(abs % 60).padStart(2, '0')}`;
  return `${clean(s.name)} <${clean(s.email)}> ${Math.floor(s.timestamp)} ${tz}`;
}

export function serializeCommit(c: { tree: string; parents: string[]; author: Signature; committer: Signature; message: string }): Buffer {
  let text = `tree ${c.tree}\n`;
  for (const p of c.parents) text += `parent ${p}\n`;
  text += `author ${formatSignature(c.author)}\ncommitter ${formatSignature(c.committer)}\n\n`;
  text += c.message.endsWith('\n') ? c.message : c.message + '\n';
  return Buffer.from(text, 'utf8');
}

const PACK_TYPES: Record<ObjectType, number> = { commit: 1, tree: 2, blob: 3 };

/** Above this many objects a batch is written as one packfile instead of loose objects. */
export const PACK_THRESHOLD = 64;

/** Writes a batch of new objects into `gitdir`: loose for small batches, one pack for large ones. */
export async function writeObjects(gitdir: string, objects: readonly PendingObject[]): Promise<void> {
  if (objects.length === 0) return;
  if (objects.length > PACK_THRESHOLD) await writePack(gitdir, objects);
  else for (const o of objects) writeLoose(gitdir, o);
}

let tmpCounter = 0;

// Synchronous on purpose: a handful of small files per commit cost less than the thread-pool
// round trips of their async versions; large batches go to writePack instead.
//
// A fan-out directory is made when a write finds it missing (ENOENT), as git itself does: making
// all 256 up front cost a new repository 256 mkdirs for a first commit of three or four objects,
// and with thousands of one-object GitTargets on their own repositories those mkdirs were most of
// the git workers' time (bench/scale, docs/benchmarks.md "scale.tenants").
export function writeLoose(gitdir: string, o: PendingObject): void {
  const dir = join(gitdir, 'objects', o.oid.slice(0, 2));
  const file = join(dir, o.oid.slice(2));
  if (existsSync(file)) return;
  // A big tree is mostly SHA-1 bytes that do not compress; storing it (level 0, still valid zlib)
  // saves most of the commit's CPU time in a 10,000-file folder. `git gc` repacks it with deltas.
  const level = o.type === 'tree' && o.content.length > 65_536 ? 0 : 1;
  const data = deflateSync(Buffer.concat([Buffer.from(`${o.type} ${o.content.length}\0`), o.content]), { level });
  // Write then rename, so a crash never leaves a truncated object under its final name.
  const tmp = join(dir, `tmp_obj_${process.pid}_${++tmpCounter}`);
  try {
    writeFileSync(tmp, data, { mode: 0o444 });
  } catch (e) {
    // Not made yet (a new repository), or removed by `git prune` when it emptied it.
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    mkdirSync(dir, { recursive: true });
    writeFileSync(tmp, data, { mode: 0o444 });
  }
  renameSync(tmp, file);
}

function packObjectHeader(type: number, size: number): Buffer {
  const bytes: number[] = [];
  let byte = (type << 4) | (size & 0x0f);
  size = Math.floor(size / 16);
  while (size > 0) {
    bytes.push(byte | 0x80);
    byte = size & 0x7f;
    size = Math.floor(size / 128);
  }
  bytes.push(byte);
  return Buffer.from(bytes);
}

export interface BuiltPack {
  pack: Buffer[];
  digest: Buffer;
  index: Array<{ oid: string; offset: number; crc: number }>;
}

// The pack written for a batch is the pack its push sends: built (and deflated) once per batch.
const builtPacks = new WeakMap<readonly PendingObject[], BuiltPack>();

/** A non-delta version-2 packfile of `objects` (also what a push sends); the same array gives the same pack. */
export function buildPack(objects: readonly PendingObject[]): BuiltPack {
  let built = builtPacks.get(objects);
  if (!built) builtPacks.set(objects, (built = packOf(objects)));
  return built;
}

function packOf(objects: readonly PendingObject[]): BuiltPack {
  const unique = [...new Map(objects.map((o) => [o.oid, o])).values()];
  const header = Buffer.alloc(12);
  header.write('PACK', 0, 'latin1');
  header.writeUInt32BE(2, 4);
  header.writeUInt32BE(unique.length, 8);
  const chunks: Buffer[] = [header];
  const index: Array<{ oid: string; offset: number; crc: number }> = [];
  let offset = 12;
  for (const o of unique) {
    const entry = Buffer.concat([packObjectHeader(PACK_TYPES[o.type], o.content.length), deflateSync(o.content, { level: 1 })]);
    index.push({ oid: o.oid, offset, crc: crc32(entry) });
    chunks.push(entry);
    offset += entry.length;
  }
  const packSha = createHash('sha1');
  for (const c of chunks) packSha.update(c);
  const digest = packSha.digest();
  chunks.push(digest);
  return { pack: chunks, digest, index };
}

/** One pack plus its version-2 .idx, both written under objects/pack. */
export async function writePack(gitdir: string, objects: readonly PendingObject[]): Promise<void> {
  const { pack: chunks, digest: packDigest, index: packIndex } = buildPack(objects);
  const index = [...packIndex];
  index.sort((a, b) => (a.oid < b.oid ? -1 : a.oid > b.oid ? 1 : 0));
  const n = index.length;
  const large = index.filter((e) => e.offset >= 0x80000000);
  const idx = Buffer.alloc(8 + 256 * 4 + n * 20 + n * 4 + n * 4 + large.length * 8);
  idx.writeUInt32BE(0xff744f63, 0);
  idx.writeUInt32BE(2, 4);
  const fan = new Array<number>(256).fill(0);
  for (const e of index) fan[parseInt(e.oid.slice(0, 2), 16)]++;
  let acc = 0;
  for (let i = 0; i < 256; i++) {
    acc += fan[i];
    idx.writeUInt32BE(acc, 8 + i * 4);
  }
  let p = 8 + 1024;
  for (const e of index) p += idx.write(e.oid, p, 'hex');
  for (const e of index) p = idx.writeUInt32BE(e.crc >>> 0, p);
  let li = 0;
  for (const e of index) {
    if (e.offset >= 0x80000000) p = idx.writeUInt32BE((0x80000000 | li++) >>> 0, p);
    else p = idx.writeUInt32BE(e.offset, p);
  }
  for (const e of large) p = idx.writeBigUInt64BE(BigInt(e.offset), p);
  const idxSha = createHash('sha1').update(idx).update(packDigest).digest();

  const dir = join(gitdir, 'objects', 'pack');
  await mkdir(dir, { recursive: true });
  const name = `pack-${packDigest.toString('hex')}`;
  // The .pack lands before the .idx: readers discover packs through their index.
  const tmpPack = join(dir, `tmp_pack_${process.pid}_${++tmpCounter}`);
  // One write: thousands of small awaited writes cost more than the copy.
  await writeFile(tmpPack, Buffer.concat(chunks), { mode: 0o444 });
  await rename(tmpPack, join(dir, `${name}.pack`));
  const tmpIdx = join(dir, `tmp_idx_${process.pid}_${++tmpCounter}`);
  await writeFile(tmpIdx, Buffer.concat([idx, packDigest, idxSha]), { mode: 0o444 });
  await rename(tmpIdx, join(dir, `${name}.idx`));
}
