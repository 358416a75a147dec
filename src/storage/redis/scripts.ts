// Lua scripts live beside this file (copied to dist by scripts/copy-assets.mjs). Each is loaded
// once (SCRIPT LOAD) and run with EVALSHA; after a Redis restart or SCRIPT FLUSH the server answers
// NOSCRIPT, and the script is loaded again and the call retried once.

import { readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';

export class Script {
  readonly source: string;
  readonly sha: string;
  private loaded = false;

  constructor(file: string) {
    this.source = readFileSync(new URL(file, import.meta.url), 'utf8');
    this.sha = createHash('sha1').update(this.source).digest('hex');
  }

  async run(client: Redis | Cluster, keys: string[], args: (string | number)[]): Promise<unknown> {
    if (!this.loaded) await this.load(client);
    try {
      return await client.evalsha(this.sha, keys.length, ...keys, ...args);
    } catch (err) {
      if (!String((err as Error).message).startsWith('NOSCRIPT')) throw err;
      await this.load(client);
      return client.evalsha(this.sha, keys.length, ...keys, ...args);
    }
  }

  private async load(client: Redis | Cluster): Promise<void> {
    // On Cluster, scripts must exist on the node owning the slot; ioredis forwards SCRIPT LOAD
    // to every master with scriptLoad on nodes — keep it simple: load through the client.
    await (client as Redis).script('LOAD', this.source);
    this.loaded = true;
  }
}

export const writeScript = new Script('./write.lua');
export const leaseScript = new Script('./lease.lua');
export const recordsScript = new Script('./records.lua');
