// CommitRequest's strategy: asserting an author is a privilege (verb assert-author on the
// GitTarget, checked on every create including dryRun), and status.submitter is the
// authenticated creator, set by the server and never changed by anyone.
import { commitRequests } from '../api/resources.js';
import { checkAssertAuthor, preserveSubmitter, stampSubmitter } from '../auth/index.js';
import type { Authorizer } from '../auth/types.js';
import * as status from '../api/status.js';
import { DEFAULT_CLUSTER } from '../storage/types.js';
import { definitionStrategy, type ResourceStrategy } from './strategy.js';
import type { CommitRequestSpec } from '../api/commitrequest.js';

type WithStatus = { status?: Record<string, unknown> };

export function commitRequestStrategy(authorizer: Authorizer): ResourceStrategy {
  const base = definitionStrategy(commitRequests);
  return {
    ...base,
    async admitCreate(ctx, obj) {
      const spec = obj.spec as CommitRequestSpec | undefined; // validated before admission
      if (spec?.author !== undefined) {
        const ns = obj.metadata.namespace ?? '';
        // Only a kcp workspace is addressed by name; a plain deployment's SubjectAccessReview goes to
        // the hosting cluster's own endpoint, not /clusters/_/... (which it does not serve).
        const cluster = ctx.cluster === DEFAULT_CLUSTER ? undefined : ctx.cluster;
        const r = await checkAssertAuthor(authorizer, ctx.user, ns, spec.targetRef?.name ?? '', cluster);
        if (!r.allowed) throw status.forbidden(r.message, r.details);
      }
      // After validation: the submitter is the server's to write, never part of what a client sends.
      stampSubmitter(obj as WithStatus, ctx.user);
    },
    prepareForUpdate(ctx, obj, old, subresource) {
      base.prepareForUpdate(ctx, obj, old, subresource);
      preserveSubmitter(obj as WithStatus, old as WithStatus);
      if (obj.status && Object.keys(obj.status as object).length === 0) delete obj.status;
    },
  };
}
