// Backend selection for `--storage`. Validation of the Redis options (key prefix) happens here,
// before anything connects, so a bad flag fails at startup with the rule it broke.

import { createEmbeddedStore } from './embedded.js';
import { validateKeyPrefix, DEFAULT_KEY_PREFIX } from './keys.js';
import type { Store } from './types.js';
import { parseRedisUrl } from './redis/url.js';

export * from './types.js';
export { validateKeyPrefix, DEFAULT_KEY_PREFIX } from './keys.js';
export { DEFAULT_EVENT_LOG_RETENTION } from './watch-cache.js';

export interface StoreOptions {
  storage: 'embedded' | 'redis';
  /** Embedded: persist under `<dataDir>/store/` (memory only when absent). */
  dataDir?: string;
  /** Redis: redis:// or rediss:// URL; Sentinel and Cluster via query parameters (redis/url.ts). */
  redisUrl?: string;
  /** Redis: key prefix (default `reverser`), validated by validateKeyPrefix. */
  redisKeyPrefix?: string;
  /** Redis: extra ioredis options (Sentinel, TLS, ...); `cluster` switches to Redis Cluster nodes. */
  redisOptions?: Record<string, unknown>;
  /** Redis Cluster startup nodes; when set, the Cluster client is used. */
  redisClusterNodes?: string[];
  /** Watch history per resource (default 10,000 events; internal records keep less, eventLogRetentionOf). */
  eventLogRetention?: number;
  /** Embedded: compact the log into a snapshot once it passes this many bytes and the snapshot's size (default 16 MiB). */
  compactLogBytes?: number;
  /** Warnings: the embedded store's start-up (torn tail dropped, format converted); Redis connection loss and recovery. */
  warn?: (msg: string, fields?: Record<string, unknown>) => void;
}

export async function createStore(options: StoreOptions): Promise<Store> {
  if (options.eventLogRetention !== undefined && !(Number.isInteger(options.eventLogRetention) && options.eventLogRetention >= 1)) {
    throw new Error(`event-log-retention must be a positive integer (got ${options.eventLogRetention})`);
  }
  switch (options.storage) {
    case 'embedded':
      return createEmbeddedStore({ dataDir: options.dataDir, eventLogRetention: options.eventLogRetention, compactLogBytes: options.compactLogBytes, warn: options.warn });
    case 'redis': {
      const prefix = validateKeyPrefix(options.redisKeyPrefix ?? DEFAULT_KEY_PREFIX);
      if (!options.redisUrl && !options.redisClusterNodes?.length) throw new Error('--storage=redis requires --redis-url');
      const target = options.redisUrl ? parseRedisUrl(options.redisUrl) : {};
      const { createRedisStore } = await import('./redis/store.js');
      return createRedisStore({
        url: target.url,
        clusterNodes: options.redisClusterNodes ?? target.clusterNodes,
        keyPrefix: prefix,
        redisOptions: { ...target.redisOptions, ...options.redisOptions },
        waitReplicas: target.waitReplicas,
        eventLogRetention: options.eventLogRetention,
        log: options.warn ? { warn: options.warn } : undefined,
      });
    }
    default:
      throw new Error(`unknown storage ${JSON.stringify((options as { storage: unknown }).storage)}; use embedded or redis`);
  }
}
