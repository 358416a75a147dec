// How controllers write our own objects: through the registry, as the system identity
// (registry/context.ts: system:reverser-apiserver:controller), never straight into the Store. A
// controller's status write therefore gets what a client's PUT of /status gets: the resource's
// strategy and schema validation (an invalid status is refused with 422 and stores nothing), the
// optimistic-concurrency conflict, managedFields (manager `reverser-apiserver`, subresource
// status), storage metrics, and a count in apiserver_request_total / _duration_seconds with the
// labels that PUT would have (verb update, the resource, the code).
import { StatusError } from '../api/status.js';
import { RESOURCES } from '../api/resources.js';
import type { ServerMetrics } from '../metrics/metrics.js';
import type { KubeObject, ObjectKey, ResourceRef, Store } from '../storage/types.js';
import { Registries } from '../registry/registries.js';
import { systemContext, systemWriteOptions } from '../registry/context.js';
import { cloneInSlices } from '../registry/apply/work.js';

export type RequestMetrics = Pick<ServerMetrics, 'requests' | 'requestDuration'>;

const MAX_CONFLICT_RETRIES = 20;

export class SystemClient {
  constructor(
    private readonly registries: Registries,
    private readonly metrics?: RequestMetrics,
  ) {}

  /** A client over `store` with the definitions' own strategies (tests and tools; the server passes its own registries). */
  static forStore(store: Store, metrics?: RequestMetrics): SystemClient {
    return new SystemClient(new Registries(store, RESOURCES), metrics);
  }

  /**
   * Reads the object, lets `fn` edit its status in place (returning false when it changed
   * nothing: no write), and writes the status subresource; retried on conflict. Resolves with the
   * stored object, or undefined when it is gone or its uid is not `uid`. A refused write
   * (validation, admission) rejects with the registry's StatusError.
   */
  async updateStatus(res: ResourceRef, key: ObjectKey, uid: string | undefined, fn: (status: Record<string, unknown>, obj: KubeObject) => boolean): Promise<KubeObject | undefined> {
    const reg = this.registries.get(res.resource);
    if (!reg || reg.ref.group !== res.group) throw new Error(`no registry serves ${res.resource}.${res.group}`);
    const ctx = systemContext(key.cluster);
    for (let attempt = 0; ; attempt++) {
      // The first read is the cache's (a consistent read is a GET and an XRANGE in Redis): the
      // registry's update reads the object consistently and refuses a copy older than it
      // (Conflict, retried here with a consistent read). Whatever the cached copy cannot decide —
      // gone, another uid, nothing to change — is asked again of a consistent one, so a stale
      // cache never skips a write.
      const cached = attempt === 0;
      let cur: KubeObject;
      try {
        cur = await reg.get(ctx, key.namespace, key.name, cached ? 'any' : 'consistent');
      } catch (e) {
        if (e instanceof StatusError && e.status.code === 404) {
          if (cached) continue;
          return undefined;
        }
        throw e;
      }
      if (uid !== undefined && cur.metadata.uid !== uid) {
        if (cached) continue;
        return undefined;
      }
      // A copy made in slices (src/registry/apply/work.ts): structuredClone of an object holding a
      // 3 MiB list and its managedFields stopped the event loop for 100 ms or more at once.
      const next = await cloneInSlices(cur);
      const status = (next.status && typeof next.status === 'object' ? next.status : {}) as Record<string, unknown>;
      if (!fn(status, next)) {
        if (cached) continue;
        return cur;
      }
      next.status = status;
      const end = this.metrics?.requestDuration.startTimer({ verb: 'update', resource: res.resource });
      let code = 200;
      try {
        return (await reg.updateStatus(ctx, next, systemWriteOptions())).object;
      } catch (e) {
        code = e instanceof StatusError ? e.status.code : 500;
        if (code === 404) return undefined; // deleted meanwhile
        if (e instanceof StatusError && e.status.reason === 'Conflict' && attempt < MAX_CONFLICT_RETRIES) continue;
        throw e;
      } finally {
        end?.();
        this.metrics?.requests.inc({ verb: 'update', resource: res.resource, code: String(code) });
      }
    }
  }
}
