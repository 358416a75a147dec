// Re-reads a file when its stat changes. Polling stat (not fs.watch) survives the atomic symlink
// swaps of Kubernetes ConfigMap/Secret volumes and editors that replace files.
import { readFileSync, unwatchFile, watchFile, type Stats } from 'node:fs';

export function watchFileContent(path: string, intervalMs: number, onChange: (text: string) => void, onError: (e: Error) => void): () => void {
  const listener = (cur: Stats, prev: Stats): void => {
    if (cur.mtimeMs === prev.mtimeMs && cur.size === prev.size && cur.ino === prev.ino) return;
    if (cur.nlink === 0 && cur.size === 0 && cur.mtimeMs === 0) return; // vanished for a moment mid-swap
    try {
      onChange(readFileSync(path, 'utf8'));
    } catch (e) {
      onError(e as Error);
    }
  };
  watchFile(path, { interval: intervalMs, persistent: false }, listener);
  return () => unwatchFile(path, listener);
}
