// File steps of the embedded store's durability (durable-log.ts): atomic replacement of a whole
// file, and writes of many buffers that either complete or throw.
import { open, readFile, rename, unlink, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';

export async function readIfExists(path: string): Promise<Buffer | undefined> {
  try {
    return await readFile(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

export async function syncDir(dir: string): Promise<void> {
  const d = await open(dir, 'r');
  try {
    await d.sync();
  } finally {
    await d.close();
  }
}

/** Appends every buffer at the file's position; a short write continues where it stopped. */
export async function writeAll(fh: FileHandle, buffers: readonly Buffer[]): Promise<void> {
  // writev takes at most IOV_MAX (1024) buffers per call on Linux.
  for (let i = 0; i < buffers.length; i += 256) {
    let group = buffers.slice(i, i + 256);
    let want = group.reduce((n, b) => n + b.length, 0);
    while (want > 0) {
      const { bytesWritten } = await fh.writev(group);
      if (bytesWritten === want) break;
      // Drop what was written and go on with the rest.
      let skip = bytesWritten;
      const rest: Buffer[] = [];
      for (const b of group) {
        if (skip >= b.length) skip -= b.length;
        else {
          rest.push(skip > 0 ? b.subarray(skip) : b);
          skip = 0;
        }
      }
      group = rest;
      want -= bytesWritten;
    }
  }
}

/** Writes `data` to `dir/name` atomically and durably (temporary file, fsync, rename, directory fsync). */
export async function replaceFile(dir: string, name: string, data: string | readonly Buffer[]): Promise<void> {
  const tmp = join(dir, name + '.tmp');
  const t = await open(tmp, 'w');
  try {
    if (typeof data === 'string') await t.writeFile(data);
    else await writeAll(t, data);
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
