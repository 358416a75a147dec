// Who authors a CommitRequest's commit (docs/api.md#commitrequest, docs/attribution.md): the asserted author
// (spec.author, authorized at create), else the submitter — named by the same rules as an audited
// user (model/author.ts). The committer is always the server identity and is not decided here.
import { authorOfIdentity } from '../../model/author.js';
import { windowKeyOfUser } from '../../attribution/join.js';
import type { Person } from '../../git/index.js';
import type { KubeObject } from '../../storage/types.js';
import type { AuthorKind } from '../windows/record.js';
import type { CommitRequestSpec } from '../../api/commitrequest.js';

export { derivedEmail } from '../../model/author.js';

export interface Authorship {
  author: Person;
  kind: Extract<AuthorKind, 'asserted' | 'submitter'>;
  /** AuthorAttributed condition reason. */
  reason: 'AssertedAuthor' | 'Submitter';
  /**
   * The author key of the windows this request may claim besides unattributed ones: its
   * submitter's. An asserted author names the commit; it does not let the request claim someone
   * else's edits (one user's request never finalizes another user's work).
   */
  claims?: string;
}

function submitterOf(cr: KubeObject): { username?: string; extra?: Record<string, string[]> } | undefined {
  return (cr.status as { submitter?: { username?: string; extra?: Record<string, string[]> } } | undefined)?.submitter;
}

export function authorshipOf(cr: KubeObject): Authorship | undefined {
  const spec = cr.spec as CommitRequestSpec | undefined;
  const sub = submitterOf(cr);
  const claims = sub?.username ? windowKeyOfUser(sub.username) : undefined;
  if (spec?.author) return { author: { name: spec.author.name, email: spec.author.email }, kind: 'asserted', reason: 'AssertedAuthor', claims };
  if (!sub?.username) return undefined;
  return { author: authorOfIdentity(sub.username, sub.extra), kind: 'submitter', reason: 'Submitter', claims };
}
