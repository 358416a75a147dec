// Re-reads a file when its stat changes. Polling stat (not fs.watch) survives the atomic symlink
// swaps of Kubernetes ConfigMap/Secret volumes and editors that replace files.
//
// The baseline stat is taken synchronously when the watch starts, right after the caller's own
// synchronous read. (fs.watchFile took its baseline on its first asynchronous poll, so an edit
// landing between the caller's read and that poll was never noticed.)
import { readFileSync, statSync, type Stats } from 'node:fs';

function statOf(path: string): Stats | undefined {
  try {
    return statSync(path);
  } catch {
    return undefined; // missing for a moment (mid-swap): compare again on the next poll
  }
}

export function watchFileContent(path: string, intervalMs: number, onChange: (text: string) => void, onError: (e: Error) => void): () => void {
  let last = statOf(path);
  const timer = setInterval(() => {
    const cur = statOf(path);
    if (!cur) return;
    if (last && cur.mtimeMs === last.mtimeMs && cur.size === last.size && cur.ino === last.ino) return;
    last = cur;
    try {
      onChange(readFileSync(path, 'utf8'));
    } catch (e) {
      onError(e as Error);
    }
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
