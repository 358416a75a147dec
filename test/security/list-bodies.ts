// Request bodies made of one long list, filled up to the request body limit, for the list attacks
// (test/security/http-list-*.test.ts and `npm run bench -- attack`): a CommitRequest with as many
// finalizers as fit (a `set` list: SSA and managedFields track every item), a sandbox Deployment
// whose one container has as many env entries as fit (strategic merge patch merges them by name),
// and the strategic merge patches that touch every item of it.

export const LIMIT_BYTES = 3 * 1024 * 1024;

type Obj = Record<string, any>;

/** The largest n (found by bisection) for which `make(n)` serialized stays within `limit` bytes. */
export function fill<T>(make: (n: number) => T, limit = LIMIT_BYTES): { n: number; value: T; text: string } {
  let lo = 1;
  let hi = 1;
  while (JSON.stringify(make(hi)).length <= limit) hi *= 2;
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (JSON.stringify(make(mid)).length <= limit) lo = mid;
    else hi = mid;
  }
  const value = make(lo);
  return { n: lo, value, text: JSON.stringify(value) };
}

const pad = (i: number) => String(i).padStart(6, '0');

/** A qualified name, unique per i. */
export const finalizer = (i: number) => `example.com/f-${pad(i)}`;

export function commitRequestWithFinalizers(name: string, n: number): Obj {
  return {
    apiVersion: 'configbutler.ai/v1alpha1',
    kind: 'CommitRequest',
    metadata: { name, finalizers: Array.from({ length: n }, (_, i) => finalizer(i)) },
    spec: { targetRef: { name: 'tenants' }, message: 'many finalizers' },
  };
}

export const envName = (i: number) => `V${pad(i)}`;

/** A Deployment whose container `app` has n env entries `V000000=a` … (`value` omitted when null). */
export function deploymentWithEnv(name: string, n: number, value: string | null = 'a'): Obj {
  const env = Array.from({ length: n }, (_, i) => (value === null ? { name: envName(i) } : { name: envName(i), value }));
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name },
    spec: {
      selector: { matchLabels: { app: name } },
      template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'app', image: 'nginx', env }] } },
    },
  };
}

/** Strategic merge patch setting every one of n env entries to `value` (merged by name). */
export function envValuePatch(n: number, value: string): Obj {
  return { spec: { template: { spec: { containers: [{ name: 'app', env: Array.from({ length: n }, (_, i) => ({ name: envName(i), value })) }] } } } };
}

/** Strategic merge patch deleting every one of n env entries (`$patch: delete` by name). */
export function envDeletePatch(n: number): Obj {
  return { spec: { template: { spec: { containers: [{ name: 'app', env: Array.from({ length: n }, (_, i) => ({ name: envName(i), $patch: 'delete' })) }] } } } };
}

/** `$setElementOrder/env` listing n env entries in reverse order (and nothing else to merge). */
export function envReorderPatch(n: number): Obj {
  const order = Array.from({ length: n }, (_, i) => ({ name: envName(n - 1 - i) }));
  return { spec: { template: { spec: { containers: [{ name: 'app', '$setElementOrder/env': order }] } } } };
}

/** Strategic merge patch of a primitive list: n finalizers added, or removed with `$deleteFromPrimitiveList`. */
export function finalizersPatch(n: number, mode: 'add' | 'delete'): Obj {
  const list = Array.from({ length: n }, (_, i) => finalizer(i));
  return { metadata: mode === 'add' ? { finalizers: list } : { '$deleteFromPrimitiveList/finalizers': list } };
}
