// JSON serialization and hashing that never holds the event loop for more than a slice.
//
// The embedded store writes its whole state as one snapshot (durable-log.ts) and each write as one
// log line. JSON.stringify and a sha256 of a 3 MiB object or a 50 MiB state run in one step: 30 ms
// to seconds during which no other client is answered. Here a value is serialized piece by piece:
// any subtree small enough is handed to the native JSON.stringify (fast, and bounded because it is
// small), larger arrays and objects are walked member by member, long strings are escaped in
// pieces, and the work yields (setImmediate) whenever it has run for SLICE_MS. The output is the
// same text JSON.stringify would produce, in pieces of about PIECE characters, each turned into
// bytes and hashed as it comes: the sha256 of the pieces is the sha256 of the whole text, because
// pieces end on whole characters (a surrogate pair is never split).
//
// Values must not change while they are serialized: the stores hand over objects that are
// replaced, never mutated, on write (embedded.ts withRV), and captured arrays of them.
import { createHash, type Hash } from 'node:crypto';
import { knownJSON } from './known-json.js';
import { LEAF } from './shared-values.js';

/** Longest run of serialization (ms) before yielding the event loop. */
export const SLICE_MS = 4;
/** Estimated JSON size below which a subtree goes to the native JSON.stringify whole. */
const SMALL = 32 * 1024;
/** Characters per output piece, and per piece of a long string. */
const PIECE = 64 * 1024;

/**
 * An array serialized as `items.map(row)` without building that array first: a snapshot captures
 * references in one cheap synchronous step and shapes each row only when it is written.
 */
export class JsonRows<T> {
  constructor(readonly items: readonly T[], readonly row: (item: T) => unknown) {}
  toJSON(): unknown[] {
    return this.items.map(this.row);
  }
}

/**
 * Objects with many keys, mapped to a lower bound of what their own keys serialize to. Finding out
 * means enumerating every key (for...in and Object.keys list them all before the first one: about
 * 40 ms for the 136,000 keys a list of finalizers puts in managedFields), and every ancestor's
 * sizeWithin reached that object again: nine such enumerations for one stored object. Serialized
 * values are never changed (the header above), so the bound holds for the object's lifetime.
 */
const WIDE = new WeakMap<object, number>();
/** Own-key size from which an object is remembered in WIDE. */
const WIDE_CHARS = 4 * 1024;

/** Key count from which sizeWithin hands its listing of an object to the Writer that serializes it. */
const LISTED_KEYS = 1024;
/**
 * The key list sizeWithin made last of an object of LISTED_KEYS keys or more: a log record is
 * measured (durable-log.ts append) and then serialized by a Writer, which would list the same keys
 * again (~50 ms for 150,000). One slot, emptied by the Writer that takes it, else replaced by the
 * next wide listing: at most one list (and the object it lists) is held.
 */
let lastListing: { of: object; keys: string[] } | undefined;

/** Object.keys(x), taken from lastListing when sizeWithin just listed `x`. */
function keysOf(x: object): string[] {
  const listed = lastListing;
  if (listed?.of === x) {
    lastListing = undefined;
    return listed.keys;
  }
  return Object.keys(x);
}

/** What the keys of an object write at least: braces, and per key its quotes, colon and comma. */
function ownChars(keys: readonly string[]): number {
  let n = 2;
  for (const k of keys) n += k.length + 4;
  return n;
}

/** About how many characters `v` serializes to, counted up to `limit` (past it: Infinity). */
export function sizeWithin(v: unknown, limit: number = SMALL): number {
  if (typeof v === 'string') return v.length + 2 > limit ? Infinity : v.length + 2;
  if (v === null || typeof v !== 'object') return 8;
  let size = 0;
  const stack: unknown[] = [v];
  while (stack.length > 0) {
    const x = stack.pop();
    if (typeof x === 'string') size += x.length + 2;
    else if (x === null || typeof x !== 'object') size += 8;
    else if (x instanceof JsonRows) return Infinity;
    else if (Array.isArray(x)) {
      size += 2 + x.length;
      if (size > limit) return Infinity;
      for (const e of x) stack.push(e);
    } else {
      // An object whose text is known (known-json.ts) is measured without listing its keys.
      const known = knownJSON(x);
      if (known !== undefined) {
        size += known.length;
        if (size > limit) return Infinity;
        continue;
      }
      const wide = WIDE.get(x);
      if (wide !== undefined && size + wide > limit) return Infinity;
      size += 2;
      // Object.keys: the own enumerable keys JSON.stringify writes; for...in checks each key again
      // on an object in dictionary mode (every object of thousands of keys), and is slower for `{}`.
      const keys = Object.keys(x);
      if (keys.length >= LISTED_KEYS) lastListing = { of: x, keys };
      for (const k of keys) {
        size += k.length + 4;
        if (size > limit) {
          // Remember what all the keys write, not only those counted so far: the count stops at
          // the limit, so a bound of about `limit` did not stop the next walk, from an ancestor
          // or of this object itself, which listed every key again (five listings of 150,000 keys
          // per log record). Adding up the lengths costs ~1 ms next to the listing's ~50.
          const all = ownChars(keys);
          if (all >= WIDE_CHARS) WIDE.set(x, Math.max(all, wide ?? 0));
          return Infinity;
        }
        stack.push((x as Record<string, unknown>)[k]);
      }
    }
    if (size > limit) return Infinity;
  }
  return size;
}

/** Bytes and their hash, collected piece by piece. */
export class HashedBytes {
  readonly buffers: Buffer[] = [];
  bytes = 0;
  private readonly hash: Hash = createHash('sha256');

  add(text: string): void {
    if (text.length === 0) return;
    const b = Buffer.from(text, 'utf8');
    this.hash.update(b);
    this.buffers.push(b);
    this.bytes += b.length;
  }

  digest(): string {
    return this.hash.digest('hex');
  }
}

/** Serializes `value` into `out` as JSON.stringify(value) would, yielding between slices. */
export async function stringifySliced(value: unknown, out: HashedBytes): Promise<void> {
  const w = new Writer(out);
  await w.value(value, false);
  w.flush();
}

/**
 * Whether `v` serializes to `{}` for want of members: a plain object with no enumerable key. An
 * object known to be wide is not asked: for...in of an object in dictionary mode lists every key
 * before the first (test/unit/sliced-json.test.ts counts the listings).
 */
function isEmptyPlainObject(v: unknown): boolean {
  if (v === null || typeof v !== 'object' || WIDE.has(v) || Object.getPrototypeOf(v) !== Object.prototype) return false;
  for (const _ in v) return false;
  // A toJSON that for...in does not list (not enumerable) would still be called by JSON.stringify.
  return typeof (v as { toJSON?: unknown }).toJSON !== 'function';
}

/** One turn of the event loop (timers and I/O run before the work goes on). */
function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

class Writer {
  private parts: string[] = [];
  private pending = 0;
  private deadline = performance.now() + SLICE_MS;

  constructor(private readonly out: HashedBytes) {}

  private raw(s: string): void {
    this.parts.push(s);
    this.pending += s.length;
    if (this.pending >= PIECE) this.flush();
  }

  flush(): void {
    if (this.parts.length === 0) return;
    this.out.add(this.parts.join(''));
    this.parts = [];
    this.pending = 0;
  }

  private async tick(): Promise<void> {
    if (performance.now() < this.deadline) return;
    this.flush();
    await nextTurn();
    this.deadline = performance.now() + SLICE_MS;
  }

  /** `inArray`: undefined, functions and symbols become null there (as JSON.stringify does). */
  async value(v: unknown, inArray: boolean): Promise<void> {
    if (v === undefined || typeof v === 'function' || typeof v === 'symbol') {
      if (inArray) this.raw('null');
      return;
    }
    if (typeof v === 'string') {
      if (v.length > PIECE) await this.longString(v);
      else this.raw(JSON.stringify(v));
      return;
    }
    if (v === null || typeof v !== 'object') {
      this.raw(JSON.stringify(v));
      return;
    }
    if (v instanceof JsonRows) {
      await this.rows(v.items, v.row);
      return;
    }
    const known = knownJSON(v);
    if (known !== undefined) {
      await this.text(known);
      return;
    }
    if (typeof (v as { toJSON?: unknown }).toJSON === 'function' || sizeWithin(v) <= SMALL) {
      this.raw(JSON.stringify(v));
      await this.tick();
      return;
    }
    if (Array.isArray(v)) {
      await this.rows(v, (e) => e);
      return;
    }
    // The size estimate of an object of many keys lists them all, as Object.keys below does again:
    // one such listing per turn (about 40 ms each for 136,000 keys).
    await this.tick();
    this.raw('{');
    let first = true;
    let i = 0;
    for (const k of keysOf(v)) {
      const e = (v as Record<string, unknown>)[k];
      if (e === undefined || typeof e === 'function' || typeof e === 'symbol') continue;
      const name = first ? `${JSON.stringify(k)}:` : `,${JSON.stringify(k)}:`;
      first = false;
      // The shared fieldsV1 leaf (shared-values.ts), or any other empty plain object (a parsed
      // fieldsV1 past shared-values.ts SHARE_BUDGET keeps its own), without a size estimate or a
      // clock read: the estimate's stack, WeakMap look-ups and key list per member of 150,000 were
      // most of the CPU of such an object's log line (test/storage/embedded-snapshot-delay.test.ts).
      if (e === LEAF || isEmptyPlainObject(e)) {
        this.raw(`${name}{}`);
        if ((++i & 63) === 0 && performance.now() >= this.deadline) await this.tick();
        continue;
      }
      // A member that value() would hand to JSON.stringify whole is written here without an
      // await: one await per member of an object of 136,000 keys (managedFields of a long list)
      // cost eight times the native serialization of the whole object.
      if (this.whole(e)) this.raw(name + JSON.stringify(e));
      else {
        this.raw(name);
        await this.value(e, false);
      }
      if (performance.now() >= this.deadline) await this.tick();
    }
    this.raw('}');
  }

  /** Whether value() would write `v` (not undefined, a function or a symbol) with one JSON.stringify. */
  private whole(v: unknown): boolean {
    if (typeof v === 'string') return v.length <= PIECE;
    if (v === null || typeof v !== 'object') return true;
    if (v instanceof JsonRows) return false;
    return typeof (v as { toJSON?: unknown }).toJSON === 'function' || sizeWithin(v) <= SMALL;
  }

  private async rows<T>(items: readonly T[], row: (item: T) => unknown): Promise<void> {
    this.raw('[');
    // Runs of small members go to JSON.stringify together: a call (let alone an await) per member
    // of a 150,000-item list would cost several times serializing it.
    let run: unknown[] = [];
    let runSize = 0;
    let comma = false;
    const endRun = () => {
      if (run.length === 0) return;
      const text = JSON.stringify(run);
      this.raw(comma ? `,${text.slice(1, -1)}` : text.slice(1, -1));
      comma = true;
      run = [];
      runSize = 0;
    };
    for (let i = 0; i < items.length; i++) {
      const e = row(items[i]!);
      const size = typeof e === 'string' ? e.length + 2 : sizeWithin(e);
      if (size <= SMALL) {
        if (runSize + size > SMALL) {
          endRun();
          await this.tick();
        }
        run.push(e);
        runSize += size;
        continue;
      }
      endRun();
      if (comma) this.raw(',');
      comma = true;
      await this.value(e, true);
      await this.tick();
    }
    endRun();
    this.raw(']');
    await this.tick();
  }

  /** Text already serialized (a value's known JSON), in pieces that end on whole characters. */
  private async text(s: string): Promise<void> {
    if (s.length <= PIECE) {
      this.raw(s);
      await this.tick();
      return;
    }
    for (let at = 0; at < s.length;) {
      let end = Math.min(s.length, at + PIECE);
      const c = s.charCodeAt(end - 1);
      if (end < s.length && c >= 0xd800 && c <= 0xdbff) end++;
      this.raw(s.slice(at, end));
      at = end;
      await this.tick();
    }
  }

  private async longString(s: string): Promise<void> {
    this.raw('"');
    for (let at = 0; at < s.length;) {
      let end = Math.min(s.length, at + PIECE);
      // Never between the halves of a surrogate pair: each half alone would be escaped as \udXXX.
      const c = s.charCodeAt(end - 1);
      if (end < s.length && c >= 0xd800 && c <= 0xdbff) end++;
      this.raw(JSON.stringify(s.slice(at, end)).slice(1, -1));
      at = end;
      await this.tick();
    }
    this.raw('"');
  }
}
