// CommitRequest-specific rules: asserting an author is a privilege (verb assert-author on the
// GitTarget, checked on every create including dryRun), and status.submitter is the
// authenticated creator, set by the server and never changed by anyone.
import { checkAssertAuthor, preserveSubmitter, stampSubmitter } from '../auth/index.js';
import type { Authorizer } from '../auth/types.js';
import * as status from '../api/status.js';
import type { ResourceHooks } from './registry.js';
import { DEFAULT_CLUSTER } from '../storage/types.js';

export function commitRequestHooks(authorizer: Authorizer): ResourceHooks {
  return {
    async beforeCreate(ctx, obj) {
      const spec = obj.spec as { author?: unknown; targetRef?: { name?: string } } | undefined;
      if (spec?.author !== undefined) {
        const ns = obj.metadata.namespace ?? '';
        // Only a kcp workspace is addressed by name; a plain deployment's SubjectAccessReview goes to
        // the hosting cluster's own endpoint, not /clusters/_/... (which it does not serve).
        const cluster = ctx.cluster === DEFAULT_CLUSTER ? undefined : ctx.cluster;
        const r = await checkAssertAuthor(authorizer, ctx.user, ns, spec.targetRef?.name ?? '', cluster);
        if (!r.allowed) throw status.forbidden(r.message, r.details);
      }
      stampSubmitter(obj as { status?: Record<string, unknown> }, ctx.user);
    },
    async beforeUpdate(_ctx, obj, old) {
      preserveSubmitter(obj as { status?: Record<string, unknown> }, old as { status?: Record<string, unknown> });
      if (obj.status && Object.keys(obj.status as object).length === 0) delete obj.status;
    },
  };
}
