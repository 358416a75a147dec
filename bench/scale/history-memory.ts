// Heap held per GitTarget by the store's state and watch history, in one process, after a forced
// GC (load-independent): `node --expose-gc dist/bench/scale/history-memory.js [--n=500]
// [--storage=redis|embedded] [--dist=<another build's dist/>]`. Each of N GitTargets is created
// and then takes 5 status writes shaped like the controllers' start-up writes (conditions, streams,
// pendingChanges, managedFields of two managers), the ~5 measured per new GitTarget by the scale
// bench; the history (10,000 events per resource) keeps every version. `--dist` loads the store
// from another build (a baseline) so both are measured by the same script.
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { cleanup, startRedis, tempDir } from '../common/proc.js';

const argv = process.argv.slice(2);
const arg = (k: string) => argv.find((a) => a.startsWith(`--${k}=`))?.slice(k.length + 3);
const N = Number(arg('n') ?? 500);
const storage = arg('storage') ?? 'redis';
const dist = resolve(arg('dist') ?? new URL('../..', import.meta.url).pathname);
const GT = { group: 'configbutler.ai', resource: 'gittargets' };
const T = '2026-12-01T23:00:00Z';

function condition(type: string, status: string, reason: string, message: string) {
  return { type, status, reason, message, lastTransitionTime: T, observedGeneration: 1 };
}
const TYPES = ['Ready', 'Validated', 'SourceReachable', 'RepositoryReady', 'Synced'];
function fieldsOfStatus(): Record<string, unknown> {
  const cond = (t: string) => [`k:{"type":"${t}"}`, { '.': {}, 'f:lastTransitionTime': {}, 'f:message': {}, 'f:observedGeneration': {}, 'f:reason': {}, 'f:status': {}, 'f:type': {} }];
  return { 'f:status': { '.': {}, 'f:conditions': { '.': {}, ...Object.fromEntries(TYPES.map(cond)) }, 'f:observedGeneration': {}, 'f:pendingChanges': {}, 'f:streams': { '.': {}, 'f:ready': {}, 'f:summary': {}, 'f:total': {} } } };
}

function gitTarget(i: number, step: number): Record<string, unknown> {
  const ns = `tenant-${i}`;
  return {
    apiVersion: 'configbutler.ai/v1alpha1',
    kind: 'GitTarget',
    metadata: {
      name: 'gt',
      namespace: ns,
      uid: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
      generation: 1,
      creationTimestamp: T,
      managedFields: [
        { manager: 'kubectl-client-side-apply', operation: 'Update', apiVersion: 'configbutler.ai/v1alpha1', time: T, fieldsType: 'FieldsV1', fieldsV1: { 'f:spec': { '.': {}, 'f:branch': {}, 'f:commit': { '.': {}, 'f:idleSeconds': {} }, 'f:path': {}, 'f:repository': { '.': {}, 'f:url': {} }, 'f:resources': {} } } },
        ...(step > 0 ? [{ manager: 'reverser-apiserver', operation: 'Update', apiVersion: 'configbutler.ai/v1alpha1', time: T, subresource: 'status', fieldsType: 'FieldsV1', fieldsV1: fieldsOfStatus() }] : []),
      ],
    },
    spec: { repository: { url: `local:${ns}` }, branch: 'main', path: ns, commit: { idleSeconds: 1 }, resources: [{ group: '', version: 'v1', resource: 'configmaps', namespaces: [ns] }] },
    ...(step > 0
      ? {
          status: {
            observedGeneration: 1,
            pendingChanges: step < 4 ? 5 : 0,
            streams: { ready: step >= 2 ? 1 : 0, total: 1, summary: step >= 2 ? '1/1 ready' : '0/1 ready' },
            conditions: TYPES.map((t, k) => condition(t, k < step ? 'True' : 'Unknown', k < step ? 'Ok' : 'Pending', k < step ? `${t} for ${ns}` : 'waiting')),
          },
        }
      : {}),
  };
}

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc');
const heap = () => {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
};

const dir = tempDir('history-memory-');
const redis = storage === 'redis' ? await startRedis(dir) : undefined;
try {
  const store = redis
    ? await (await import(pathToFileURL(`${dist}/src/storage/redis/store.js`).href)).createRedisStore({ url: redis.url, keyPrefix: 'h' })
    : await (await import(pathToFileURL(`${dist}/src/storage/embedded.js`).href)).createEmbeddedStore({});
  const before = heap();
  let lastRV = '';
  for (let i = 0; i < N; i++) {
    const key = { cluster: 'root', namespace: `tenant-${i}`, name: 'gt' };
    let cur = await store.create(GT, key, gitTarget(i, 0));
    for (let step = 1; step <= 5; step++) cur = await store.update(GT, key, gitTarget(i, step), Number(cur.metadata.resourceVersion));
    lastRV = cur.metadata.resourceVersion;
  }
  // The follower applies the log asynchronously: wait until the last write is in the cache.
  const last = { cluster: 'root', namespace: `tenant-${N - 1}`, name: 'gt' };
  for (let i = 0; (await store.get(GT, last))?.metadata.resourceVersion !== lastRV; i++) {
    if (i > 400) throw new Error('the cache did not reach the last write in 20 s');
    await new Promise((r) => setTimeout(r, 50));
  }
  const after = heap();
  const perTarget = (after - before) / N / 1024;
  process.stdout.write(JSON.stringify({ storage, n: N, versionsPerTarget: 6, dist, heapBeforeMiB: +(before / 2 ** 20).toFixed(1), heapAfterMiB: +(after / 2 ** 20).toFixed(1), kibPerGitTarget: +perTarget.toFixed(1) }) + '\n');
  await store.close();
} finally {
  await cleanup([dir]);
}
