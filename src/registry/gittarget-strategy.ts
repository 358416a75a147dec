// GitTarget's strategy: a GitTarget carries its author's authority (src/auth/source-authority.ts).
// Every create, and every update of the main resource that changes what is read or which
// credentials are used, is authorized as the requesting user (after impersonation, also on
// dryRun): `list`/`watch` of each selected resource in each selected namespace of the default
// source, `get` of each referenced Secret. status.authority records that user; it is the server's
// to write (like a CommitRequest's status.submitter): what a client sends there is replaced on
// create and kept as stored on every update, the status subresource included.
import { gitTargets } from '../api/resources.js';
import * as status from '../api/status.js';
import { authorityOf, checkAuthority, gitTargetForbiddenMessage, readsChanged, requiredPermissions } from '../auth/source-authority.js';
import type { Authorizer, UserInfo } from '../auth/types.js';
import type { KubeObject } from '../model/object.js';
import { DEFAULT_CLUSTER } from '../storage/types.js';
import { specChanged } from './metadata.js';
import type { RequestContext } from './context.js';
import { definitionStrategy, type ResourceStrategy } from './strategy.js';

type Status = Record<string, unknown>;

function statusOf(obj: KubeObject): Status | undefined {
  return obj.status as Status | undefined;
}

/** Refuses (403) unless `user` holds every permission `obj`'s spec needs. */
async function authorize(authorizer: Authorizer, ctx: RequestContext, obj: KubeObject): Promise<void> {
  const ns = obj.metadata.namespace ?? '';
  // Only a kcp workspace is addressed by name; the default cluster's reviews go to the hosting cluster itself.
  const cluster = ctx.cluster === DEFAULT_CLUSTER ? undefined : ctx.cluster;
  const r = await checkAuthority(authorizer, ctx.user, requiredPermissions(obj.spec, ns), cluster);
  if (!r.allowed) {
    const name = obj.metadata.name ?? '';
    const message = name ? gitTargetForbiddenMessage(name, r.missing) : `gittargets.configbutler.ai is forbidden: ${r.missing}`;
    throw status.forbidden(message, { ...(name ? { name } : {}), group: 'configbutler.ai', kind: 'gittargets' });
  }
}

function stamp(obj: KubeObject, user: UserInfo): void {
  obj.status = { ...(statusOf(obj) ?? {}), authority: authorityOf(user) };
}

export function gitTargetStrategy(authorizer: Authorizer): ResourceStrategy {
  const base = definitionStrategy(gitTargets);
  return {
    ...base,
    async admitCreate(ctx, obj) {
      await authorize(authorizer, ctx, obj);
      stamp(obj, ctx.user);
    },
    prepareForUpdate(ctx, obj, old, subresource) {
      base.prepareForUpdate(ctx, obj, old, subresource);
      // No writer, controllers included, changes whose authority a GitTarget runs under except by
      // writing its spec (admitUpdate below).
      const prev = statusOf(old)?.authority;
      const next: Status = { ...(statusOf(obj) ?? {}) };
      if (prev === undefined) delete next.authority;
      else next.authority = prev;
      if (Object.keys(next).length === 0) delete obj.status;
      else obj.status = next;
    },
    async admitUpdate(ctx, obj, old, subresource) {
      if (subresource !== '') return;
      // A GitTarget stored without an authority (written before the server recorded one) takes
      // the authority of the first user who changes its spec.
      const adopt = statusOf(old)?.authority === undefined && specChanged(old, obj, ['status']);
      if (!adopt && !readsChanged(obj.spec, old.spec)) return;
      await authorize(authorizer, ctx, obj);
      stamp(obj, ctx.user);
    },
  };
}
