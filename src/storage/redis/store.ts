// Placeholder until the Redis store lands; createStore({storage:'redis'}) fails clearly.
import type { Store } from '../types.js';

export interface RedisStoreOptions {
  url?: string;
  clusterNodes?: string[];
  keyPrefix: string;
  redisOptions?: Record<string, unknown>;
  eventLogRetention?: number;
}

export async function createRedisStore(_opts: RedisStoreOptions): Promise<Store> {
  throw new Error('--storage=redis is not implemented yet');
}
