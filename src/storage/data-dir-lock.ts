// One process per --data-dir. Two servers on one directory both handed out the same
// resourceVersions and overwrote each other's snapshot and admin.kubeconfig, so the directory is
// locked before anything is written into it: `<dataDir>/reverser-apiserver.lock`, created with
// O_EXCL, holding the owner's pid and host. A lock whose owner is gone (same host, pid not running,
// or our own pid left by a previous incarnation of this container) is stale and taken over.
// Each lock carries a random token: release removes the file only while it still holds that token
// (moved aside atomically first), so a process never deletes a lock another one took since.
import { randomUUID } from 'node:crypto';
import { closeSync, linkSync, openSync, readFileSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { StartupRefusedError } from './startup-error.js';

export const LOCK_FILE = 'reverser-apiserver.lock';

export interface LockOwner {
  pid: number;
  host: string;
  since: string;
  /** Random per lock: what release checks (pid and time can repeat, e.g. pid 1 of a restarted container). */
  token?: string;
}

export interface DataDirLock {
  path: string;
  /** True when a stale lock (dead owner) was taken over; the caller logs it. */
  tookOver?: LockOwner;
  release(): void;
}

function readOwner(path: string): LockOwner | undefined {
  try {
    const v = JSON.parse(readFileSync(path, 'utf8')) as Partial<LockOwner>;
    if (typeof v.pid === 'number' && typeof v.host === 'string') {
      return { pid: v.pid, host: v.host, since: String(v.since ?? ''), ...(typeof v.token === 'string' ? { token: v.token } : {}) };
    }
  } catch {
    // unreadable or half-written: treated as held (see below)
  }
  return undefined;
}

function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM'; // exists, owned by someone else
  }
}

function stale(owner: LockOwner): boolean {
  if (owner.host !== hostname()) return false; // cannot see another host's processes
  return owner.pid === process.pid || !running(owner.pid);
}

function describe(o: LockOwner): string {
  return `pid ${o.pid} on host ${o.host}${o.since ? ` since ${o.since}` : ''}`;
}

/** Takes the lock or throws StartupRefusedError naming the holder. */
export function lockDataDir(dataDir: string): DataDirLock {
  const path = join(dataDir, LOCK_FILE);
  const me: LockOwner = { pid: process.pid, host: hostname(), since: new Date().toISOString(), token: randomUUID() };
  const body = JSON.stringify(me) + '\n';
  let tookOver: LockOwner | undefined;
  for (let attempt = 0; attempt < 3; attempt++) {
    let fd: number;
    try {
      fd = openSync(path, 'wx', 0o600);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') {
        throw new StartupRefusedError(`cannot lock the data directory: ${path}: ${(e as Error).message}`);
      }
      const owner = readOwner(path);
      if (!owner) {
        throw new StartupRefusedError(
          `the data directory ${dataDir} is locked by ${path}, whose content is unreadable; if no other reverser-apiserver uses this directory, delete that file and start again`,
        );
      }
      if (!stale(owner)) {
        throw new StartupRefusedError(
          `the data directory ${dataDir} is in use by another reverser-apiserver (${describe(owner)}; lock file ${path}); ` +
            'stop that process or use another --data-dir' +
            (owner.host !== hostname() ? `; if that host no longer runs it, delete ${path}` : ''),
        );
      }
      // Move the stale lock aside atomically; only the mover that finds the stale content it read
      // removes it, so two processes taking over at once cannot both win.
      const aside = `${path}.stale-${process.pid}`;
      try {
        renameSync(path, aside);
      } catch {
        continue;
      }
      const moved = readOwner(aside);
      if (moved && moved.pid === owner.pid && moved.host === owner.host && moved.since === owner.since && moved.token === owner.token) {
        unlinkSync(aside);
        tookOver = owner;
      } else {
        // Someone else's fresh lock: put it back (link fails if yet another one appeared).
        try {
          linkSync(aside, path);
        } catch {
          // ignore: the next attempt reads whatever holds the path now
        }
        unlinkSync(aside);
      }
      continue;
    }
    try {
      writeSync(fd, body);
    } finally {
      closeSync(fd);
    }
    let released = false;
    return {
      path,
      tookOver,
      release() {
        if (released) return;
        released = true;
        releaseIfOurs(path, me.token!);
      },
    };
  }
  throw new StartupRefusedError(`cannot lock the data directory ${dataDir}: ${path} keeps changing; is another process starting on it?`);
}

/**
 * Removes the lock at `path` only if it still holds `token`. The file is moved aside first (atomic),
 * so what is checked is what is removed; another holder's lock is put back where it was.
 */
function releaseIfOurs(path: string, token: string): void {
  const aside = `${path}.release-${token}`;
  try {
    renameSync(path, aside);
  } catch {
    return; // gone already
  }
  if (readOwner(aside)?.token === token) {
    unlinkSync(aside);
    return;
  }
  try {
    linkSync(aside, path); // fails only if yet another lock appeared meanwhile: that one stays
  } catch {
    // ignore
  }
  unlinkSync(aside);
}
