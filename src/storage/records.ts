// The embedded store's expiring records (Store.putRecords): per space, a map of keyed values with
// an absolute expiry, the ids put within their TTL and the newest batch time. Reads ignore expired
// entries; a sweep drops them in expiry order, so its cost is what expired, not what lives.
// Persistence is the embedded store's business: it logs each applied batch (with its absolute
// expiry, so a replay after a restart expires it at the same moment) and snapshots `capture()`.

import { orderAfter, type RecordBatch, type RecordStats } from './types.js';

interface Entry {
  value: string;
  order?: string;
  expiresAt: number;
}

interface Space {
  entries: Map<string, Entry>;
  /** id -> expiry */
  ids: Map<string, number>;
  last: number;
  lastExpiresAt: number;
}

/** A logged batch: what `apply` needs to do the same again at replay. */
export interface AppliedBatch {
  space: string;
  writes: [key: string, value: string, order: string | null][];
  ids: string[];
  time: number;
  expiresAt: number;
}

export type RecordsSnapshot = Record<string, { e: [string, string, string | null, number][]; i: [string, number][]; l: number; le: number }>;

export class MemoryRecords {
  private readonly spaces = new Map<string, Space>();
  /**
   * Expiry order of everything written: [expiresAt, space, key or id, isId]. With one TTL for every
   * batch (the usual case) it is sorted; otherwise an entry behind a later one is swept late (reads
   * never return it meanwhile).
   */
  private queue: [number, string, string, boolean][] = [];
  private head = 0;

  constructor(private readonly now: () => number = Date.now) {}

  private space(name: string): Space {
    let s = this.spaces.get(name);
    if (!s) this.spaces.set(name, (s = { entries: new Map(), ids: new Map(), last: 0, lastExpiresAt: 0 }));
    return s;
  }

  /** The batch as it will be applied (absolute expiry from now): log it, then apply it. */
  prepare(space: string, batch: RecordBatch): AppliedBatch {
    return {
      space,
      writes: batch.writes.map((w) => [w.key, w.value, w.order ?? null]),
      ids: batch.ids,
      time: batch.time,
      expiresAt: this.now() + batch.ttlMs,
    };
  }

  apply(b: AppliedBatch): void {
    if (b.expiresAt <= this.now()) return;
    const s = this.space(b.space);
    for (const [key, value, order] of b.writes) {
      const cur = s.entries.get(key);
      const live = cur && cur.expiresAt > this.now();
      if (live && order !== null && cur.order !== undefined && !orderAfter(order, cur.order)) {
        // The newer value stays, and stays as long as this batch would have lived.
        cur.expiresAt = Math.max(cur.expiresAt, b.expiresAt);
      } else {
        s.entries.set(key, order === null ? { value, expiresAt: b.expiresAt } : { value, order, expiresAt: b.expiresAt });
      }
      this.queue.push([b.expiresAt, b.space, key, false]);
    }
    for (const id of b.ids) {
      s.ids.set(id, b.expiresAt);
      this.queue.push([b.expiresAt, b.space, id, true]);
    }
    if (b.time > s.last || s.lastExpiresAt <= this.now()) s.last = b.time;
    s.lastExpiresAt = Math.max(s.lastExpiresAt, b.expiresAt);
  }

  get(space: string, keys: string[]): (string | undefined)[] {
    const s = this.spaces.get(space);
    const now = this.now();
    return keys.map((k) => {
      const e = s?.entries.get(k);
      return e && e.expiresAt > now ? e.value : undefined;
    });
  }

  stats(space: string): RecordStats {
    const s = this.spaces.get(space);
    const now = this.now();
    if (!s) return { count: 0 };
    this.sweep();
    const count = s.ids.size;
    return s.lastExpiresAt > now ? { count, lastTime: s.last } : { count };
  }

  /** Drops what expired; returns how many entries and ids went. */
  sweep(): number {
    const now = this.now();
    let dropped = 0;
    while (this.head < this.queue.length && this.queue[this.head]![0] <= now) {
      const [, spaceName, key, isId] = this.queue[this.head++]!;
      const s = this.spaces.get(spaceName);
      if (!s) continue;
      if (isId) {
        const exp = s.ids.get(key);
        if (exp !== undefined && exp <= now) (s.ids.delete(key), dropped++);
      } else {
        const e = s.entries.get(key);
        if (e && e.expiresAt <= now) (s.entries.delete(key), dropped++);
      }
      if (s.entries.size === 0 && s.ids.size === 0 && s.lastExpiresAt <= now) this.spaces.delete(spaceName);
    }
    // Compact the consumed head once it dominates the array.
    if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
    return dropped;
  }

  /** Live entries only: a snapshot never resurrects what expired. */
  capture(): RecordsSnapshot {
    const now = this.now();
    const out: RecordsSnapshot = {};
    for (const [name, s] of this.spaces) {
      const e: [string, string, string | null, number][] = [];
      for (const [k, v] of s.entries) if (v.expiresAt > now) e.push([k, v.value, v.order ?? null, v.expiresAt]);
      const i: [string, number][] = [];
      for (const [id, exp] of s.ids) if (exp > now) i.push([id, exp]);
      if (e.length || i.length || s.lastExpiresAt > now) out[name] = { e, i, l: s.last, le: s.lastExpiresAt };
    }
    return out;
  }

  restore(snap: RecordsSnapshot | undefined): void {
    const now = this.now();
    for (const [name, r] of Object.entries(snap ?? {})) {
      const s = this.space(name);
      for (const [k, value, order, exp] of r.e) {
        if (exp <= now) continue;
        s.entries.set(k, order === null ? { value, expiresAt: exp } : { value, order, expiresAt: exp });
        this.queue.push([exp, name, k, false]);
      }
      for (const [id, exp] of r.i) {
        if (exp <= now) continue;
        s.ids.set(id, exp);
        this.queue.push([exp, name, id, true]);
      }
      s.last = r.l;
      s.lastExpiresAt = r.le;
    }
    this.queue.sort((a, b) => a[0] - b[0]);
  }

  /** Entries and ids held (expired ones not yet swept included). */
  size(): number {
    let n = 0;
    for (const s of this.spaces.values()) n += s.entries.size + s.ids.size;
    return n;
  }
}
