// Blob oid → what the acceptance gate learned from it (the identities of the objects it holds and
// the file's own findings, src/analyzer/file-rules.ts), persisted as an append-only log under
// <data-dir>/cache, so a restarted engine does not re-read and re-parse every file of a
// 10,000-file folder to rebuild its index. A blob's content never changes, so entries never go stale.
import { appendFileSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { FileFinding } from '../analyzer/file-rules.js';

export interface CachedFile {
  /** identityKey of each object, in document order */
  keys: string[];
  findings: FileFinding[];
}

export class IdentityCache {
  private map: Map<string, CachedFile> | undefined;

  constructor(private readonly logPath: string | undefined) {}

  private load(): Map<string, CachedFile> {
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
        const v = JSON.parse(line.slice(41)) as { k?: unknown; f?: unknown };
        if (Array.isArray(v.k) && Array.isArray(v.f)) this.map.set(line.slice(0, 40), { keys: v.k as string[], findings: v.f as FileFinding[] });
      } catch {
        // A torn last line after a crash: ignore it, the blob is simply read again.
      }
    }
    return this.map;
  }

  get(blob: string): CachedFile | undefined {
    return this.load().get(blob);
  }

  add(entries: Array<[string, CachedFile]>): void {
    const map = this.load();
    let out = '';
    for (const [blob, file] of entries) {
      if (map.has(blob)) continue;
      map.set(blob, file);
      out += `${blob} ${JSON.stringify({ k: file.keys, f: file.findings })}\n`;
    }
    if (!out || !this.logPath) return;
    mkdirSync(dirname(this.logPath), { recursive: true });
    appendFileSync(this.logPath, out);
  }
}
