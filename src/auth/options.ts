// Authentication and authorization flags. Names and defaults follow k8s.io/apiserver's delegating
// options so that operators can reuse what they know from metrics-server or the sample-apiserver.

import { FILE_RESYNC_MS } from './filewatch.js';

export type AuthorizationMode = 'Delegated' | 'RBAC' | 'AlwaysAllow';

export interface RequestHeaderOptions {
  /** PEM file of the front-proxy CA; undefined = front-proxy authentication off (unless read from the hosting cluster). */
  clientCAFile?: string;
  /** CNs allowed to act as front proxy; empty = any certificate from the requestheader CA. */
  allowedNames: string[];
  usernameHeaders: string[];
  groupHeaders: string[];
  extraHeadersPrefix: string[];
  uidHeaders: string[];
  /**
   * CNs of kcp shard client certificates (--kcp-shard-users). Such a certificate from the
   * requestheader CA without a forwarded X-Remote-User authenticates as the shard itself (CN = user,
   * O = groups) instead of anonymous; see kcp-shard.ts.
   */
  shardUsers?: string[];
}

/** Where the hosting cluster is: an explicit kubeconfig, or in-cluster when running in a Pod. */
export interface HostingClusterOptions {
  kubeconfig?: string;
  /** Use the Pod's service account when no kubeconfig is given and KUBERNETES_SERVICE_HOST is set. */
  inCluster: boolean;
  /** Per-call timeout to the hosting cluster. */
  timeoutMs: number;
  /** How long a keep-alive connection to the hosting cluster is kept idle (default HOSTING_IDLE_SOCKET_MS). */
  idleSocketMs?: number;
  /**
   * kcp's base URL (--kcp-server-url): a logical cluster's calls go to `<this>/clusters/<name>/...`
   * with the kubeconfig's TLS material and credentials. Undefined = the kubeconfig's server.
   */
  kcpServerURL?: string;
}

/** The APIExport a logical cluster must bind (--kcp-require-apibinding). */
export interface RequiredAPIBinding {
  /** Workspace path of the export (spec.reference.export.path); undefined = any path. */
  path?: string;
  name: string;
}

export interface AuthnOptions {
  clientCAFile?: string;
  requestHeader: RequestHeaderOptions;
  /** True when any --requestheader-* flag was set: then the ConfigMap is not consulted for them. */
  requestHeaderFromFlags: boolean;
  /** Hosting cluster for TokenReview and the extension-apiserver-authentication ConfigMap; undefined = none. */
  hosting?: HostingClusterOptions;
  /** Do not read kube-system/extension-apiserver-authentication (--authentication-skip-lookup). */
  skipLookup: boolean;
  /** Start even when the ConfigMap cannot be read (--authentication-tolerate-lookup-failure). */
  tolerateLookupFailure: boolean;
  tokenCacheTTLMs: number;
  /** Audiences sent in TokenReview.spec.audiences; empty = kube-apiserver's own audiences. */
  apiAudiences: string[];
}

export interface AuthzOptions {
  mode: AuthorizationMode;
  hosting?: HostingClusterOptions;
  allowCacheTTLMs: number;
  denyCacheTTLMs: number;
  alwaysAllowPaths: string[];
  policyFile?: string;
  /** How often the RBAC policy file is stat'ed for changes. */
  policyPollIntervalMs: number;
  /** RBAC mode: kube-apiserver's bootstrap discovery roles (--rbac-bootstrap-roles, default true). */
  bootstrapRoles?: boolean;
  /** Groups allowed requests across all logical clusters (/clusters/*), besides system:masters. */
  wildcardClusterGroups?: string[];
  /** kcp shard identities (--kcp-shard-users): never allowed to assert an author. */
  kcpShardUsers?: string[];
  /** Refuse requests for a logical cluster without a bound APIBinding to this export (--kcp-require-apibinding). */
  kcpRequireAPIBinding?: RequiredAPIBinding;
}

export const DEFAULT_ALWAYS_ALLOW_PATHS = ['/healthz', '/livez', '/readyz', '/version'];
export const DEFAULT_REQUESTHEADER: Omit<RequestHeaderOptions, 'clientCAFile'> = Object.freeze({
  allowedNames: [],
  usernameHeaders: ['X-Remote-User'],
  groupHeaders: ['X-Remote-Group'],
  extraHeadersPrefix: ['X-Remote-Extra-'],
  uidHeaders: [],
});
export const DEFAULT_CACHE_TTL_MS = 10_000;
export const HOSTING_TIMEOUT_MS = 10_000;

export interface FlagDef {
  name: string;
  type: 'string';
  description: string;
  default?: string;
}

/**
 * Flags this module reads. `--kubeconfig` is deliberately not listed: the CLI owns it (the
 * authentication and authorization kubeconfigs fall back to it); pass its value as `kubeconfig`.
 */
export const AUTH_FLAGS: FlagDef[] = [
  { name: 'client-ca-file', type: 'string', description: 'PEM bundle of CAs; a client certificate signed by one authenticates as its CN with its O values as groups.' },
  { name: 'requestheader-client-ca-file', type: 'string', description: 'PEM bundle of the front-proxy CA. X-Remote-* headers are believed only over a client certificate that chains to it.' },
  { name: 'requestheader-allowed-names', type: 'string', description: 'Comma-separated CNs allowed to act as front proxy; empty allows any certificate from the requestheader CA.', default: '' },
  { name: 'requestheader-username-headers', type: 'string', description: 'Comma-separated headers carrying the user name (first non-empty wins).', default: 'X-Remote-User' },
  { name: 'requestheader-group-headers', type: 'string', description: 'Comma-separated headers carrying groups, one group per header line.', default: 'X-Remote-Group' },
  { name: 'requestheader-extra-headers-prefix', type: 'string', description: 'Comma-separated header prefixes carrying user extra (key = rest of the name, unescaped).', default: 'X-Remote-Extra-' },
  { name: 'requestheader-uid-headers', type: 'string', description: 'Comma-separated headers carrying the user UID; none by default (UIDs are not trusted unless named).', default: '' },
  { name: 'authentication-kubeconfig', type: 'string', description: 'kubeconfig of the hosting cluster for TokenReview and the extension-apiserver-authentication ConfigMap (default: --kubeconfig, then in-cluster).' },
  { name: 'authentication-token-webhook-cache-ttl', type: 'string', description: 'How long TokenReview answers are cached.', default: '10s' },
  { name: 'authentication-skip-lookup', type: 'string', description: 'true: do not read kube-system/extension-apiserver-authentication.', default: 'false' },
  { name: 'authentication-tolerate-lookup-failure', type: 'string', description: 'true: start even if kube-system/extension-apiserver-authentication cannot be read.', default: 'false' },
  { name: 'api-audiences', type: 'string', description: 'Comma-separated audiences sent in TokenReviews; empty uses the hosting cluster\'s own.', default: '' },
  { name: 'authorization-mode', type: 'string', description: 'Delegated (SubjectAccessReview to the hosting cluster), RBAC (local policy file) or AlwaysAllow (development only).', default: 'Delegated' },
  { name: 'authorization-kubeconfig', type: 'string', description: 'kubeconfig of the hosting cluster for SubjectAccessReview (default: --kubeconfig, then in-cluster).' },
  { name: 'authorization-webhook-cache-authorized-ttl', type: 'string', description: 'How long an allowed SubjectAccessReview answer is cached.', default: '10s' },
  { name: 'authorization-webhook-cache-unauthorized-ttl', type: 'string', description: 'How long a denied SubjectAccessReview answer is cached.', default: '10s' },
  { name: 'authorization-always-allow-paths', type: 'string', description: 'Comma-separated non-resource paths served without authorization (a trailing * makes a prefix).', default: DEFAULT_ALWAYS_ALLOW_PATHS.join(',') },
  { name: 'authorization-policy-file', type: 'string', description: 'YAML stream of rbac.authorization.k8s.io/v1 Roles, ClusterRoles and bindings (RBAC mode); re-read when it changes.' },
  { name: 'wildcard-cluster-groups', type: 'string', description: 'Comma-separated groups allowed requests across all logical clusters (/clusters/*), e.g. a kcp shard\'s identity; besides system:masters nobody else is (never derived from a grant inside one cluster). Ignored in AlwaysAllow mode.', default: '' },
  { name: 'kcp-shard-users', type: 'string', description: 'Comma-separated CNs of kcp shard client certificates (from the requestheader CA). A shard request without X-Remote-User authenticates as the shard (CN = user, O = groups), is the submitter, and may never assert an author.', default: '' },
  { name: 'kcp-server-url', type: 'string', description: 'kcp\'s base URL (no /clusters/ path). TokenReviews and SubjectAccessReviews for a request to /clusters/<name>/ go to <url>/clusters/<name>/, and a GitTarget in logical cluster <name> mirrors workspace <name> and reads its kubeconfig Secrets there, all with the credentials of --kubeconfig (or --authentication-kubeconfig, --authorization-kubeconfig). Default: the kubeconfig\'s server.' },
  { name: 'kcp-require-apibinding', type: 'string', description: 'APIExport as <workspace path>:<name> (e.g. root:providers:reverser:configbutler.ai; a bare <name> matches any path). Requests for a logical cluster without a Bound APIBinding to it are refused (403); checked in the workspace, cached 10 s, refused when the check fails.', default: '' },
  { name: 'rbac-bootstrap-roles', type: 'string', description: 'RBAC mode: true adds kube-apiserver\'s bootstrap roles system:discovery and system:basic-user (authenticated users) and system:public-info-viewer (also unauthenticated clients); false leaves them out.', default: 'true' },
];

/** Parses a Go-style duration ("10s", "1m30s", "500ms", "0"). */
export function parseDuration(text: string): number | undefined {
  const t = text.trim();
  if (t === '0') return 0;
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h)/gy;
  const unit: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
  let total = 0;
  let m: RegExpExecArray | null;
  let pos = 0;
  while ((m = re.exec(t)) !== null) {
    total += Number(m[1]) * unit[m[2]!]!;
    pos = re.lastIndex;
  }
  return pos === t.length && pos > 0 ? Math.round(total) : undefined;
}

export class AuthFlagError extends Error {}

function list(v: string | undefined, dflt: string[]): string[] {
  if (v === undefined) return [...dflt];
  return v.split(',').map((s) => s.trim()).filter((s) => s.length > 0);
}

function bool(values: Record<string, string | undefined>, name: string): boolean {
  const v = values[name];
  if (v === undefined || v === '' || v === 'false') return false;
  if (v === 'true') return true;
  throw new AuthFlagError(`--${name}: expected true or false, got ${JSON.stringify(v)}`);
}

function duration(values: Record<string, string | undefined>, name: string): number {
  const v = values[name];
  if (v === undefined || v === '') return DEFAULT_CACHE_TTL_MS;
  const ms = parseDuration(v);
  if (ms === undefined) throw new AuthFlagError(`--${name}: invalid duration ${JSON.stringify(v)} (use e.g. 10s, 500ms, 1m)`);
  return ms;
}

function hosting(kubeconfig: string | undefined, kcpServerURL: string | undefined): HostingClusterOptions | undefined {
  const inCluster = !kubeconfig && !!process.env.KUBERNETES_SERVICE_HOST;
  if (!kubeconfig && !inCluster) return undefined;
  return { kubeconfig: kubeconfig || undefined, inCluster, timeoutMs: HOSTING_TIMEOUT_MS, ...(kcpServerURL ? { kcpServerURL } : {}) };
}

/** --kcp-server-url: an http(s) base URL; a workspace path in it would be prefixed to every other workspace's. */
export function parseKcpServerURL(v: string | undefined): string | undefined {
  if (v === undefined || v.trim() === '') return undefined;
  let u: URL;
  try {
    u = new URL(v.trim());
  } catch {
    throw new AuthFlagError(`--kcp-server-url: ${JSON.stringify(v)} is not a URL`);
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') throw new AuthFlagError(`--kcp-server-url: ${JSON.stringify(v)} must start with https:// or http://`);
  if (u.search || u.hash || u.username || u.password) throw new AuthFlagError(`--kcp-server-url: ${JSON.stringify(v)} must not carry a query, fragment or credentials`);
  if (/\/clusters(\/|$)/.test(u.pathname)) {
    throw new AuthFlagError(`--kcp-server-url: ${JSON.stringify(v)} names a workspace; give kcp's base URL (without /clusters/...): each request's workspace is appended`);
  }
  return u.toString().replace(/\/$/, '');
}

/** --kcp-require-apibinding: `<path>:<name>` or `<name>`; the name is the part after the last colon. */
export function parseRequiredAPIBinding(v: string | undefined): RequiredAPIBinding | undefined {
  if (v === undefined || v.trim() === '') return undefined;
  const t = v.trim();
  const i = t.lastIndexOf(':');
  const path = i < 0 ? undefined : t.slice(0, i);
  const name = t.slice(i + 1);
  const dns = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
  if (!dns.test(name) || (path !== undefined && !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(:[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/.test(path))) {
    throw new AuthFlagError(`--kcp-require-apibinding: ${JSON.stringify(v)} is not <workspace path>:<export name> (e.g. root:providers:reverser:configbutler.ai)`);
  }
  return path === undefined ? { name } : { path, name };
}

/**
 * Validates flag values (keys are flag names without dashes, as in AUTH_FLAGS, plus `kubeconfig`).
 * Throws AuthFlagError whose message names the flag.
 */
export function parseAuthFlags(values: Record<string, string | undefined>): { authn: AuthnOptions; authz: AuthzOptions } {
  const rhFlags = ['requestheader-client-ca-file', 'requestheader-allowed-names', 'requestheader-username-headers',
    'requestheader-group-headers', 'requestheader-extra-headers-prefix', 'requestheader-uid-headers'];
  // The CLI fills in every flag's default before calling us, so a value equal to the default does
  // not count as set: otherwise the ConfigMap's requestheader CA and header names were never used.
  const defaults = new Map(AUTH_FLAGS.map((f) => [f.name, f.default]));
  const requestHeaderFromFlags = rhFlags.some((f) => values[f] !== undefined && values[f] !== defaults.get(f));
  const requestHeader: RequestHeaderOptions = {
    clientCAFile: values['requestheader-client-ca-file'] || undefined,
    allowedNames: list(values['requestheader-allowed-names'], DEFAULT_REQUESTHEADER.allowedNames),
    usernameHeaders: list(values['requestheader-username-headers'], DEFAULT_REQUESTHEADER.usernameHeaders),
    groupHeaders: list(values['requestheader-group-headers'], DEFAULT_REQUESTHEADER.groupHeaders),
    extraHeadersPrefix: list(values['requestheader-extra-headers-prefix'], DEFAULT_REQUESTHEADER.extraHeadersPrefix),
    uidHeaders: list(values['requestheader-uid-headers'], DEFAULT_REQUESTHEADER.uidHeaders),
  };
  const shardUsers = list(values['kcp-shard-users'], []);
  const kcpServerURL = parseKcpServerURL(values['kcp-server-url']);
  const requiredBinding = parseRequiredAPIBinding(values['kcp-require-apibinding']);
  if (shardUsers.length > 0) requestHeader.shardUsers = shardUsers;
  if (requestHeader.clientCAFile && requestHeader.usernameHeaders.length === 0) {
    throw new AuthFlagError('--requestheader-username-headers: must name at least one header when --requestheader-client-ca-file is set');
  }
  for (const f of rhFlags.slice(2)) {
    for (const h of list(values[f], [])) {
      if (!/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(h)) throw new AuthFlagError(`--${f}: ${JSON.stringify(h)} is not a valid header name`);
    }
  }
  const authn: AuthnOptions = {
    clientCAFile: values['client-ca-file'] || undefined,
    requestHeader,
    requestHeaderFromFlags,
    hosting: hosting(values['authentication-kubeconfig'] || values['kubeconfig'], kcpServerURL),
    skipLookup: bool(values, 'authentication-skip-lookup'),
    tolerateLookupFailure: bool(values, 'authentication-tolerate-lookup-failure'),
    tokenCacheTTLMs: duration(values, 'authentication-token-webhook-cache-ttl'),
    apiAudiences: list(values['api-audiences'], []),
  };

  const modeText = values['authorization-mode'] || 'Delegated';
  const modes: AuthorizationMode[] = ['Delegated', 'RBAC', 'AlwaysAllow'];
  const mode = modes.find((m) => m === modeText);
  if (!mode) throw new AuthFlagError(`--authorization-mode: unknown mode ${JSON.stringify(modeText)} (one of ${modes.join(', ')})`);
  const authz: AuthzOptions = {
    mode,
    hosting: hosting(values['authorization-kubeconfig'] || values['kubeconfig'], kcpServerURL),
    allowCacheTTLMs: duration(values, 'authorization-webhook-cache-authorized-ttl'),
    denyCacheTTLMs: duration(values, 'authorization-webhook-cache-unauthorized-ttl'),
    alwaysAllowPaths: list(values['authorization-always-allow-paths'], DEFAULT_ALWAYS_ALLOW_PATHS),
    policyFile: values['authorization-policy-file'] || undefined,
    policyPollIntervalMs: FILE_RESYNC_MS,
    wildcardClusterGroups: list(values['wildcard-cluster-groups'], []),
    ...(shardUsers.length > 0 ? { kcpShardUsers: shardUsers } : {}),
    ...(requiredBinding ? { kcpRequireAPIBinding: requiredBinding } : {}),
    bootstrapRoles: values['rbac-bootstrap-roles'] === undefined || values['rbac-bootstrap-roles'] === '' ? true : bool(values, 'rbac-bootstrap-roles'),
  };
  for (const p of authz.alwaysAllowPaths) {
    if (!p.startsWith('/')) throw new AuthFlagError(`--authorization-always-allow-paths: ${JSON.stringify(p)} must start with /`);
    if (p.slice(0, -1).includes('*')) throw new AuthFlagError(`--authorization-always-allow-paths: ${JSON.stringify(p)}: * is only allowed at the end`);
  }
  if (shardUsers.length > 0 && !requestHeader.clientCAFile) {
    throw new AuthFlagError('--kcp-shard-users: needs --requestheader-client-ca-file (the CA of the shard client certificates)');
  }
  if (mode === 'RBAC' && !authz.policyFile) {
    throw new AuthFlagError('--authorization-policy-file: required with --authorization-mode=RBAC');
  }
  if (mode !== 'RBAC' && authz.policyFile) {
    throw new AuthFlagError(`--authorization-policy-file: only used with --authorization-mode=RBAC (mode is ${mode})`);
  }
  if (requiredBinding && !authz.hosting) {
    throw new AuthFlagError('--kcp-require-apibinding: needs kcp to ask (--kubeconfig or --authorization-kubeconfig, optionally --kcp-server-url)');
  }
  if (kcpServerURL && !authn.hosting && !authz.hosting) {
    throw new AuthFlagError('--kcp-server-url: needs credentials for kcp: set --kubeconfig (or --authentication-kubeconfig, --authorization-kubeconfig)');
  }
  if (mode === 'Delegated' && !authz.hosting) {
    throw new AuthFlagError('--authorization-mode: Delegated needs a hosting cluster: set --authorization-kubeconfig or --kubeconfig, or run in a cluster');
  }
  return { authn, authz };
}
