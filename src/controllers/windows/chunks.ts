// A large snapshot's changes, kept apart from the window record (record.ts): in chunks of
// CHUNK_SIZE changes, each its own internal object (resource commitwindowchunks, never served).
// The record holds a small window naming how many chunks it has, so every compare-and-swap of the
// record (a change joining, an attempt counted, an outcome recorded) stays small, and no step on
// the main thread (store write, watch event, copy) handles more than one chunk: a 10,000-object
// record of ~3 MB rewritten three times held the API up for 26–81 ms per step.
//
// Order of writes: chunks first, each one store call, then the record's CAS that adds the window.
// A crash in between leaves only unreferenced chunks (never a window missing part of its changes);
// their names are deterministic (target uid, snapshot id, index), so the retried snapshot()
// overwrites them, and sweep() removes any left over. A window's chunks are deleted once its
// outcome is recorded, and with its GitTarget.
import { createHash } from 'node:crypto';
import { DEFAULT_CLUSTER, StorageError, type KubeObject, type ObjectKey, type ResourceRef, type Store } from '../../storage/types.js';
import { changeKey, WINDOWS_API_VERSION, type Window } from './record.js';
import type { PendingChange, TargetKey } from './types.js';

export const CHUNKS_RESOURCE: ResourceRef = { group: 'internal.configbutler.ai', resource: 'commitwindowchunks' };
/** Changes per chunk; snapshots of more changes than this are chunked. Also the git worker's slice. */
export const CHUNK_SIZE = 500;
/** Unreferenced chunks younger than this may belong to a snapshot() still writing them. */
export const ORPHAN_AGE_MS = 10 * 60_000;

export type KeyedChange = { key: string; change: PendingChange };

export interface WindowChunk extends KubeObject {
  target: TargetKey;
  snapshotId: string;
  index: number;
  total: number;
  /** ms since epoch */
  writtenAt: number;
  changes: KeyedChange[];
}

const turn = () => new Promise<void>((r) => setImmediate(r));

/** `<uid>.<digest of the snapshot id>.`: every chunk of one snapshot of one GitTarget starts so. */
function chunkPrefix(t: TargetKey, snapshotId: string): string {
  return `${t.uid}.${createHash('sha256').update(snapshotId).digest('hex').slice(0, 16)}.`;
}

function chunkKey(t: TargetKey, snapshotId: string, index: number): ObjectKey {
  return { cluster: t.cluster, namespace: t.namespace, name: chunkPrefix(t, snapshotId) + index };
}

/** The snapshot's changes, latest per object winning at the position it was first seen (as mergeChanges), a slice per event-loop turn. */
async function dedupe(changes: PendingChange[]): Promise<KeyedChange[]> {
  const out: KeyedChange[] = [];
  const at = new Map<string, number>();
  for (let i = 0; i < changes.length; i += CHUNK_SIZE) {
    for (const change of changes.slice(i, i + CHUNK_SIZE)) {
      const key = changeKey(change);
      const j = at.get(key);
      if (j !== undefined) out[j] = { key, change };
      else {
        at.set(key, out.length);
        out.push({ key, change });
      }
    }
    await turn();
  }
  return out;
}

export class WindowChunks {
  constructor(
    private readonly store: Pick<Store, 'get' | 'list' | 'create' | 'update' | 'delete'>,
    /** The windows controller's clock (runtime/clock.ts): writtenAt and the sweep's age compare on it. */
    private readonly now: () => number = Date.now,
  ) {}

  /** Writes a snapshot's chunks, one store call per chunk; resolves once all are durable. */
  async write(t: TargetKey, snapshotId: string, changes: PendingChange[]): Promise<{ chunks: number; changes: number }> {
    const keyed = await dedupe(changes);
    const total = Math.ceil(keyed.length / CHUNK_SIZE);
    for (let index = 0; index < total; index++) {
      const key = chunkKey(t, snapshotId, index);
      const obj: WindowChunk = {
        apiVersion: WINDOWS_API_VERSION,
        kind: 'CommitWindowChunk',
        metadata: { name: key.name, namespace: t.namespace, ...(t.cluster !== DEFAULT_CLUSTER ? { annotations: { 'kcp.io/cluster': t.cluster } } : {}) },
        target: t,
        snapshotId,
        index,
        total,
        writtenAt: this.now(),
        changes: keyed.slice(index * CHUNK_SIZE, (index + 1) * CHUNK_SIZE),
      };
      await this.put(key, obj);
      await turn();
    }
    return { chunks: total, changes: keyed.length };
  }

  /** Creates or overwrites (a retried snapshot() rewrites the same chunk). */
  private async put(key: ObjectKey, obj: WindowChunk): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      const cur = await this.store.get(CHUNKS_RESOURCE, key);
      try {
        if (!cur) await this.store.create(CHUNKS_RESOURCE, key, obj);
        else await this.store.update(CHUNKS_RESOURCE, key, obj, Number(cur.metadata.resourceVersion));
        return;
      } catch (e) {
        if (e instanceof StorageError && (e.code === 'Conflict' || e.code === 'AlreadyExists' || e.code === 'NotFound') && attempt < 20) continue;
        throw e;
      }
    }
  }

  /**
   * The changes of a chunked window, in order, a chunk per event-loop turn. Throws (the commit is
   * retried later) when a chunk is missing or is not this window's: never a part of a snapshot.
   */
  async read(t: TargetKey, w: Window): Promise<KeyedChange[]> {
    const out: KeyedChange[] = [];
    for (let index = 0; index < (w.chunks ?? 0); index++) {
      const c = (await this.store.get(CHUNKS_RESOURCE, chunkKey(t, w.snapshotId!, index))) as WindowChunk | undefined;
      if (!c || c.target.uid !== t.uid || c.snapshotId !== w.snapshotId || c.total !== w.chunks || c.index !== index) {
        throw new Error(`chunk ${index} of ${w.chunks} of snapshot ${w.snapshotId} of GitTarget ${t.namespace}/${t.name} is missing`);
      }
      for (const x of c.changes) out.push(x);
      await turn();
    }
    if (out.length !== w.chunkedChanges) throw new Error(`snapshot ${w.snapshotId} of GitTarget ${t.namespace}/${t.name}: ${out.length} changes in its chunks, ${w.chunkedChanges} expected`);
    return out;
  }

  /** Deletes the chunks of one snapshot (absent ones are fine). */
  async remove(t: TargetKey, snapshotId: string, chunks: number): Promise<void> {
    for (let index = 0; index < chunks; index++) {
      await this.store.delete(CHUNKS_RESOURCE, chunkKey(t, snapshotId, index)).catch((e) => {
        if (!(e instanceof StorageError && e.code === 'NotFound')) throw e;
      });
    }
  }

  /**
   * Deletes this GitTarget's chunks none of its `windows` refers to: all of them when the target
   * is gone (`windows` undefined), else those older than ORPHAN_AGE_MS (a crash between a chunk
   * write and the record's CAS, or between an outcome and the chunks' deletion). Returns how many.
   */
  async sweep(t: TargetKey, windows: Window[] | undefined, now = this.now()): Promise<number> {
    const { items } = await this.store.list(CHUNKS_RESOURCE, { cluster: t.cluster, namespace: t.namespace });
    const live = new Set((windows ?? []).filter((w) => w.chunks && w.snapshotId !== undefined).map((w) => chunkPrefix(t, w.snapshotId!)));
    let n = 0;
    for (const o of items as WindowChunk[]) {
      const name = o.metadata.name ?? '';
      if (!name.startsWith(`${t.uid}.`)) continue;
      if (windows && (live.has(name.slice(0, name.lastIndexOf('.') + 1)) || now - o.writtenAt < ORPHAN_AGE_MS)) continue;
      await this.store.delete(CHUNKS_RESOURCE, { cluster: t.cluster, namespace: t.namespace, name }).catch(() => undefined);
      n++;
    }
    return n;
  }
}
