// Blob oid → identities of the documents it holds, persisted as an append-only log under
// <data-dir>/cache, so a restarted engine does not re-read and re-parse every file of a
// 10,000-file folder to rebuild its index. A blob's content never changes, so entries never go stale.
import { appendFileSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';

export class IdentityCache {
  private map: Map<string, string[]> | undefined;

  constructor(private readonly logPath: string | undefined) {}

  private load(): Map<string, string[]> {
    if (this.map) return this.map;
    this.map = new Map();
    if (!this.logPath) return this.map;
    let text = '';
    try {
      text = readFileSync(this.logPath, 'utf8');
    } catch {
      return this.map;
    }
    for (const line of text.split('\n')) {
      const sp = line.indexOf(' ');
      if (sp !== 40) continue;
      try {
        this.map.set(line.slice(0, 40), JSON.parse(line.slice(41)) as string[]);
      } catch {
        // A torn last line after a crash: ignore it, the blob is simply read again.
      }
    }
    return this.map;
  }

  get(blob: string): string[] | undefined {
    return this.load().get(blob);
  }

  add(entries: Array<[string, string[]]>): void {
    const map = this.load();
    let out = '';
    for (const [blob, keys] of entries) {
      if (map.has(blob)) continue;
      map.set(blob, keys);
      out += `${blob} ${JSON.stringify(keys)}\n`;
    }
    if (!out || !this.logPath) return;
    mkdirSync(dirname(this.logPath), { recursive: true });
    appendFileSync(this.logPath, out);
  }
}
