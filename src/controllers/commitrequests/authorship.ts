// Who authors a CommitRequest's commit (design §3, upstream digest §4.3): the asserted author
// (spec.author, authorized at create), else the submitter — display name and email from the
// identity's configbutler.ai/claims/* extras when well-formed, else the username with an email
// derived from it. The committer is always the server identity and is not decided here.
import type { Person } from '../../git/index.js';
import type { KubeObject } from '../../storage/types.js';
import type { AuthorKind } from '../windows/record.js';

const DISPLAY_NAME = 'configbutler.ai/claims/display-name';
const EMAIL = 'configbutler.ai/claims/email';
const EMAIL_RE = /^[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\.[a-zA-Z]{2,}$/;
const UNSAFE_NAME = /[<>\x00-\x1f\x7f]/;

export interface Authorship {
  author: Person;
  kind: Exclude<AuthorKind, 'committer'>;
  /** AuthorAttributed condition reason. */
  reason: 'AssertedAuthor' | 'Submitter';
}

/** noreply email of a username: lowercased, only [a-z0-9.-] kept, @noreply.cluster.local. */
export function derivedEmail(username: string): string {
  if (EMAIL_RE.test(username)) return username;
  const local = username.toLowerCase().replace(/[^a-z0-9.-]/g, '');
  return `${local || 'unknown-user'}@noreply.cluster.local`;
}

export function authorshipOf(cr: KubeObject): Authorship | undefined {
  const spec = cr.spec as { author?: { name: string; email: string } } | undefined;
  if (spec?.author) return { author: { name: spec.author.name, email: spec.author.email }, kind: 'asserted', reason: 'AssertedAuthor' };
  const sub = (cr.status as { submitter?: { username?: string; extra?: Record<string, string[]> } } | undefined)?.submitter;
  if (!sub?.username) return undefined;
  const display = sub.extra?.[DISPLAY_NAME]?.[0];
  const email = sub.extra?.[EMAIL]?.[0];
  return {
    author: {
      name: display && display.trim() && !UNSAFE_NAME.test(display) ? display.trim() : sub.username,
      email: email && EMAIL_RE.test(email) ? email : derivedEmail(sub.username),
    },
    kind: 'submitter',
    reason: 'Submitter',
  };
}
