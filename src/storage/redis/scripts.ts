// Lua scripts live beside this file (copied to dist by scripts/copy-assets.mjs). Each runs with
// EVALSHA; a server that does not have it cached answers NOSCRIPT, and the call is repeated once
// as EVAL with the source, which runs the script and caches it on that server. EVAL goes through
// the client's key routing, so it lands on the node that owns the keys' slot: unlike a keyless
// SCRIPT LOAD, it does not depend on which Cluster node receives it, nor on what a restarted
// server or a promoted replica has cached.

import { readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';

export class Script {
  readonly source: string;
  readonly sha: string;

  constructor(file: string) {
    this.source = readFileSync(new URL(file, import.meta.url), 'utf8');
    this.sha = createHash('sha1').update(this.source).digest('hex');
  }

  async run(client: Redis | Cluster, keys: string[], args: (string | number)[]): Promise<unknown> {
    try {
      return await client.evalsha(this.sha, keys.length, ...keys, ...args);
    } catch (err) {
      // NOSCRIPT means the script did not run, so running it now cannot apply a write twice.
      if (!String((err as Error).message).startsWith('NOSCRIPT')) throw err;
      return client.eval(this.source, keys.length, ...keys, ...args);
    }
  }

  /**
   * run(), then `WAIT replicas ms` in the same pipeline: one connection to the node that owns the
   * keys (ioredis routes a Cluster pipeline by its keyed commands), so WAIT counts the replicas
   * that have this write. Returns the script's result and that count.
   */
  async runAndWait(client: Redis | Cluster, keys: string[], args: (string | number)[], replicas: number, ms: number): Promise<[unknown, number]> {
    const once = async (bySource: boolean): Promise<[unknown, number]> => {
      const p = client.pipeline();
      if (bySource) p.eval(this.source, keys.length, ...keys, ...args);
      else p.evalsha(this.sha, keys.length, ...keys, ...args);
      p.wait(replicas, ms);
      const out = await p.exec();
      if (!out) throw new Error('pipeline aborted');
      for (const [err] of out) if (err) throw err;
      return [out[0]![1], Number(out[1]![1])];
    };
    try {
      return await once(false);
    } catch (err) {
      if (!String((err as Error).message).startsWith('NOSCRIPT')) throw err;
      return once(true);
    }
  }
}

export const writeScript = new Script('./write.lua');
export const leaseScript = new Script('./lease.lua');
export const heartbeatScript = new Script('./heartbeat.lua');
export const recordsScript = new Script('./records.lua');
