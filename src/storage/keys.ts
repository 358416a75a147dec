// The one module that builds storage keys: the embedded store's map keys and every Redis key.
// Nothing else in the code base concatenates key strings, so the layout can be read (and
// changed) in one place. Layout and the Redis Cluster decision are described in docs/storage.md.

import type { ObjectKey, ResourceRef } from './types.js';

export const DEFAULT_KEY_PREFIX = 'reverser';
const MAX_PREFIX = 128;
const PREFIX_CHARS = /^[A-Za-z0-9._:-]*$/;

/**
 * Validate `--redis-key-prefix` (docs/storage.md): trim spaces and all trailing
 * `:` (so `tenant-7:` and `tenant-7` are one keyspace), then require 1..128 characters of
 * `[A-Za-z0-9._:-]`. Glob characters are banned so `<prefix>:*` never over-matches, and `{`/`}`
 * so the prefix can never change a key's Redis Cluster hash slot. Returns the normalized prefix.
 */
export function validateKeyPrefix(prefix: string): string {
  const p = prefix.trim().replace(/:+$/, '');
  if (p.length === 0) {
    throw new Error(`redis-key-prefix must be a non-empty identifier after trimming trailing ':' (default "${DEFAULT_KEY_PREFIX}")`);
  }
  if (p.length > MAX_PREFIX) {
    throw new Error(`redis-key-prefix must be at most ${MAX_PREFIX} characters (got ${p.length})`);
  }
  if (!PREFIX_CHARS.test(p)) {
    const bad = [...p].find((c) => !/[A-Za-z0-9._:-]/.test(c));
    throw new Error(
      `redis-key-prefix ${JSON.stringify(p)} contains ${JSON.stringify(bad)}; allowed characters are [A-Za-z0-9], '-', '_', '.' and ':'`,
    );
  }
  return p;
}

/** `group/resource`, the stable name of a resource type (core group is ''). */
export function resourceId(res: ResourceRef): string {
  return `${res.group}/${res.resource}`;
}

export function parseResourceId(id: string): ResourceRef {
  const i = id.indexOf('/');
  return { group: id.slice(0, i), resource: id.slice(i + 1) };
}

// Map keys join the fields with NUL: NUL sorts before every character a cluster, namespace or
// name can contain, so plain string order of map keys IS (cluster, namespace, name) order, and
// all keys of one cluster (or cluster+namespace) form one contiguous range.
const SEP = '\u0000';

/** Key of an object inside one resource's cache / snapshot. */
export function objectMapKey(key: ObjectKey): string {
  return key.cluster + SEP + key.namespace + SEP + key.name;
}

export function parseObjectMapKey(k: string): ObjectKey {
  const [cluster, namespace, name] = k.split(SEP);
  return { cluster: cluster!, namespace: namespace!, name: name! };
}

/** Prefix shared by every map key of `cluster` (and `namespace` when given): a contiguous range. */
export function objectMapKeyRange(cluster: string, namespace?: string): string {
  return namespace ? cluster + SEP + namespace + SEP : cluster + SEP;
}

/** Field of an object inside its Redis hash (one hash per cluster and resource). */
export function objectField(key: ObjectKey): string {
  return key.namespace + '/' + key.name;
}

export function parseObjectField(cluster: string, field: string): ObjectKey {
  const i = field.indexOf('/');
  return { cluster, namespace: field.slice(0, i), name: field.slice(i + 1) };
}

// Escaping for values placed inside a hash tag or key: `{`/`}` would move the hash slot and `:`
// would make keys ambiguous to a human reading them. One-way; keys are never parsed back except
// through the values stored inside them.
function esc(s: string): string {
  return s.replace(/[%:{}]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0'));
}

/**
 * Key of a record inside its space (storage/types.ts putRecords): a kind and fields, each escaped,
 * joined by `:`. The embedded store uses it as a map key, Redis as the tail of `RedisKeys.record`.
 */
export function recordKey(kind: string, ...fields: string[]): string {
  return [kind, ...fields].map(esc).join(':');
}

/**
 * Redis key builder. Every key carries a hash tag. Keys of one logical cluster share the tag
 * `{c:<cluster>}`; store-wide keys (RV counter, event logs, cluster index, leases) use `{g}`.
 * Because one RV counter orders every write, a write script touches both
 * kinds, which standalone and Sentinel accept. On Redis Cluster (`singleSlot`), every tag becomes
 * `{<prefix>}` so each script stays in one slot; see docs/storage.md for the trade-off.
 */
export class RedisKeys {
  readonly prefix: string;
  constructor(prefix: string = DEFAULT_KEY_PREFIX, private readonly singleSlot = false) {
    this.prefix = validateKeyPrefix(prefix);
  }
  /** The per-logical-cluster hash tag. */
  clusterTag(cluster: string): string {
    return this.singleSlot ? `{${this.prefix}}` : `{c:${esc(cluster)}}`;
  }
  private global(): string {
    return this.singleSlot ? `{${this.prefix}}` : '{g}';
  }
  /** The one monotonic RV counter for the whole store. */
  rv(): string {
    return `${this.prefix}:${this.global()}:rv`;
  }
  /** Hash of the objects of one resource in one logical cluster: field objectField() -> JSON. */
  objects(cluster: string, res: ResourceRef): string {
    // With one tag for the whole store (Redis Cluster) the tag no longer names the cluster, so the
    // key must: otherwise every logical cluster's objects of a resource would share one hash.
    if (this.singleSlot) return `${this.prefix}:{${this.prefix}}:c:${esc(cluster)}:obj:${esc(resourceId(res))}`;
    return `${this.prefix}:${this.clusterTag(cluster)}:obj:${esc(resourceId(res))}`;
  }
  /** Set of logical clusters that hold objects of `res` (for a full cache load). */
  clusters(res: ResourceRef): string {
    return `${this.prefix}:${this.global()}:clusters:${esc(resourceId(res))}`;
  }
  /** Event log (Redis Stream) of one resource; entry id `<rv>-0`. */
  log(res: ResourceRef): string {
    return `${this.prefix}:${this.global()}:log:${esc(resourceId(res))}`;
  }
  /**
   * The hash tag of one record space (an audit route): every key of a space shares it, so a batch
   * is one script in one slot.
   */
  private spaceTag(space: string): string {
    return this.singleSlot ? `{${this.prefix}}` : `{r:${esc(space)}}`;
  }
  /** One expiring record (string `<order>\n<value>`, PEXPIRE'd); `key` comes from recordKey(). */
  record(space: string, key: string): string {
    return `${this.prefix}:${this.spaceTag(space)}:rec:${key}`;
  }
  /** Sorted set of a space's item ids, scored by their expiry time (ms): recordStats counts it. */
  recordIds(space: string): string {
    return `${this.prefix}:${this.spaceTag(space)}:recids`;
  }
  /** The newest batch time (ms) of a space. */
  recordLast(space: string): string {
    return `${this.prefix}:${this.spaceTag(space)}:reclast`;
  }
  /**
   * Hash {holder, token, expiresAt, epoch} of one lease; kept after release so tokens never go
   * back. A membership lease (epoch set) is held while its holder's membership with that epoch is
   * live (memberEpochs); a TTL lease (epoch '') until expiresAt.
   */
  lease(name: string): string {
    return `${this.prefix}:${this.global()}:lease:${esc(name)}`;
  }
  /**
   * Sorted set of live replicas, scored by the time (ms) their heartbeat expires. In the leases'
   * slot, so the lease script can tell whether a membership lease's holder is live.
   */
  members(): string {
    return `${this.prefix}:${this.global()}:members`;
  }
  /**
   * Hash member -> epoch of its live membership (`<epoch>`, or `<epoch>:observer` for a member that
   * takes no share); the same members as members(), removed with them.
   */
  memberEpochs(): string {
    return `${this.prefix}:${this.global()}:member-epochs`;
  }
  /** Counter of membership epochs: each (re)join of a member takes the next one. */
  memberEpochCounter(): string {
    return `${this.prefix}:${this.global()}:member-epoch-seq`;
  }
  /**
   * Stream of member set changes (the last 16, field `by`: the member whose heartbeat made it),
   * which every replica's follower blocks on with the event logs, in their slot.
   */
  memberLog(): string {
    return `${this.prefix}:${this.global()}:member-log`;
  }
}
