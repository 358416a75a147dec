// The storage contract. Every backend (embedded, redis) implements `Store` and passes the same
// contract suite (test/storage/contract.ts). Handlers never talk to a backend directly: they go
// through the registry (src/registry), which builds on these primitives.
//
// Semantics, in Kubernetes terms:
// - resourceVersion (RV) is one monotonic integer counter for the whole store (all resources, all
//   logical clusters), so a wildcard watch is one ordered stream.
// - every write is one atomic compare-and-swap that bumps the RV and appends an event to the
//   resource's event log; a watch can resume from any retained RV and gets `Expired` beyond it.
// - reads are consistent: a get/list issued after a write was acknowledged (by any process
//   sharing the backend) observes it.

// The object model lives in src/model (below storage); re-exported for existing importers.
import type { KubeObject } from '../model/object.js';
export type { KubeObject, ObjectMeta } from '../model/object.js';

/** A resource type as stored: `configbutler.ai/gittargets`. */
export interface ResourceRef {
  group: string;
  resource: string;
}

/**
 * Identity of one stored object. `cluster` is the logical cluster (kcp workspace); the default
 * cluster of a plain Kubernetes deployment is DEFAULT_CLUSTER. `namespace` is '' for
 * cluster-scoped resources.
 */
export interface ObjectKey {
  cluster: string;
  namespace: string;
  name: string;
}

export const DEFAULT_CLUSTER = '_';

/**
 * The group of internal records (a GitTarget's commit windows and their chunks,
 * src/controllers/windows/record.ts): never served, watched only by the controllers of the
 * processes sharing the store, rewritten on every change that joins a window. Their watch history
 * is kept short: each event holds a whole record, and a history as long as that of served
 * resources (10,000 events) would hold 10,000 copies of a GitTarget's pending changes.
 */
export const INTERNAL_GROUP = 'internal.configbutler.ai';
export const INTERNAL_EVENT_LOG_RETENTION = 1_000;

/** Events of history kept for the resource `id` (`group/resource`, keys.ts resourceId). */
export function eventLogRetentionOf(id: string, retention: number): number {
  return id.startsWith(`${INTERNAL_GROUP}/`) ? Math.min(retention, INTERNAL_EVENT_LOG_RETENTION) : retention;
}

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface StoreEvent {
  type: WatchEventType;
  /** RV of this event (equals object.metadata.resourceVersion). */
  rv: number;
  cluster: string;
  object: KubeObject;
  /** The object as it was before this event (MODIFIED and DELETED); lets watchers compute selector transitions. */
  prevObject?: KubeObject;
}

export interface ListOptions {
  /** Logical cluster; undefined means every cluster (the kcp `*` wildcard). */
  cluster?: string;
  /** Namespace; undefined or '' means every namespace. */
  namespace?: string;
  /**
   * `consistent` (default): the result reflects every write acknowledged before the call.
   * `any`: may be served from the local cache without waiting (resourceVersion=0 semantics).
   */
  consistency?: 'consistent' | 'any';
  /**
   * Serve the list as it was at this RV (continue tokens read one snapshot). Rejects with
   * StorageError('Expired') when the RV is older than the retained event log, and with
   * StorageError('Timeout') when it is newer than the store's (no such snapshot exists yet).
   */
  atRV?: number;
}

export interface ListResult {
  /** Sorted by (cluster, namespace, name). */
  items: KubeObject[];
  /**
   * The store's sort key of each item (same index), opaque to callers: paginated lists resume
   * after one of these. Derived from where the object is stored, never from its content.
   */
  keys: string[];
  /** The store RV the list reflects. */
  resourceVersion: number;
}

export interface WatchOptions {
  cluster?: string;
  namespace?: string;
  /** Deliver every event with RV > fromRV. Rejects with StorageError('Expired') when fromRV is older than the retained log. */
  fromRV: number;
}

export interface WatchHandle {
  stop(): void;
}

export interface WatchCallbacks {
  /**
   * One event. Returning false says nothing reached the watcher's client (its own selector dropped
   * it): the store then keeps the watcher due for progress notifications as if it had sent nothing.
   */
  onEvent(event: StoreEvent): void | boolean;
  /**
   * Progress notification: the watcher has every event up to `rv`, and heard nothing for an
   * interval. Sent once per interval at most, and only when `rv` moved past what the watcher last
   * got (an event or a notification): an idle store costs its watchers nothing. Returning false
   * (not used yet, e.g. a bookmark not due) asks for it again at the next tick; a number, not before
   * that many ms (a bookmark due in a minute is not asked about every second, watchers.ts).
   */
  onProgress?(rv: number): void | boolean | number;
  /** The watch ended from the store's side (backend lost); the client must re-list. */
  onClose?(reason: StorageError): void;
}

export interface Lease {
  name: string;
  holder: string;
  /** Fencing token: strictly increases every time the lease changes hands. */
  token: number;
  /** When a TTL lease ends (ms); 0 for a membership lease (acquireMemberLease). */
  expiresAt: number;
}

/**
 * One replica's heartbeat (src/controllers/runtime/leases.ts): keep `member` in the set of live
 * replicas for `ttlMs` (or remove it at once with `leave`). Every membership lease the member
 * holds (acquireMemberLease) lives exactly as long as this membership: one store operation per
 * interval, whatever the number of leases (src/storage/lease.ts says the rules).
 */
export interface Heartbeat {
  member: string;
  ttlMs: number;
  leave?: boolean;
  /**
   * Whether the member takes a share of the GitTargets (default true). A member that does not is
   * live (its leases hold) but left out of `members`.
   */
  share?: boolean;
}

export interface HeartbeatResult {
  /** The live members that take a share, after this heartbeat, sorted. */
  members: string[];
  /**
   * The epoch of this member's membership: the same from heartbeat to heartbeat while it stays
   * live, a new one when it had expired (its earlier leases are then lost); 0 after `leave`.
   */
  epoch: number;
}

export interface Store {
  /** Short name for logs and /readyz: `embedded` or `redis`. */
  readonly kind: string;

  get(res: ResourceRef, key: ObjectKey, opts?: { consistency?: 'consistent' | 'any' }): Promise<KubeObject | undefined>;
  list(res: ResourceRef, opts?: ListOptions): Promise<ListResult>;
  /**
   * Store a new object. The store sets metadata.resourceVersion. Rejects with
   * StorageError('AlreadyExists') when the key is taken.
   */
  create(res: ResourceRef, key: ObjectKey, obj: KubeObject): Promise<KubeObject>;
  /**
   * Compare-and-swap: replace the object only if its stored RV equals `expectedRV`.
   * Rejects with 'NotFound' or 'Conflict'.
   */
  update(res: ResourceRef, key: ObjectKey, obj: KubeObject, expectedRV: number): Promise<KubeObject>;
  /**
   * Remove the object (only if its RV equals expectedRV when given). Resolves with the last state,
   * whose resourceVersion is the RV of the deletion. Rejects with 'NotFound' or 'Conflict'.
   */
  delete(res: ResourceRef, key: ObjectKey, expectedRV?: number): Promise<KubeObject>;
  watch(res: ResourceRef, opts: WatchOptions, cb: WatchCallbacks): Promise<WatchHandle>;
  /** The latest RV the backend has assigned. */
  currentRV(): Promise<number>;
  /**
   * Oldest RV a watch of `res` can resume from (events after it are retained). Cache-backed stores
   * (redis) answer from the process's cache as of its last read of `res`; 0 before the first one.
   */
  oldestRetainedRV(res: ResourceRef): number;

  /**
   * Resolves once every write with an RV up to `rv` is acknowledged (durable). Watch events may be
   * delivered before that (the embedded store applies a write to memory before its fsync);
   * internal consumers (controllers) wait on this so they never act on a write a crash could take
   * back. Absent when events are only delivered once durable (Redis: the event is read back from
   * the stream the write went to).
   */
  waitDurable?(rv: number): Promise<void>;

  /** Acquire (or take over an expired) TTL lease. Resolves null when someone else holds it. */
  acquireLease(name: string, holder: string, ttlMs: number): Promise<Lease | null>;
  /**
   * Acquire a membership lease: held by `holder` while its membership with `epoch` (the last
   * heartbeat's) is live, with no renewal of its own. Resolves null when someone else holds it (a
   * live member, or an unexpired TTL lease), or when that membership is not live. Taking it over
   * needs the holder's membership expired, or the lease released.
   */
  acquireMemberLease(name: string, holder: string, epoch: number): Promise<Lease | null>;
  /** Extend a TTL lease we hold (a membership lease: still held); false when it was lost (expired and taken, or released). */
  renewLease(name: string, holder: string, token: number, ttlMs: number): Promise<boolean>;
  /** True while `token` is the current token of the lease and it is held (the fencing check). */
  checkLease(name: string, token: number): Promise<boolean>;
  releaseLease(name: string, holder: string, token: number): Promise<void>;
  /** Membership heartbeat: keeps every membership lease of the member with it (see Heartbeat). */
  heartbeat(hb: Heartbeat): Promise<HeartbeatResult>;
  /**
   * Calls `listener` soon after another member's heartbeat changed the member set (a member joined,
   * left or expired, or a lone member's solo TTL was cut), with the member whose heartbeat did it,
   * so that a replica renews at once instead of at its next heartbeat. Also called, with '', after
   * the store was unreachable (a change may have gone unseen). Best effort: the heartbeat stays the
   * source of truth. Returns the unsubscribe.
   */
  onMembersChanged(listener: (by: string) => void): () => void;

  /**
   * Expiring records beside the objects (audit facts, src/attribution): no resourceVersion, no
   * event log, no watch; shared by every process on the backend, kept across restarts, gone after
   * their TTL. A batch is written atomically within one `space` (an audit route); rejects with
   * StorageError('Unavailable') when the backend cannot take it, and then nothing of it was written.
   */
  putRecords(space: string, batch: RecordBatch): Promise<void>;
  /** The values of `keys` in `space` (undefined: absent or expired), in one round trip. */
  getRecords(space: string, keys: string[]): Promise<(string | undefined)[]>;
  /** How many distinct ids were put in `space` within their TTL, and the newest batch time. */
  recordStats(space: string): Promise<RecordStats>;

  /** Health for /readyz: undefined when healthy, else the reason. */
  unhealthyReason(): string | undefined;
  close(): Promise<void>;
}

/** One keyed value of a record batch; `key` is built with keys.ts `recordKey`. */
export interface RecordWrite {
  key: string;
  value: string;
  /**
   * Latest-wins indexes: a decimal integer (a resourceVersion). The write is skipped when the stored
   * value has a greater or equal order, so a late or repeated batch never replaces a newer value.
   * Absent: the write always replaces.
   */
  order?: string;
}

export interface RecordBatch {
  writes: RecordWrite[];
  /** The distinct items this batch carries (counted once each by recordStats while they live). */
  ids: string[];
  /** Newest item time of the batch (ms since the epoch); recordStats reports the newest. */
  time: number;
  /** Every write, id and the space's last time expire this long after the batch (ms). */
  ttlMs: number;
}

export interface RecordStats {
  count: number;
  /** ms since the epoch; undefined when nothing lives in the space. */
  lastTime?: number;
}

/** Whether `a` orders after `b`, both decimal integers of any length (resourceVersions). */
export function orderAfter(a: string, b: string): boolean {
  return a.length !== b.length ? a.length > b.length : a > b;
}

export type StorageErrorCode = 'NotFound' | 'AlreadyExists' | 'Conflict' | 'Expired' | 'Unavailable' | 'Timeout';

export class StorageError extends Error {
  constructor(
    readonly code: StorageErrorCode,
    message: string,
    /** For Conflict: the RV actually stored; for Expired: the oldest retained RV. */
    readonly currentRV?: number,
  ) {
    super(message);
    this.name = 'StorageError';
  }
}

/** `gittargets.configbutler.ai "ns/name" (cluster c)`, for StorageError messages of every backend. */
export function describeObject(res: ResourceRef, key: ObjectKey): string {
  const gr = res.group ? `${res.resource}.${res.group}` : res.resource;
  const ns = key.namespace ? `${key.namespace}/` : '';
  const cl = key.cluster ? ` (cluster ${key.cluster})` : '';
  return `${gr} "${ns}${key.name}"${cl}`;
}
