// Impersonation as k8s.io/apiserver's WithImpersonation filter does it: Impersonate-User,
// Impersonate-Group (one per header line), Impersonate-Uid and Impersonate-Extra-<key>. Each
// requested attribute is authorized first (verb `impersonate` on users, serviceaccounts, groups,
// uids or userextras/<key>) through the configured authorizer; afterwards the request is the
// impersonated user's: its authorization, assert-author and status.submitter.
import type { Attributes, Authorizer, UserInfo } from './types.js';
import { ALL_AUTHENTICATED, ALL_UNAUTHENTICATED } from './union.js';

const USER = 'impersonate-user';
const GROUP = 'impersonate-group';
const UID = 'impersonate-uid';
const EXTRA_PREFIX = 'impersonate-extra-';
const AUTHN_GROUP = 'authentication.k8s.io';
const SA_PREFIX = 'system:serviceaccount:';

export type ImpersonationResult =
  | { kind: 'none' }
  | { kind: 'user'; user: UserInfo; /** header names to strip */ consumed: string[] }
  | { kind: 'forbidden'; attrs: Attributes; reason?: string }
  | { kind: 'bad'; message: string };

/** Go's url.PathUnescape; a malformed key is kept as sent. */
function unescapeExtraKey(k: string): string {
  try {
    return decodeURIComponent(k);
  } catch {
    return k;
  }
}

/** serviceaccount.SplitUsername: system:serviceaccount:<ns>:<name>, both non-empty, no more colons. */
function splitServiceAccount(username: string): [string, string] | undefined {
  if (!username.startsWith(SA_PREFIX)) return undefined;
  const parts = username.slice(SA_PREFIX.length).split(':');
  if (parts.length !== 2 || !parts[0] || !parts[1]) return undefined;
  return [parts[0], parts[1]];
}

interface Requested {
  user?: string;
  groups: string[];
  uid?: string;
  extra: Array<[string, string]>;
  consumed: string[];
}

function requested(rawHeaders: string[]): Requested {
  const r: Requested = { groups: [], extra: [], consumed: [] };
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!.toLowerCase();
    const value = rawHeaders[i + 1]!;
    if (name === USER) {
      if (r.user === undefined && value !== '') r.user = value; // http.Header.Get: the first value
    } else if (name === GROUP) {
      r.groups.push(value);
    } else if (name === UID) {
      if (r.uid === undefined && value !== '') r.uid = value;
    } else if (name.startsWith(EXTRA_PREFIX) && name.length > EXTRA_PREFIX.length) {
      r.extra.push([unescapeExtraKey(name.slice(EXTRA_PREFIX.length)), value]);
    } else {
      continue;
    }
    r.consumed.push(rawHeaders[i]!);
  }
  return r;
}

/**
 * Applies the request's impersonation headers for `requester`. `cluster` is the logical cluster
 * the request addressed (the impersonate checks are made there). Any authorizer error denies.
 */
export async function impersonate(authorizer: Authorizer, requester: UserInfo, rawHeaders: string[], cluster?: string): Promise<ImpersonationResult> {
  const want = requested(rawHeaders);
  if (want.consumed.length === 0) return { kind: 'none' };
  if (want.user === undefined) {
    const what = [...new Set(want.consumed.map((h) => h.toLowerCase().startsWith(EXTRA_PREFIX) ? 'Impersonate-Extra-*' : h.toLowerCase() === GROUP ? 'Impersonate-Group' : 'Impersonate-Uid'))];
    return { kind: 'bad', message: `requested impersonation (${what.join(', ')}) without impersonating a user: set Impersonate-User` };
  }
  const checks: Attributes[] = [];
  const check = (a: Omit<Attributes, 'user' | 'verb' | 'resourceRequest'>) => {
    const attrs: Attributes = { user: requester, verb: 'impersonate', resourceRequest: true, ...a };
    if (cluster) attrs.cluster = cluster;
    checks.push(attrs);
  };
  let username = want.user;
  let groups: string[] = [];
  const sa = splitServiceAccount(want.user);
  if (sa) {
    check({ apiGroup: '', apiVersion: 'v1', resource: 'serviceaccounts', namespace: sa[0], name: sa[1] });
    username = `${SA_PREFIX}${sa[0]}:${sa[1]}`;
    // A service account's groups are a fixed mapping; they are implied unless groups are requested.
    if (want.groups.length === 0) groups = ['system:serviceaccounts', `system:serviceaccounts:${sa[0]}`];
  } else {
    check({ apiGroup: '', apiVersion: 'v1', resource: 'users', name: want.user });
  }
  for (const g of want.groups) {
    check({ apiGroup: '', apiVersion: 'v1', resource: 'groups', name: g });
    groups.push(g);
  }
  const extra: Record<string, string[]> = {};
  for (const [k, v] of want.extra) {
    check({ apiGroup: AUTHN_GROUP, apiVersion: 'v1', resource: 'userextras', subresource: k, name: v });
    (extra[k] ??= []).push(v);
  }
  if (want.uid !== undefined) check({ apiGroup: AUTHN_GROUP, apiVersion: 'v1', resource: 'uids', name: want.uid });

  for (const attrs of checks) {
    let decision: string;
    let reason: string | undefined;
    try {
      ({ decision, reason } = await authorizer.authorize(attrs));
    } catch (e) {
      return { kind: 'forbidden', attrs, reason: `the authorization check could not be made: ${(e as Error).message}` };
    }
    if (decision !== 'allow') return { kind: 'forbidden', attrs, reason };
  }
  const implied = username === 'system:anonymous' ? ALL_UNAUTHENTICATED : ALL_AUTHENTICATED;
  if (!groups.includes(implied)) groups.push(implied);
  const user: UserInfo = { username, groups };
  if (want.uid !== undefined) user.uid = want.uid;
  if (Object.keys(extra).length > 0) user.extra = extra;
  return { kind: 'user', user, consumed: want.consumed };
}
