// status.submitter of a CommitRequest: the authenticated identity that created it, recorded by the
// server. Only the two claims the commit author is derived from are kept from `extra`; other extra
// values (credential ids, pod names) are not the object's business.
import type { UserInfo } from './types.js';

export const DISPLAY_NAME_CLAIM = 'configbutler.ai/claims/display-name';
export const EMAIL_CLAIM = 'configbutler.ai/claims/email';

export interface Submitter {
  username: string;
  uid?: string;
  groups: string[];
  extra?: Record<string, string[]>;
}

export function submitterFromUser(user: UserInfo): Submitter {
  const s: Submitter = { username: user.username, groups: [...user.groups] };
  if (user.uid) s.uid = user.uid;
  for (const k of [DISPLAY_NAME_CLAIM, EMAIL_CLAIM]) {
    const v = user.extra?.[k];
    if (v && v.length > 0) (s.extra ??= {})[k] = [...v];
  }
  return s;
}

type WithStatus = { status?: Record<string, unknown> & { submitter?: unknown } };

/**
 * On create: whatever the client sent as status.submitter is replaced by the caller's identity.
 * (Other status fields are the registry's business: it drops status on create as Kubernetes does.)
 */
export function stampSubmitter<T extends WithStatus>(obj: T, user: UserInfo): T {
  obj.status = { ...(obj.status ?? {}), submitter: submitterFromUser(user) };
  return obj;
}

/** On every update (main resource or status subresource): status.submitter keeps the stored value. */
export function preserveSubmitter<T extends WithStatus>(incoming: T, stored: WithStatus): T {
  const prev = stored.status?.submitter;
  const status = { ...(incoming.status ?? {}) };
  if (prev === undefined) delete status.submitter;
  else status.submitter = prev;
  incoming.status = status;
  return incoming;
}
