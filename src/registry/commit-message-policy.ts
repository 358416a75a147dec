// Who a CommitRequest's message may name. GitHub, GitLab and Gitea show a commit's
// `Co-authored-by:` trailer as a co-author, and `Signed-off-by:` and its kin name people too, so a
// trailer naming someone is an asserted author like spec.author: it needs the same verb
// (assert-author on the GitTarget, auth/assert-author.ts), unless it names the submitter as the
// server derives the submitter's commit identity (model/author.ts). Trailers are found as git
// finds them (api/commit-trailers.ts), with and without the "---" divider, so no reading of the
// commit shows a person the server did not verify. docs/security.md#trailers-name-people.
import { allTrailerReadings, type Trailer } from '../api/commit-trailers.js';
import { authorOfIdentity, type AuthorIdentity } from '../model/author.js';
import { checkAssertAuthor } from '../auth/index.js';
import { goQuote } from '../auth/messages.js';
import type { Authorizer, UserInfo } from '../auth/types.js';
import * as status from '../api/status.js';

/** Trailer keys that name a person; compared without regard to case, as git compares keys. */
export const DEFAULT_PERSON_TRAILERS: readonly string[] = [
  'Co-authored-by', 'Signed-off-by', 'Reviewed-by', 'Acked-by', 'Tested-by', 'Reported-by', 'Suggested-by', 'Helped-by',
];

// A key git can read as a trailer's (commit-trailers.ts findSeparator): letters, digits and "-".
const TRAILER_KEY = /^[A-Za-z0-9-]+$/;

/** --person-trailers: comma-separated keys added to DEFAULT_PERSON_TRAILERS. Throws `fail(message)` naming a bad key. */
export function parsePersonTrailers(flag: string | undefined, fail: (message: string) => Error = (m) => new Error(m)): string[] {
  const extra = (flag ?? '').split(',').map((k) => k.trim()).filter((k) => k !== '');
  for (const k of extra) {
    if (!TRAILER_KEY.test(k)) throw fail(`${JSON.stringify(k)} is not a trailer key git reads (letters, digits and "-" only)`);
  }
  return [...DEFAULT_PERSON_TRAILERS, ...extra];
}

/** "Name <email>" exactly the identity's (the email without regard to case). */
function namesIdentity(value: string, who: AuthorIdentity): boolean {
  const m = /^(.*?)\s*<([^<>]*)>$/.exec(value);
  return !!m && m[1] === who.name && m[2]!.toLowerCase() === who.email.toLowerCase();
}

/** The person-naming trailers of `message` that do not name `user` themselves, in message order. */
export function foreignPersonTrailers(message: string, user: UserInfo, personKeys: readonly string[]): Trailer[] {
  const keys = new Set(personKeys.map((k) => k.toLowerCase()));
  const self = authorOfIdentity(user.username, user.extra);
  return allTrailerReadings(message).filter((t) => keys.has(t.key.toLowerCase()) && !namesIdentity(t.value, self));
}

function shown(t: Trailer): string {
  const s = `${t.key}: ${t.value}`;
  return goQuote(s.length > 200 ? `${s.slice(0, 200)}...` : s);
}

/**
 * Throws 403 Forbidden when `message` has a trailer naming someone other than `user` and the
 * authorizer does not grant `user` assert-author on GitTarget `target` (an authorizer error denies).
 */
export async function admitMessageTrailers(
  authorizer: Authorizer, user: UserInfo, namespace: string, target: string, cluster: string | undefined,
  message: string, personKeys: readonly string[],
): Promise<void> {
  const foreign = foreignPersonTrailers(message, user, personKeys);
  if (foreign.length === 0) return;
  const more = foreign.length > 1 ? ` (and ${foreign.length - 1} more)` : '';
  const purpose = `the trailer ${shown(foreign[0]!)}${more} in spec.message names someone other than the submitter; a person-naming trailer in a CommitRequest for GitTarget ${goQuote(target)}`;
  const r = await checkAssertAuthor(authorizer, user, namespace, target, cluster, purpose);
  if (!r.allowed) throw status.forbidden(r.message, r.details);
}
