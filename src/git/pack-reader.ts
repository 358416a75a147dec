// Reads objects out of a repository's packfiles with node's native zlib. isomorphic-git inflates
// each packed object with pako (JavaScript zlib, a new 64 KiB inflate state per object), which a
// CPU profile of a 10,000-file scan showed as most of its time (docs/benchmarks.md,
// analyzer.scan); native inflate of the same bytes is several times faster. Only what git's pack
// format v2 and index v2 say: whole objects, OFS_DELTA and REF_DELTA chains. Anything else (loose
// objects, a pack added since the last look, an index of another version) is left to
// isomorphic-git by answering undefined (src/git/object-store.ts).
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { inflateSync } from 'node:zlib';
import { inflateSmall } from './inflate.js';
import type { ObjectType } from './objects.js';

const TYPES: Record<number, ObjectType | undefined> = { 1: 'commit', 2: 'tree', 3: 'blob' };
const OFS_DELTA = 6;
const REF_DELTA = 7;
const BASE_CACHE = 256;
/** What a batch read (readEach) keeps of the objects it resolved, for the deltas after them. */
const BATCH_CACHE_BYTES = 32 << 20;
/** Objects up to this size are inflated by inflate.ts (no per-call native setup); larger ones by node's zlib. */
const SMALL_OBJECT = 64 << 10;
/** Output buffers are sized from the object's header up to this (past it, zlib's own growth). */
const MAX_CHUNK = 1 << 20;

interface Pack {
  name: string;
  offsets: Map<string, number>;
  data: Buffer | undefined;
}

export interface PackedObject {
  type: ObjectType;
  object: Buffer;
}

/** Objects resolved during one batch, by offset, within a byte budget (oldest dropped first). */
class BatchCache {
  private readonly byOffset = new Map<number, PackedObject>();
  private bytes = 0;

  get(at: number): PackedObject | undefined {
    return this.byOffset.get(at);
  }

  set(at: number, o: PackedObject): void {
    this.byOffset.set(at, o);
    this.bytes += o.object.length;
    while (this.bytes > BATCH_CACHE_BYTES && this.byOffset.size > 1) {
      const [first, old] = this.byOffset.entries().next().value as [number, PackedObject];
      this.byOffset.delete(first);
      this.bytes -= old.object.length;
    }
  }
}

export class PackReader {
  private packs: Pack[] = [];
  private dirStamp = -1;
  /** Recently resolved delta bases, by pack and offset (a chain shares its bases). */
  private readonly bases = new Map<string, PackedObject>();

  constructor(private readonly gitdir: string) {}

  /** The object's type and content when a pack holds it; undefined otherwise. */
  read(oid: string): PackedObject | undefined {
    const at = this.locate(oid);
    return at ? this.readAt(at[0], at[1], undefined) : undefined;
  }

  /**
   * Many objects in the order they lie in their packs, as [index in `oids`, object]: a delta's base
   * precedes it in git's packs, so each object is inflated once, not once per delta that needs it.
   * The objects no pack holds come last, as [index, undefined].
   */
  *inPackOrder(oids: readonly string[]): Generator<[number, PackedObject | undefined]> {
    const missing: number[] = [];
    const located: Array<{ i: number; pack: number; at: number }> = [];
    for (let i = 0; i < oids.length; i++) {
      const at = this.locate(oids[i]);
      if (at) located.push({ i, pack: this.packs.indexOf(at[0]), at: at[1] });
      else missing.push(i);
    }
    located.sort((a, b) => a.pack - b.pack || a.at - b.at);
    let cache = new BatchCache();
    let cachePack = -1;
    for (const l of located) {
      if (l.pack !== cachePack) {
        cache = new BatchCache();
        cachePack = l.pack;
      }
      const o = this.readAt(this.packs[l.pack], l.at, cache);
      if (o) yield [l.i, o];
      else missing.push(l.i);
    }
    for (const i of missing) yield [i, undefined];
  }

  /**
   * The pack and offset of an object. The pack directory is looked at again only when no known
   * pack holds the object: a packed object's content never changes, so a pack added since cannot
   * change what a known one answers (a stat per object was a tenth of a 10,000-file scan).
   */
  private locate(oid: string): [Pack, number] | undefined {
    for (let pass = 0; pass < 2; pass++) {
      for (const p of this.packs) {
        const at = p.offsets.get(oid);
        if (at !== undefined) return [p, at];
      }
      if (!this.refresh()) return undefined;
    }
    return undefined;
  }

  /** Loads the indexes of packs added since the last look (the pack directory's mtime moved); true when one was added. */
  private refresh(): boolean {
    const dir = join(this.gitdir, 'objects', 'pack');
    let stamp: number;
    try {
      stamp = statSync(dir).mtimeMs;
    } catch {
      return false;
    }
    if (stamp === this.dirStamp) return false;
    this.dirStamp = stamp;
    const known = new Set(this.packs.map((p) => p.name));
    let added = false;
    for (const f of readdirSync(dir)) {
      if (!f.endsWith('.idx') || known.has(f)) continue;
      const offsets = parseIndex(readFileSync(join(dir, f)));
      if (offsets) {
        this.packs.push({ name: f, offsets, data: undefined });
        added = true;
      }
    }
    return added;
  }

  private readAt(p: Pack, start: number, batch: BatchCache | undefined): PackedObject | undefined {
    const hit = batch?.get(start);
    if (hit) return hit;
    const data = (p.data ??= readFileSync(join(this.gitdir, 'objects', 'pack', p.name.replace(/\.idx$/, '.pack'))));
    let pos = start;
    let c = data[pos++];
    const kind = (c >> 4) & 7;
    let size = c & 15;
    let mult = 16;
    while (c & 0x80) {
      c = data[pos++];
      size += (c & 0x7f) * mult;
      mult *= 128;
    }
    let base: PackedObject | undefined;
    if (kind === OFS_DELTA) {
      c = data[pos++];
      let off = c & 0x7f;
      while (c & 0x80) {
        c = data[pos++];
        off = (off + 1) * 128 + (c & 0x7f);
      }
      base = this.baseAt(p, start - off, batch);
    } else if (kind === REF_DELTA) {
      const oid = data.toString('hex', pos, pos + 20);
      pos += 20;
      base = this.read(oid);
    }
    const inflated = inflateExactly(data, pos, size, p.name, start);
    let out: PackedObject | undefined;
    if (kind === OFS_DELTA || kind === REF_DELTA) out = base ? { type: base.type, object: applyDelta(base.object, inflated) } : undefined;
    else {
      const type = TYPES[kind];
      out = type ? { type, object: inflated } : undefined;
    }
    if (out && batch) batch.set(start, out);
    return out;
  }

  private baseAt(p: Pack, at: number, batch: BatchCache | undefined): PackedObject | undefined {
    if (batch) return this.readAt(p, at, batch);
    const key = `${p.name}:${at}`;
    const hit = this.bases.get(key);
    if (hit) return hit;
    const r = this.readAt(p, at, undefined);
    if (r) {
      if (this.bases.size >= BASE_CACHE) this.bases.delete(this.bases.keys().next().value as string);
      this.bases.set(key, r);
    }
    return r;
  }
}

/**
 * Inflates the zlib stream at `pos`, which the pack header says holds `size` bytes. The output
 * buffer is allocated at that size (zlib's default 16 KiB chunk per object was most of a scan's
 * garbage), and inflating stops past it, so a corrupt or hostile pack cannot make it allocate more.
 */
function inflateExactly(data: Buffer, pos: number, size: number, pack: string, start: number): Buffer {
  if (size <= SMALL_OBJECT) {
    const small = inflateSmall(data, pos, size);
    if (small) return small;
  }
  let inflated: Buffer;
  try {
    inflated = inflateSync(data.subarray(pos), { chunkSize: Math.min(Math.max(64, size), MAX_CHUNK), maxOutputLength: Math.max(1, size) });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') throw new Error(`pack ${pack}: object at ${start} inflates to more than ${size} bytes`);
    throw e;
  }
  if (inflated.length !== size) throw new Error(`pack ${pack}: object at ${start} inflates to ${inflated.length} bytes, not ${size}`);
  return inflated;
}

/** A version 2 pack index: oid → offset in the pack; undefined for another version. */
function parseIndex(idx: Buffer): Map<string, number> | undefined {
  if (idx.length < 8 + 256 * 4 || idx.readUInt32BE(0) !== 0xff744f63 || idx.readUInt32BE(4) !== 2) return undefined;
  const n = idx.readUInt32BE(8 + 255 * 4);
  const names = 8 + 256 * 4;
  const offsets32 = names + n * 20 + n * 4;
  const offsets64 = offsets32 + n * 4;
  const out = new Map<string, number>();
  for (let i = 0; i < n; i++) {
    let off = idx.readUInt32BE(offsets32 + i * 4);
    if (off & 0x80000000) off = Number(idx.readBigUInt64BE(offsets64 + (off & 0x7fffffff) * 8));
    out.set(idx.toString('hex', names + i * 20, names + i * 20 + 20), off);
  }
  return out;
}

function readSize(d: Buffer, pos: number): [number, number] {
  let size = 0;
  let mult = 1;
  let c: number;
  do {
    c = d[pos++];
    size += (c & 0x7f) * mult;
    mult *= 128;
  } while (c & 0x80);
  return [size, pos];
}

/** git's delta format: source size, target size, then copy (from the base) and insert instructions. */
function applyDelta(base: Buffer, delta: Buffer): Buffer {
  let [srcSize, pos] = readSize(delta, 0);
  if (srcSize !== base.length) throw new Error(`delta expects a base of ${srcSize} bytes, got ${base.length}`);
  let dstSize: number;
  [dstSize, pos] = readSize(delta, pos);
  const out = Buffer.allocUnsafe(dstSize);
  let o = 0;
  while (pos < delta.length) {
    const op = delta[pos++];
    if (op & 0x80) {
      let off = 0;
      let len = 0;
      for (let i = 0; i < 4; i++) if (op & (1 << i)) off += delta[pos++] * 2 ** (8 * i);
      for (let i = 0; i < 3; i++) if (op & (1 << (4 + i))) len += delta[pos++] * 2 ** (8 * i);
      if (len === 0) len = 0x10000;
      base.copy(out, o, off, off + len);
      o += len;
    } else if (op > 0) {
      delta.copy(out, o, pos, pos + op);
      o += op;
      pos += op;
    } else throw new Error('delta: reserved instruction 0');
  }
  if (o !== dstSize) throw new Error(`delta produced ${o} bytes, expected ${dstSize}`);
  return out;
}
