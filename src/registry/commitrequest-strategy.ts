// CommitRequest's strategy: naming a commit author is a privilege (verb assert-author on the
// GitTarget), whether by spec.author or by a person-naming trailer in spec.message
// (commit-message-policy.ts); both are checked on every write of the spec, dryRun included, and
// status.submitter is the authenticated creator, set by the server and never changed by anyone.
import { commitRequests } from '../api/resources.js';
import { checkAssertAuthor, preserveSubmitter, stampSubmitter } from '../auth/index.js';
import type { Authorizer } from '../auth/types.js';
import * as status from '../api/status.js';
import { DEFAULT_CLUSTER } from '../storage/types.js';
import { definitionStrategy, type ResourceStrategy } from './strategy.js';
import type { RequestContext } from './context.js';
import type { KubeObject } from '../model/object.js';
import type { CommitRequestSpec } from '../api/commitrequest.js';
import { DEFAULT_PERSON_TRAILERS, admitMessageTrailers } from './commit-message-policy.js';

type WithStatus = { status?: Record<string, unknown> };

export interface CommitRequestStrategyOptions {
  /** Trailer keys that name a person (--person-trailers adds to DEFAULT_PERSON_TRAILERS). */
  personTrailers?: readonly string[];
}

export function commitRequestStrategy(authorizer: Authorizer, opts: CommitRequestStrategyOptions = {}): ResourceStrategy {
  const base = definitionStrategy(commitRequests);
  const personTrailers = opts.personTrailers ?? DEFAULT_PERSON_TRAILERS;
  // Only a kcp workspace is addressed by name; a plain deployment's SubjectAccessReview goes to
  // the hosting cluster's own endpoint, not /clusters/_/... (which it does not serve).
  const clusterOf = (ctx: RequestContext) => (ctx.cluster === DEFAULT_CLUSTER ? undefined : ctx.cluster);
  const admitMessage = async (ctx: RequestContext, obj: KubeObject, spec: CommitRequestSpec | undefined) => {
    if (typeof spec?.message !== 'string') return;
    await admitMessageTrailers(authorizer, ctx.user, obj.metadata.namespace ?? '', spec.targetRef?.name ?? '', clusterOf(ctx), spec.message, personTrailers);
  };
  return {
    ...base,
    async admitCreate(ctx, obj) {
      const spec = obj.spec as CommitRequestSpec | undefined; // validated before admission
      if (spec?.author !== undefined) {
        const r = await checkAssertAuthor(authorizer, ctx.user, obj.metadata.namespace ?? '', spec.targetRef?.name ?? '', clusterOf(ctx));
        if (!r.allowed) throw status.forbidden(r.message, r.details);
      }
      await admitMessage(ctx, obj, spec);
      // After validation: the submitter is the server's to write, never part of what a client sends.
      stampSubmitter(obj as WithStatus, ctx.user);
    },
    async admitUpdate(ctx, obj, old, subresource) {
      // The spec is immutable (api/commitrequest.ts answers 422 first); should that ever change, a
      // rewritten message is its writer's and passes the same rule as at create.
      const spec = obj.spec as CommitRequestSpec | undefined;
      if (subresource === '' && spec?.message !== (old.spec as CommitRequestSpec | undefined)?.message) await admitMessage(ctx, obj, spec);
    },
    prepareForUpdate(ctx, obj, old, subresource) {
      base.prepareForUpdate(ctx, obj, old, subresource);
      preserveSubmitter(obj as WithStatus, old as WithStatus);
      if (obj.status && Object.keys(obj.status as object).length === 0) delete obj.status;
    },
  };
}
