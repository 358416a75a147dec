// RepositoryScan's strategy: a review, answered and never stored (strategy.review). Authorized like
// a GitTarget's use of credentials: naming a Secret needs `get` on it for the requester (the
// server would otherwise read, for them, a Secret they cannot read), and any failure to decide
// denies. The scan itself runs in the git engine's worker (the served face of src/analyzer/).
import { repositoryScans } from '../api/resources.js';
import type { Attributes, Authorizer } from '../auth/types.js';
import { forbiddenDetails, forbiddenMessage } from '../auth/messages.js';
import * as status from '../api/status.js';
import type { ScanReport } from '../analyzer/types.js';
import type { KubeObject } from '../model/object.js';
import { DEFAULT_CLUSTER } from '../storage/types.js';
import type { RequestContext } from './context.js';
import { definitionStrategy, type ResourceStrategy } from './strategy.js';

/** Runs the scan a RepositoryScan asks for; throws a StatusError when the repository cannot be read. */
export type RunScan = (ctx: RequestContext, scan: KubeObject) => Promise<ScanReport>;

export function repositoryScanStrategy(authorizer: Authorizer, run: RunScan): ResourceStrategy {
  const base = definitionStrategy(repositoryScans);
  return {
    ...base,
    async admitCreate(ctx, obj) {
      const secret = (obj.spec as { repository?: { secretRef?: { name?: string } } } | undefined)?.repository?.secretRef?.name;
      if (!secret) return;
      const attrs: Attributes = { user: ctx.user, verb: 'get', resourceRequest: true, namespace: obj.metadata.namespace ?? '', apiGroup: '', apiVersion: 'v1', resource: 'secrets', name: secret };
      if (ctx.cluster !== DEFAULT_CLUSTER) attrs.cluster = ctx.cluster;
      let decision: string;
      let reason: string | undefined;
      try {
        ({ decision, reason } = await authorizer.authorize(attrs));
      } catch (e) {
        decision = 'deny';
        reason = `the authorization check could not be made: ${(e as Error).message || String(e)}`;
      }
      if (decision !== 'allow') {
        const why = `a RepositoryScan that names spec.repository.secretRef uses that Secret: the requester must be allowed to get it${reason ? ` (${reason})` : ''}`;
        throw status.forbidden(forbiddenMessage(attrs, why), forbiddenDetails(attrs));
      }
    },
    async review(ctx, obj) {
      const report = await run(ctx, obj);
      const { metadata, apiVersion, kind, spec } = obj;
      return { apiVersion, kind, metadata, spec, status: report } as KubeObject;
    },
  };
}
