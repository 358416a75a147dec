// Reading a collection the way list and watch both need it: resourceVersion and
// resourceVersionMatch semantics, the snapshot of a continue token, then label and field selectors.
// Its own module so that read.ts (list, which dispatches watches) and watch.ts import it one way.
import * as status from '../../api/status.js';
import type { KubeObject } from '../../model/object.js';
import { matches, type ListOptions } from '../list-options.js';
import type { HandlerContext } from './context.js';

/** Reads the collection honouring resourceVersion semantics, then filters by selectors. */
export async function listItems(
  h: HandlerContext,
  opts: ListOptions,
  cluster: string | undefined,
): Promise<{ items: KubeObject[]; keys: string[]; listRV: number }> {
  const rv = opts.resourceVersion;
  const consistency = rv === '0' && !opts.continueToken ? 'any' : 'consistent';
  let res;
  try {
    // Every page of a paginated list reads the snapshot of the first page.
    res = await h.registry.list(cluster, h.info.namespace, consistency, opts.continueToken?.rv);
  } catch (e) {
    if (opts.continueToken && e instanceof status.StatusError && e.status.code === 410) throw status.gone(status.CONTINUE_TOO_OLD);
    throw e;
  }
  if (rv && rv !== '0') {
    const want = Number(rv);
    if (want > res.resourceVersion) throw status.tooLargeResourceVersion(want, res.resourceVersion);
    // Exact at a past RV: the collection as it was then, rebuilt from the retained history (the
    // watch cache keeps it); older than the history is 410 Expired, as kube-apiserver answers.
    if (opts.resourceVersionMatch === 'Exact' && want < res.resourceVersion) res = await h.registry.list(cluster, h.info.namespace, 'consistent', want);
  }
  const def = h.registry.def;
  if (opts.labelSelector.empty && opts.fieldSelector.empty) return { items: res.items, keys: res.keys, listRV: res.resourceVersion };
  const items: KubeObject[] = [];
  const keys: string[] = [];
  res.items.forEach((o, i) => {
    if (!matches(def, opts, o)) return;
    items.push(o);
    keys.push(res.keys[i]!);
  });
  return { items, keys, listRV: res.resourceVersion };
}
