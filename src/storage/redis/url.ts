// `--redis-url` also selects Sentinel and Cluster, so one flag configures every topology:
//   redis[s]://[user:pass@]host:port[/db]                                   standalone
//   redis[s]://[user:pass@]s1:26379?sentinelMaster=mymaster&sentinels=s2:26379,s3:26379   Sentinel
//   redis[s]://[user:pass@]n1:6379?cluster=true&nodes=n2:6379,n3:6379       Cluster
// (The host of the URL is the first Sentinel / the first Cluster node.)
// Any form takes `waitReplicas=N`: a write is acknowledged only once N replicas have it (Redis
// WAIT; see RedisStoreOptions.waitReplicas in store.ts).

export interface RedisTarget {
  url?: string;
  clusterNodes?: string[];
  redisOptions?: Record<string, unknown>;
  /** `waitReplicas=N` on any form: replicas that must have a write before it is acknowledged. */
  waitReplicas?: number;
}

export function parseRedisUrl(raw: string): RedisTarget {
  const u = new URL(raw);
  if (u.protocol !== 'redis:' && u.protocol !== 'rediss:') {
    throw new Error(`redis-url must start with redis:// or rediss:// (got ${JSON.stringify(u.protocol)})`);
  }
  const q = u.searchParams;
  const wait = q.get('waitReplicas');
  let waitReplicas: number | undefined;
  if (wait !== null) {
    if (!/^\d{1,2}$/.test(wait)) throw new Error(`redis-url: waitReplicas must be a whole number of replicas (got ${JSON.stringify(wait)})`);
    waitReplicas = Number(wait);
    q.delete('waitReplicas'); // not an ioredis option
  }
  const withWait = <T extends RedisTarget>(t: T): T => (waitReplicas === undefined ? t : { ...t, waitReplicas });
  const first = `${u.hostname}:${u.port || (q.has('sentinelMaster') ? '26379' : '6379')}`;
  const more = (name: string): string[] => (q.get(name) ?? '').split(',').filter(Boolean);
  const auth: Record<string, unknown> = {};
  if (u.username) auth.username = decodeURIComponent(u.username);
  if (u.password) auth.password = decodeURIComponent(u.password);
  if (u.protocol === 'rediss:') auth.tls = {};
  if (q.has('sentinelMaster')) {
    const sentinels = [first, ...more('sentinels')].map(hostPort);
    return withWait({ redisOptions: { ...auth, sentinels, name: q.get('sentinelMaster'), db: Number(u.pathname.slice(1) || 0) } });
  }
  if (q.get('cluster') === 'true') {
    return withWait({ clusterNodes: [first, ...more('nodes')], redisOptions: auth });
  }
  return withWait({ url: waitReplicas === undefined ? raw : u.toString() });
}

function hostPort(s: string): { host: string; port: number } {
  const i = s.lastIndexOf(':');
  return { host: s.slice(0, i), port: Number(s.slice(i + 1)) };
}
