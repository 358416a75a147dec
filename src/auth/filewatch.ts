// Re-reads a file when its stat changes. Changes are noticed two ways, as k8s.io/apiserver's
// dynamic certificate files are (fsnotify plus a resync poll):
// - a watch of the file's directory (inotify): every change there, including the atomic symlink
//   swaps of Kubernetes ConfigMap/Secret volumes (`..data` renamed over) and editors that replace
//   the file, prompts a stat comparison at once;
// - a stat poll every `intervalMs`, for file systems whose changes inotify does not see (network
//   mounts) and for a directory that cannot be watched. The servers poll once a minute: an idle
//   process wakes for nothing else (docs/architecture.md, "At rest and at start-up").
//
// The baseline stat is taken synchronously when the watch starts, right after the caller's own
// synchronous read. (fs.watchFile took its baseline on its first asynchronous poll, so an edit
// landing between the caller's read and that poll was never noticed.)
//
// Callers following the same file share one directory watch and one poll (the authentication and
// the registration both follow the serving CA: two stat polls a minute, a few ms apart, each a
// wake-up of an idle process). Each caller keeps its own baseline and gets its own onChange; the
// poll runs at the shortest interval any of them asked for, on the process's shared timer
// (src/periodic/shared-timer.ts), and stopping one caller leaves the others followed.
import { readFileSync, statSync, watch, type FSWatcher, type Stats } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { runEvery } from '../periodic/shared-timer.js';

/** How often a followed file's stat is polled when its directory is watched as well. */
export const FILE_RESYNC_MS = 60_000;

/**
 * How long the directory must be quiet after an event before the file is read. A file rewritten in
 * place (open with O_TRUNC, then write) raises an event for the truncation and another for the
 * write: read at the first, it is empty or half written (test/registration/registration.test.ts saw
 * the CA bundle "change" twice, once to the partial file).
 */
export const FILE_SETTLE_MS = 100;

function statOf(path: string): Stats | undefined {
  try {
    return statSync(path);
  } catch {
    return undefined; // missing for a moment (mid-swap): compare again on the next poll
  }
}

function sameFile(a: Stats, b: Stats): boolean {
  return a.mtimeMs === b.mtimeMs && a.size === b.size && a.ino === b.ino;
}

interface Follower {
  intervalMs: number;
  /** The stat this caller last read (or started from). */
  last: Stats | undefined;
  onChange(text: string): void;
  onError(e: Error): void;
}

/** One followed path: its callers, its directory watch and its poll. */
interface FollowedFile {
  readonly followers: Set<Follower>;
  dir: FSWatcher | undefined;
  settle: NodeJS.Timeout | undefined;
  pollMs: number;
  stopPoll: () => void;
}

const followed = new Map<string, FollowedFile>();

/** Compares the file's stat with each caller's baseline; reads it once for all that differ. */
function check(path: string, f: FollowedFile): void {
  const cur = statOf(path);
  if (!cur) return;
  let text: string | undefined;
  let readError: Error | undefined;
  for (const w of [...f.followers]) {
    if (!f.followers.has(w)) continue; // stopped by an earlier caller's onChange
    if (w.last && sameFile(cur, w.last)) continue;
    w.last = cur;
    try {
      if (text === undefined && readError === undefined) {
        try {
          text = readFileSync(path, 'utf8');
        } catch (e) {
          readError = e as Error;
        }
      }
      if (readError) w.onError(readError);
      else w.onChange(text!);
    } catch (e) {
      w.onError(e as Error);
    }
  }
}

/** (Re)starts the path's poll at the shortest interval its callers ask for. */
function pollAtShortest(path: string, f: FollowedFile): void {
  const ms = Math.min(...[...f.followers].map((w) => w.intervalMs));
  if (ms === f.pollMs) return;
  f.stopPoll();
  f.pollMs = ms;
  f.stopPoll = runEvery(ms, () => check(path, f));
}

function startFollowing(path: string): FollowedFile {
  const f: FollowedFile = { followers: new Set(), dir: undefined, settle: undefined, pollMs: Infinity, stopPoll: () => undefined };
  const prompt = (): void => {
    clearTimeout(f.settle);
    f.settle = setTimeout(() => check(path, f), FILE_SETTLE_MS);
    f.settle.unref();
  };
  try {
    // Events are only a prompt to compare stats, once the directory has been quiet for FILE_SETTLE_MS.
    f.dir = watch(dirname(path), { persistent: false }, prompt);
    f.dir.on('error', () => {
      f.dir?.close();
      f.dir = undefined; // the poll remains
    });
  } catch {
    f.dir = undefined; // not watchable here: the poll remains
  }
  return f;
}

export function watchFileContent(path: string, intervalMs: number, onChange: (text: string) => void, onError: (e: Error) => void): () => void {
  const key = resolve(path);
  const w: Follower = { intervalMs, last: statOf(key), onChange, onError };
  let f = followed.get(key);
  if (!f) {
    f = startFollowing(key);
    followed.set(key, f);
  }
  f.followers.add(w);
  pollAtShortest(key, f);
  const file = f;
  return () => {
    if (!file.followers.delete(w)) return;
    if (file.followers.size > 0) {
      pollAtShortest(key, file);
      return;
    }
    file.stopPoll();
    clearTimeout(file.settle);
    file.dir?.close();
    if (followed.get(key) === file) followed.delete(key);
  };
}

/** Paths followed now, with their callers and whether their directory is watched (tests). */
export function followedFiles(): Array<{ path: string; callers: number; dirWatched: boolean; pollMs: number }> {
  return [...followed].map(([path, f]) => ({ path, callers: f.followers.size, dirWatched: f.dir !== undefined, pollMs: f.pollMs }));
}
