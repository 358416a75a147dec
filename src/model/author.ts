// How a Kubernetes identity becomes a commit author (docs/api.md#commitrequest, docs/attribution.md). One function
// for both ways an identity reaches a commit: a CommitRequest's submitter, and the user of the
// audit fact that produced a mirrored change. Display name and email come from the identity's
// configbutler.ai/claims/* extras when well-formed, else the username with an email derived from it.

/** A commit author or committer (the shape of the git engine's Person, without the time). */
export interface AuthorIdentity {
  name: string;
  email: string;
}

export const DISPLAY_NAME_EXTRA = 'configbutler.ai/claims/display-name';
export const EMAIL_EXTRA = 'configbutler.ai/claims/email';
const EMAIL_RE = /^[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\.[a-zA-Z]{2,}$/;
const UNSAFE_NAME = /[<>\x00-\x1f\x7f]/;

/**
 * The author of a change whose audit fact never arrived (or arrived too late). Deliberately not the
 * committer: a lost actor must not look like a commit nobody was meant to author.
 */
export const UNRESOLVED_AUTHOR: AuthorIdentity = { name: 'unknown (attribution unresolved)', email: 'attribution-unresolved@configbutler.invalid' };

/** noreply email of a username: lowercased, only [a-z0-9.-] kept, @noreply.cluster.local; an email stays one. */
export function derivedEmail(username: string): string {
  if (EMAIL_RE.test(username)) return username;
  const local = username.toLowerCase().replace(/[^a-z0-9.-]/g, '');
  return `${local || 'unknown-user'}@noreply.cluster.local`;
}

/** The author naming `username` (with the identity's extras, when it has them). */
export function authorOfIdentity(username: string, extra?: Record<string, string[] | undefined>): AuthorIdentity {
  const display = extra?.[DISPLAY_NAME_EXTRA]?.[0];
  const email = extra?.[EMAIL_EXTRA]?.[0];
  return {
    name: display && display.trim() && !UNSAFE_NAME.test(display) ? display.trim() : username,
    email: email && EMAIL_RE.test(email) ? email : derivedEmail(username),
  };
}
