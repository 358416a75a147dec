// Assembles the authorizer: system:masters and the always-allowed paths first (never asked of a
// remote service, so probes keep working while the hosting cluster is down), then the mode's own.
import type { AuthzOptions } from './options.js';
import type { Attributes, AuthorizationResult, Authorizer, RuleResolver, SubjectRules } from './types.js';
import { loggerOf, type AuthDeps } from './deps.js';
import { RBACFileAuthorizer } from './rbac-file.js';
import { DelegatedAuthorizer } from './delegated.js';
import { PUBLIC_INFO_PATHS } from './bootstrap-policy.js';
import { KcpShardAuthorizer } from './kcp-shard.js';
import { APIBindingAuthorizer } from './kcp-apibinding.js';
import { HostingClient } from './hosting.js';

export const SYSTEM_MASTERS = 'system:masters';

/** Exact match, or prefix match for an entry ending in `*` (as --authorization-always-allow-paths). */
export function pathMatches(patterns: string[], path: string): boolean {
  for (const p of patterns) {
    if (p.endsWith('*') ? path.startsWith(p.slice(0, -1)) : p === path) return true;
  }
  return false;
}

export const alwaysAllow: Authorizer = {
  async authorize() {
    return { decision: 'allow' };
  },
};

/** Why a wildcard request was denied (also the hint how to grant it). */
export const WILDCARD_DENIED = 'access across all logical clusters (/clusters/*) needs membership in system:masters or in a group named by --wildcard-cluster-groups';

export class PrivilegedUnionAuthorizer implements Authorizer {
  /**
   * @param wildcardGroups groups allowed every request across all logical clusters (/clusters/*);
   *   nobody else is: such a request is never derived from a grant inside one cluster.
   * @param wildcardOpen true only in AlwaysAllow mode (development).
   */
  constructor(
    private readonly alwaysAllowPaths: string[],
    private readonly inner: Authorizer,
    private readonly wildcardGroups: string[] = [],
    private readonly wildcardOpen = false,
  ) {}

  authorize(attrs: Attributes): Promise<AuthorizationResult> {
    if (attrs.user.groups.includes(SYSTEM_MASTERS)) return ALLOWED_MASTERS;
    if (!attrs.resourceRequest && attrs.path !== undefined && pathMatches(this.alwaysAllowPaths, attrs.path)) {
      return ALLOWED_PATH;
    }
    if (attrs.cluster === '*' && !this.wildcardOpen) {
      const g = this.wildcardGroups.find((x) => attrs.user.groups.includes(x));
      return Promise.resolve(g
        ? { decision: 'allow', reason: `member of ${g} (--wildcard-cluster-groups)` }
        : { decision: 'deny', reason: WILDCARD_DENIED });
    }
    return this.inner.authorize(attrs);
  }
}

// Shared settled promises: the hot path allocates nothing for these decisions.
const ALLOWED_MASTERS = Promise.resolve<AuthorizationResult>({ decision: 'allow', reason: 'member of system:masters' });
const ALLOWED_PATH = Promise.resolve<AuthorizationResult>({ decision: 'allow', reason: 'always-allowed path' });

export interface BuiltAuthorization {
  authorizer: Authorizer;
  alwaysAllowPaths: string[];
  /**
   * Non-resource paths an unauthenticated client may ask the authorizer about (as
   * system:anonymous); every other anonymous request is 401.
   */
  anonymousPaths: string[];
  /**
   * What a user may do, for SelfSubjectRulesReview: RBAC lists its rules; AlwaysAllow everything;
   * Delegated cannot list (incomplete, as kube-apiserver answers for webhook authorizers).
   */
  rules: RuleResolver;
  close(): void;
}

/** kube's rules for "everything" (AlwaysAllow, system:masters). */
export const ALL_RULES: SubjectRules = Object.freeze({
  resourceRules: [{ verbs: ['*'], apiGroups: ['*'], resources: ['*'] }],
  nonResourceRules: [{ verbs: ['*'], nonResourceURLs: ['*'] }],
  incomplete: false,
}) as SubjectRules;
const UNLISTABLE: SubjectRules = Object.freeze({ resourceRules: [], nonResourceRules: [], incomplete: true }) as SubjectRules;

export async function buildAuthorization(opts: AuthzOptions, deps: AuthDeps = {}): Promise<BuiltAuthorization> {
  const logger = loggerOf(deps);
  let inner: Authorizer;
  let closeInner = (): void => {};
  let anonymousPaths: string[] = [];
  let rules: RuleResolver = { rulesFor: () => UNLISTABLE };
  switch (opts.mode) {
    case 'AlwaysAllow':
      logger.warn('authorization: --authorization-mode=AlwaysAllow lets every authenticated request do anything; use it for development only');
      inner = alwaysAllow;
      rules = { rulesFor: () => ALL_RULES };
      break;
    case 'RBAC': {
      if (!opts.policyFile) throw new Error('--authorization-policy-file: required with --authorization-mode=RBAC');
      const rbac = await RBACFileAuthorizer.start(opts.policyFile, opts.policyPollIntervalMs, logger, { bootstrapRoles: opts.bootstrapRoles });
      if (opts.bootstrapRoles) anonymousPaths = [...PUBLIC_INFO_PATHS];
      inner = rbac;
      rules = rbac;
      closeInner = () => rbac.close();
      break;
    }
    case 'Delegated': {
      if (!opts.hosting) throw new Error('--authorization-mode: Delegated needs a hosting cluster: set --authorization-kubeconfig or --kubeconfig, or run in a cluster');
      const d = await DelegatedAuthorizer.create(opts.hosting, { allowTTLMs: opts.allowCacheTTLMs, denyTTLMs: opts.denyCacheTTLMs, now: deps.now });
      inner = d;
      closeInner = () => d.close();
      break;
    }
    default:
      throw new Error(`--authorization-mode: unknown mode ${String((opts as { mode: unknown }).mode)}`);
  }
  let authorizer: Authorizer = new PrivilegedUnionAuthorizer(opts.alwaysAllowPaths, inner, opts.wildcardClusterGroups ?? [], opts.mode === 'AlwaysAllow');
  let closeBindings = (): void => {};
  if (opts.kcpRequireAPIBinding) {
    if (!opts.hosting) throw new Error('--kcp-require-apibinding: needs kcp to ask (--kubeconfig or --authorization-kubeconfig)');
    const client = await HostingClient.create(opts.hosting);
    closeBindings = () => client.close();
    // Outside the union: no grant, not even AlwaysAllow, makes an unbound workspace ours.
    authorizer = new APIBindingAuthorizer(client, opts.kcpRequireAPIBinding, authorizer, { now: deps.now });
  }
  return {
    authorizer: withKcpShards(opts, authorizer),
    alwaysAllowPaths: [...opts.alwaysAllowPaths],
    anonymousPaths,
    rules,
    close: () => {
      closeInner();
      closeBindings();
    },
  };
}

/** Shard identities are checked outside the union: not even system:masters lets them assert an author. */
function withKcpShards(opts: AuthzOptions, authorizer: Authorizer): Authorizer {
  const shards = opts.kcpShardUsers ?? [];
  return shards.length > 0 ? new KcpShardAuthorizer(shards, authorizer) : authorizer;
}
