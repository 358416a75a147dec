// A small zlib (RFC 1950) / deflate (RFC 1951) decoder for the small objects of a pack, after
// zlib's own puff.c. node's inflateSync builds a stream, a native zlib state and a 16 KiB chunk per
// call: for a 10,000-file scan whose blobs and deltas are a few hundred bytes each, that setup
// cost more than the decoding (docs/benchmarks.md, analyzer.scan). This decoder needs none of it.
// It is strict: the output must be exactly the size the pack header states and the Adler-32
// checksum must match; anything it does not accept (a malformed stream, an incomplete Huffman
// code zlib would still take, a preset dictionary) answers undefined and the caller uses node's
// zlib, which then decides. test/git/inflate.test.ts compares it with node's zlib.

class Refused extends Error {}
const REFUSED = new Refused();

interface Huffman {
  /** count[len]: how many codes have that length (1..15). */
  count: Int16Array;
  /** Symbols ordered by code. */
  symbol: Int16Array;
  /**
   * The codes of up to TABLE_BITS bits, indexed by the next TABLE_BITS input bits (deflate sends
   * codes most significant bit first, so by the bits reversed): (symbol << 4) | length, 0 for a
   * longer code, which is decoded bit by bit.
   */
  table: Int32Array;
  /** How many bits index `table`: the longest code up to TABLE_BITS (a small code, a small table to fill). */
  tableBits: number;
}

const MAX_BITS = 15;
const TABLE_BITS = 9;

function newHuffman(n: number): Huffman {
  return { count: new Int16Array(MAX_BITS + 1), symbol: new Int16Array(n), table: new Int32Array(1 << TABLE_BITS), tableBits: 0 };
}
const LEN_BASE = [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258];
const LEN_EXTRA = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0];
const DIST_BASE = [1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577];
const DIST_EXTRA = [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13];
/** The order in which a dynamic block lists the code lengths of the code-length code. */
const CL_ORDER = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15];

/** Builds a canonical Huffman code from code lengths; only complete codes are accepted. */
function build(lengths: Uint8Array | number[], n: number, into?: Huffman): Huffman {
  const h = into ?? newHuffman(n);
  h.count.fill(0);
  for (let s = 0; s < n; s++) h.count[lengths[s]]++;
  if (h.count[0] === n) throw REFUSED;
  let left = 1;
  for (let len = 1; len <= MAX_BITS; len++) {
    left <<= 1;
    left -= h.count[len];
    if (left < 0) throw REFUSED; // over-subscribed
  }
  if (left > 0) throw REFUSED; // incomplete: zlib accepts some; it decides those
  const offs = new Int16Array(MAX_BITS + 1);
  for (let len = 1; len < MAX_BITS; len++) offs[len + 1] = offs[len] + h.count[len];
  for (let s = 0; s < n; s++) if (lengths[s] !== 0) h.symbol[offs[lengths[s]]++] = s;
  // Canonical codes, in symbol order within each length: the table of the short ones.
  let longest = MAX_BITS;
  while (h.count[longest] === 0) longest--;
  const bits = Math.min(longest, TABLE_BITS);
  const mask = (1 << bits) - 1;
  h.tableBits = bits;
  h.table.fill(0, 0, 1 << bits);
  let code = 0;
  let index = 0;
  for (let len = 1; len <= bits; len++) {
    for (let k = 0; k < h.count[len]; k++, index++, code++) {
      let reversed = 0;
      for (let b = 0; b < len; b++) reversed |= ((code >> b) & 1) << (len - 1 - b);
      const entry = (h.symbol[index] << 4) | len;
      for (let i = reversed; i <= mask; i += 1 << len) h.table[i] = entry;
    }
    code <<= 1;
  }
  return h;
}

const FIXED_LENGTHS = (() => {
  const l = new Uint8Array(288);
  l.fill(8, 0, 144);
  l.fill(9, 144, 256);
  l.fill(7, 256, 280);
  l.fill(8, 280, 288);
  return l;
})();
const FIXED_LIT = build(FIXED_LENGTHS, 288);
// The fixed distance code has 32 codes of 5 bits; 30 and 31 never occur in valid data.
const FIXED_DIST = build(new Uint8Array(32).fill(5), 32);

class Decoder {
  private input: Uint8Array = new Uint8Array(0);
  private out: Buffer = Buffer.alloc(0);
  private pos = 0;
  private bitBuf = 0;
  private bitCount = 0;
  private o = 0;
  private readonly codeLengths = newHuffman(19);
  private readonly lit = newHuffman(288);
  private readonly dist = newHuffman(32);
  private readonly lengths = new Uint8Array(288 + 32);

  /** The deflate stream at `start` into `out`; returns the position after its last block's final byte. */
  run(input: Uint8Array, start: number, out: Buffer): number {
    this.input = input;
    this.out = out;
    this.pos = start;
    this.bitBuf = 0;
    this.bitCount = 0;
    this.o = 0;
    try {
      return this.inflate();
    } finally {
      this.input = EMPTY; // hold no reference to a pack between calls
      this.out = EMPTY_BUFFER;
    }
  }

  private bits(need: number): number {
    let buf = this.bitBuf;
    while (this.bitCount < need) {
      if (this.pos >= this.input.length) throw REFUSED;
      buf |= this.input[this.pos++] << this.bitCount;
      this.bitCount += 8;
    }
    this.bitBuf = buf >>> need;
    this.bitCount -= need;
    return buf & ((1 << need) - 1);
  }

  private decode(h: Huffman): number {
    const bits = h.tableBits;
    while (this.bitCount < bits && this.pos < this.input.length) {
      this.bitBuf |= this.input[this.pos++] << this.bitCount;
      this.bitCount += 8;
    }
    const entry = h.table[this.bitBuf & ((1 << bits) - 1)];
    const len = entry & 15;
    if (entry !== 0 && len <= this.bitCount) {
      this.bitBuf >>>= len;
      this.bitCount -= len;
      return entry >> 4;
    }
    return this.decodeSlowly(h);
  }

  private decodeSlowly(h: Huffman): number {
    let code = 0;
    let first = 0;
    let index = 0;
    for (let len = 1; len <= MAX_BITS; len++) {
      code |= this.bits(1);
      const count = h.count[len];
      if (code - count < first) return h.symbol[index + (code - first)];
      index += count;
      first += count;
      first <<= 1;
      code <<= 1;
    }
    throw REFUSED;
  }

  private inflate(): number {
    let last;
    do {
      last = this.bits(1);
      const type = this.bits(2);
      if (type === 0) this.stored();
      else if (type === 1) this.codes(FIXED_LIT, FIXED_DIST);
      else if (type === 2) this.dynamic();
      else throw REFUSED;
    } while (!last);
    if (this.o !== this.out.length) throw REFUSED;
    this.toByte(); // the checksum starts at the next byte
    return this.pos;
  }

  /** Drops the bits left of the current byte, and gives back whole bytes decode() read ahead. */
  private toByte(): void {
    this.pos -= this.bitCount >> 3;
    this.bitBuf = 0;
    this.bitCount = 0;
  }

  private stored(): void {
    this.toByte();
    const i = this.input;
    if (this.pos + 4 > i.length) throw REFUSED;
    const len = i[this.pos] | (i[this.pos + 1] << 8);
    const nlen = i[this.pos + 2] | (i[this.pos + 3] << 8);
    this.pos += 4;
    if (len !== (~nlen & 0xffff) || this.pos + len > i.length || this.o + len > this.out.length) throw REFUSED;
    this.out.set(i.subarray(this.pos, this.pos + len), this.o);
    this.pos += len;
    this.o += len;
  }

  private dynamic(): void {
    const nlen = this.bits(5) + 257;
    const ndist = this.bits(5) + 1;
    const ncode = this.bits(4) + 4;
    if (nlen > 286 || ndist > 30) throw REFUSED;
    const lengths = this.lengths;
    lengths.fill(0, 0, 19);
    for (let i = 0; i < ncode; i++) lengths[CL_ORDER[i]] = this.bits(3);
    const codeLengths = build(lengths, 19, this.codeLengths);
    lengths.fill(0);
    for (let index = 0; index < nlen + ndist; ) {
      const sym = this.decode(codeLengths);
      if (sym < 16) {
        lengths[index++] = sym;
        continue;
      }
      let len = 0;
      let rep: number;
      if (sym === 16) {
        if (index === 0) throw REFUSED;
        len = lengths[index - 1];
        rep = 3 + this.bits(2);
      } else if (sym === 17) rep = 3 + this.bits(3);
      else rep = 11 + this.bits(7);
      if (index + rep > nlen + ndist) throw REFUSED;
      while (rep--) lengths[index++] = len;
    }
    if (lengths[256] === 0) throw REFUSED; // no end-of-block code
    build(lengths, nlen, this.lit);
    build(lengths.subarray(nlen, nlen + ndist), ndist, this.dist);
    this.codes(this.lit, this.dist);
  }

  private codes(lit: Huffman, dist: Huffman): void {
    const out = this.out;
    const size = out.length;
    for (;;) {
      let sym = this.decode(lit);
      if (sym < 256) {
        if (this.o >= size) throw REFUSED;
        out[this.o++] = sym;
        continue;
      }
      if (sym === 256) return;
      sym -= 257;
      if (sym >= 29) throw REFUSED;
      const len = LEN_BASE[sym] + this.bits(LEN_EXTRA[sym]);
      const d = this.decode(dist);
      if (d >= 30) throw REFUSED;
      const distance = DIST_BASE[d] + this.bits(DIST_EXTRA[d]);
      if (distance > this.o || this.o + len > size) throw REFUSED;
      for (let k = 0; k < len; k++, this.o++) out[this.o] = out[this.o - distance];
    }
  }
}

const EMPTY = new Uint8Array(0);
const EMPTY_BUFFER = Buffer.alloc(0);
/** One decoder, reused: its tables are filled per block, never allocated per call (synchronous, so never shared). */
const decoder = new Decoder();

function adler32(b: Uint8Array): number {
  let a = 1;
  let s = 0;
  for (let i = 0; i < b.length; ) {
    const end = Math.min(i + 3800, b.length); // sums stay below 2^53 between reductions
    for (; i < end; i++) {
      a += b[i];
      s += a;
    }
    a %= 65521;
    s %= 65521;
  }
  return ((s << 16) | a) >>> 0;
}

/**
 * The `size` bytes of the zlib stream starting at `start`, or undefined when this decoder does
 * not accept the stream (the caller then asks node's zlib).
 */
export function inflateSmall(input: Uint8Array, start: number, size: number): Buffer | undefined {
  if (start + 2 > input.length) return undefined;
  const cmf = input[start];
  const flg = input[start + 1];
  if ((cmf & 15) !== 8 || cmf >> 4 > 7 || (cmf * 256 + flg) % 31 !== 0 || flg & 0x20) return undefined;
  const out = Buffer.allocUnsafe(size);
  try {
    const end = decoder.run(input, start + 2, out);
    if (end + 4 > input.length) return undefined;
    const sum = ((input[end] << 24) | (input[end + 1] << 16) | (input[end + 2] << 8) | input[end + 3]) >>> 0;
    return sum === adler32(out) ? out : undefined;
  } catch (e) {
    if (e instanceof Refused) return undefined;
    throw e;
  }
}
