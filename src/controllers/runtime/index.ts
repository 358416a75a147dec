// The controller runtime: informers over our Store, keyed work queues, per-object leases.
export { Informer, keyOf, parseKey, clusterOf, type InformerHandler, type InformerOptions, type InformerSource } from './informer.js';
export { WorkQueue, type QueueResult, type RunSlot, type WorkQueueOptions } from './queue.js';
export { Permits } from './permits.js';
export { LeaseKeeper, targetLeaseName, gitTargetLeaseName, movedKeys, DEFAULT_LEASE_TTL_MS, type HeldLease, type LeaseStore, type RebalanceListener } from './leases.js';
export { ownerOf } from './shards.js';
export { realClock, type Clock, type ClockTimer } from './clock.js';
