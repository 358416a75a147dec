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
import { readFileSync, statSync, watch, type FSWatcher, type Stats } from 'node:fs';
import { dirname } from 'node:path';

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

export function watchFileContent(path: string, intervalMs: number, onChange: (text: string) => void, onError: (e: Error) => void): () => void {
  let last = statOf(path);
  const check = (): void => {
    const cur = statOf(path);
    if (!cur) return;
    if (last && cur.mtimeMs === last.mtimeMs && cur.size === last.size && cur.ino === last.ino) return;
    last = cur;
    try {
      onChange(readFileSync(path, 'utf8'));
    } catch (e) {
      onError(e as Error);
    }
  };
  const timer = setInterval(check, intervalMs);
  timer.unref();
  let settle: NodeJS.Timeout | undefined;
  const prompt = (): void => {
    clearTimeout(settle);
    settle = setTimeout(check, FILE_SETTLE_MS);
    settle.unref();
  };
  let dir: FSWatcher | undefined;
  try {
    // Events are only a prompt to compare stats, once the directory has been quiet for FILE_SETTLE_MS.
    dir = watch(dirname(path), { persistent: false }, prompt);
    dir.on('error', () => {
      dir?.close();
      dir = undefined; // the poll remains
    });
  } catch {
    dir = undefined; // not watchable here: the poll remains
  }
  return () => {
    clearInterval(timer);
    clearTimeout(settle);
    dir?.close();
  };
}
