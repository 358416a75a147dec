// The assert-author check: naming a commit author other than yourself is a privilege like
// `impersonate`, so it is authorized on its own verb and any failure to decide denies.
import type { Attributes, Authorizer, UserInfo } from './types.js';
import { forbiddenDetails, forbiddenMessage, goQuote } from './messages.js';

export const ASSERT_AUTHOR_VERB = 'assert-author';
export const API_GROUP = 'configbutler.ai';
export const API_VERSION = 'v1alpha1';

export type AssertAuthorResult =
  | { allowed: true }
  | { allowed: false; message: string; details: { name?: string; group?: string; kind?: string } };

/** The Role rule that grants asserting authors on one GitTarget, as users paste it. */
export function assertAuthorRule(targetName: string): string {
  return `apiGroups: ["${API_GROUP}"], resources: ["gittargets"], resourceNames: [${goQuote(targetName)}], verbs: ["${ASSERT_AUTHOR_VERB}"]`;
}

export function assertAuthorAttributes(user: UserInfo, namespace: string, targetName: string, cluster?: string): Attributes {
  const a: Attributes = {
    user, verb: ASSERT_AUTHOR_VERB, resourceRequest: true, namespace,
    apiGroup: API_GROUP, apiVersion: API_VERSION, resource: 'gittargets', name: targetName,
  };
  if (cluster) a.cluster = cluster;
  return a;
}

/**
 * Call before creating (also with dryRun) a CommitRequest whose spec.author is set, or whose
 * message has a trailer naming someone else (registry/commit-message-policy.ts). A denial's
 * message names the user, the GitTarget, what needed the grant (`purpose`) and the rule that would
 * grant it; an authorizer error or a missing target name denies with a message saying why the
 * check could not be made.
 */
export async function checkAssertAuthor(
  authorizer: Authorizer, user: UserInfo, namespace: string, targetName: string, cluster?: string,
  purpose = `setting spec.author on a CommitRequest for GitTarget ${goQuote(targetName)}`,
): Promise<AssertAuthorResult> {
  const attrs = assertAuthorAttributes(user, namespace, targetName, cluster);
  const deny = (reason: string): AssertAuthorResult => ({ allowed: false, message: forbiddenMessage(attrs, reason), details: forbiddenDetails(attrs) });
  if (!namespace || !targetName) {
    return deny('the authorization check could not be made: spec.targetRef.name and the namespace are required to assert an author');
  }
  let decision: string;
  let reason: string | undefined;
  try {
    const r = await authorizer.authorize(attrs);
    decision = r.decision;
    reason = r.reason;
  } catch (e) {
    return deny(`the authorization check could not be made: ${(e as Error).message || String(e)}`);
  }
  if (decision === 'allow') return { allowed: true };
  const grant = `${purpose} requires a Role rule ${assertAuthorRule(targetName)}`;
  return deny(reason ? `${reason}; ${grant}` : grant);
}
