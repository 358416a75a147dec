// ListOptions of a list or watch request, validated the way apimachinery validates them, and the
// continue tokens of paginated lists.
import { notSupported, forbiddenField, type FieldError } from '../api/field-errors.js';
import * as status from '../api/status.js';
import type { ResourceDefinition } from '../api/resources.js';
import { parseFieldSelector, parseLabelSelector, type FieldSelector, type LabelSelector } from '../api/selectors.js';

export interface ListOptions {
  labelSelector: LabelSelector;
  fieldSelector: FieldSelector;
  limit: number;
  continueToken?: ContinueToken;
  resourceVersion?: string;
  resourceVersionMatch?: 'NotOlderThan' | 'Exact';
  watch: boolean;
  allowWatchBookmarks: boolean;
  sendInitialEvents: boolean;
  timeoutSeconds?: number;
}

export interface ContinueToken {
  /** RV of the first page. */
  rv: number;
  /** Sort key of the last item served. */
  start: string;
}

export function encodeContinue(t: ContinueToken): string {
  return Buffer.from(JSON.stringify({ v: 'meta.k8s.io/v1', rv: t.rv, start: t.start })).toString('base64url');
}

function decodeContinue(s: string): ContinueToken {
  try {
    const t = JSON.parse(Buffer.from(s, 'base64url').toString('utf8'));
    if (t?.v === 'meta.k8s.io/v1' && Number.isSafeInteger(t.rv) && t.rv >= 0 && typeof t.start === 'string') return { rv: t.rv, start: t.start };
  } catch {
    /* fall through */
  }
  throw status.badRequest('continue key is not valid: the token is malformed; start a new list without the continue parameter');
}


function bool(q: URLSearchParams, k: string): boolean {
  const v = (q.get(k) ?? '').toLowerCase();
  return v === 'true' || v === '1';
}

const selectorKeys = new WeakMap<ResourceDefinition, Set<string>>();

export function fieldSelectorKeys(def: ResourceDefinition): Set<string> {
  let keys = selectorKeys.get(def);
  if (!keys) {
    keys = new Set(['metadata.name', 'metadata.namespace', ...Object.keys(def.selectableFields)]);
    selectorKeys.set(def, keys);
  }
  return keys;
}

export function parseListOptions(q: URLSearchParams, def: ResourceDefinition): ListOptions {
  const errs: FieldError[] = [];
  const watch = bool(q, 'watch');
  const limitRaw = q.get('limit');
  let limit = 0;
  if (limitRaw !== null && limitRaw !== '') {
    if (!/^-?\d+$/.test(limitRaw)) throw status.badRequest(`limit: invalid value "${limitRaw}": must be an integer`);
    limit = Math.max(0, Number(limitRaw));
  }
  const rv = q.get('resourceVersion') ?? undefined;
  if (rv !== undefined && rv !== '' && !/^\d{1,15}$/.test(rv)) {
    throw status.badRequest(`invalid resource version "${rv}": must be a decimal number`);
  }
  const match = q.get('resourceVersionMatch') ?? '';
  const cont = q.get('continue') ?? '';
  const sendInitialEvents = q.has('sendInitialEvents') ? bool(q, 'sendInitialEvents') : false;
  if (match !== '') {
    if (match !== 'NotOlderThan' && match !== 'Exact') errs.push(notSupported('resourceVersionMatch', match, ['Exact', 'NotOlderThan']));
    // Lists only: a WatchList request (client-go informers) sends resourceVersionMatch without a resourceVersion.
    else if (!rv && !watch) errs.push(forbiddenField('resourceVersionMatch', 'resourceVersionMatch is forbidden unless resourceVersion is provided'));
    else if (match === 'Exact' && rv === '0') errs.push(forbiddenField('resourceVersionMatch', 'resourceVersionMatch "exact" is forbidden for resourceVersion "0"'));
    if (cont) errs.push(forbiddenField('resourceVersionMatch', 'resourceVersionMatch is forbidden when continue is provided'));
    if (watch && !q.has('sendInitialEvents')) errs.push(forbiddenField('resourceVersionMatch', 'resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided'));
  }
  if (q.has('sendInitialEvents')) {
    if (!watch) errs.push(forbiddenField('sendInitialEvents', 'sendInitialEvents is forbidden for list'));
    else if (match !== 'NotOlderThan') {
      errs.push(forbiddenField('resourceVersionMatch', "sendInitialEvents requires setting resourceVersionMatch to 'NotOlderThan'"));
    }
    if (watch && sendInitialEvents && !bool(q, 'allowWatchBookmarks')) {
      errs.push(forbiddenField('allowWatchBookmarks', 'allowWatchBookmarks must be true when sendInitialEvents is true'));
    }
  }
  if (cont && rv && rv !== '0') errs.push(forbiddenField('resourceVersion', 'specifying resource version is not allowed when using continue'));
  const ts = q.get('timeoutSeconds');
  let timeoutSeconds: number | undefined;
  if (ts !== null && ts !== '') {
    // A value that is not a number fails to decode, as in kube-apiserver: 400, like limit above.
    if (!/^\d+$/.test(ts)) throw status.badRequest(`timeoutSeconds: invalid value "${ts}": must be a non-negative integer`);
    timeoutSeconds = Number(ts);
  }
  if (errs.length) throw status.invalidOptions('ListOptions', errs);
  return {
    labelSelector: parseLabelSelector(q.get('labelSelector')),
    fieldSelector: parseFieldSelector(q.get('fieldSelector'), fieldSelectorKeys(def)),
    limit,
    continueToken: cont ? decodeContinue(cont) : undefined,
    resourceVersion: rv === '' ? undefined : rv,
    resourceVersionMatch: match === '' ? undefined : (match as 'NotOlderThan' | 'Exact'),
    watch,
    allowWatchBookmarks: bool(q, 'allowWatchBookmarks'),
    sendInitialEvents,
    timeoutSeconds,
  };
}

/** The field reader selectors match against. */
export function fieldReader(def: ResourceDefinition, obj: Record<string, any>): (field: string) => string | undefined {
  return (field) => {
    if (field === 'metadata.name') return obj.metadata?.name;
    if (field === 'metadata.namespace') return obj.metadata?.namespace;
    const f = def.selectableFields[field];
    return f ? f(obj) : undefined;
  };
}

export function matches(def: ResourceDefinition, opts: ListOptions, obj: Record<string, any>): boolean {
  if (!opts.labelSelector.empty && !opts.labelSelector.matches(obj.metadata?.labels)) return false;
  if (!opts.fieldSelector.empty && !opts.fieldSelector.matches(fieldReader(def, obj))) return false;
  return true;
}
