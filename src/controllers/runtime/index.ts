// The controller runtime: informers over our Store, keyed work queues, per-object leases.
export { Informer, keyOf, parseKey, clusterOf, type InformerHandler, type InformerOptions, type InformerSource } from './informer.js';
export { WorkQueue, type QueueResult, type WorkQueueOptions } from './queue.js';
export { LeaseKeeper, targetLeaseName, DEFAULT_LEASE_TTL_MS, type HeldLease, type LeaseStore } from './leases.js';
export { realClock, type Clock, type ClockTimer } from './clock.js';
