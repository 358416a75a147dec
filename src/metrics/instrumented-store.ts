// Storage latency for /metrics: a Store that times every call of the one it wraps. Leases and
// health pass straight through; watches are long-running and counted by the API layer instead.
import { Histogram, type Registry } from './prom.js';
import type { KubeObject } from '../model/object.js';
import type { ListOptions, ObjectKey, ResourceRef, Store, WatchCallbacks, WatchOptions } from '../storage/types.js';

/** The `resource` label of record operations (expiring records are not a resource). */
const RECORDS: ResourceRef = { group: '', resource: 'records' };

export function instrumentStore(store: Store, registry: Registry): Store {
  const latency = new Histogram({
    name: 'reverser_storage_operation_duration_seconds',
    help: 'Latency of storage operations by operation, resource and result.',
    labelNames: ['operation', 'resource', 'result'],
    buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5],
    registers: [registry],
  });
  const timed = async <T>(operation: string, res: ResourceRef, fn: () => Promise<T>): Promise<T> => {
    const end = latency.startTimer({ operation, resource: res.resource });
    try {
      const v = await fn();
      end({ result: 'ok' });
      return v;
    } catch (e) {
      end({ result: (e as { code?: string }).code ?? 'error' });
      throw e;
    }
  };
  return {
    get kind() {
      return store.kind;
    },
    get: (res: ResourceRef, key: ObjectKey, opts?: { consistency?: 'consistent' | 'any' }) => timed('get', res, () => store.get(res, key, opts)),
    list: (res: ResourceRef, opts?: ListOptions) => timed('list', res, () => store.list(res, opts)),
    create: (res: ResourceRef, key: ObjectKey, obj: KubeObject) => timed('create', res, () => store.create(res, key, obj)),
    update: (res: ResourceRef, key: ObjectKey, obj: KubeObject, rv: number) => timed('update', res, () => store.update(res, key, obj, rv)),
    delete: (res: ResourceRef, key: ObjectKey, rv?: number) => timed('delete', res, () => store.delete(res, key, rv)),
    watch: (res: ResourceRef, opts: WatchOptions, cb: WatchCallbacks) => store.watch(res, opts, cb),
    currentRV: () => store.currentRV(),
    oldestRetainedRV: (res: ResourceRef) => store.oldestRetainedRV(res),
    acquireLease: (n, h, ttl) => store.acquireLease(n, h, ttl),
    acquireMemberLease: (n, h, e) => store.acquireMemberLease(n, h, e),
    renewLease: (n, h, t, ttl) => store.renewLease(n, h, t, ttl),
    checkLease: (n, t) => store.checkLease(n, t),
    releaseLease: (n, h, t) => store.releaseLease(n, h, t),
    heartbeat: (hb) => store.heartbeat(hb),
    onMembersChanged: (fn) => store.onMembersChanged(fn),
    putRecords: (space, batch) => timed('putRecords', RECORDS, () => store.putRecords(space, batch)),
    getRecords: (space, keys) => timed('getRecords', RECORDS, () => store.getRecords(space, keys)),
    recordStats: (space) => timed('recordStats', RECORDS, () => store.recordStats(space)),
    unhealthyReason: () => store.unhealthyReason(),
    close: () => store.close(),
  };
}
