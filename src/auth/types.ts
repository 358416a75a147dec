// Identity and authorization contracts, shaped like k8s.io/apiserver's user.Info,
// authenticator.Request and authorizer.Attributes so operators recognise them.
import type { X509Certificate } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

export interface UserInfo {
  username: string;
  uid?: string;
  groups: string[];
  extra?: Record<string, string[]>;
}

export const ANONYMOUS_USER: UserInfo = Object.freeze({
  username: 'system:anonymous',
  groups: ['system:unauthenticated'],
}) as UserInfo;

/** The TLS handshake's verdict on the peer chain (OpenSSL verified it against every trusted bundle). */
export interface PeerVerification {
  authorized: boolean;
  /** OpenSSL's verify error code when not authorized, e.g. CERT_HAS_EXPIRED, INVALID_PURPOSE. */
  error?: string;
}

/** What an authenticator sees of a request. */
export interface AuthnRequest {
  /** The TLS peer chain, leaf first, completed up to its root; undefined without a client certificate. */
  peerChain?: X509Certificate[];
  /** The handshake's verification of peerChain; without it no certificate authenticates. */
  peerVerified?: PeerVerification;
  headers: IncomingHttpHeaders;
  /** Node's raw header list (name, value, name, value...), so repeated headers stay separate lines. */
  rawHeaders: string[];
  /**
   * The kcp logical cluster the path addressed (`/clusters/<name>/...`), undefined for the default
   * cluster: a bearer token is reviewed in that workspace (tokens are per workspace in kcp).
   */
  cluster?: string;
}

export type AuthnResult =
  | { kind: 'user'; user: UserInfo; /** headers the authenticator consumed and the server must strip */ consumedHeaders?: string[] }
  | { kind: 'anonymous'; /** untrusted X-Remote-* headers the server must strip before handlers see them */ consumedHeaders?: string[] }
  | { kind: 'error'; message: string; consumedHeaders?: string[] };

export interface Authenticator {
  authenticate(req: AuthnRequest): Promise<AuthnResult>;
}

/** authorizer.Attributes */
export interface Attributes {
  user: UserInfo;
  verb: string;
  resourceRequest: boolean;
  /** Non-resource requests: the URL path. */
  path?: string;
  namespace?: string;
  apiGroup?: string;
  apiVersion?: string;
  resource?: string;
  subresource?: string;
  name?: string;
  /**
   * kcp logical cluster the request addressed (`/clusters/<name>/...`; undefined = the default
   * cluster; `*` = the wildcard). Delegated authorization sends its SubjectAccessReview to that
   * workspace; RBAC evaluates only the grants of that cluster; the wildcard needs
   * system:masters or a --wildcard-cluster-groups group.
   */
  cluster?: string;
}

export type Decision = 'allow' | 'deny' | 'noopinion';

export interface AuthorizationResult {
  decision: Decision;
  reason?: string;
}

/**
 * Authorizers may throw: the caller treats any error as a denial (fail closed) and says the check
 * could not be made.
 */
export interface Authorizer {
  authorize(attrs: Attributes): Promise<AuthorizationResult>;
}

/** authorizer.ResourceRuleInfo / NonResourceRuleInfo, as a SelfSubjectRulesReview lists them. */
export interface ResourceRule {
  verbs: string[];
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
}
export interface NonResourceRule {
  verbs: string[];
  nonResourceURLs?: string[];
}

/** What a user may do in a namespace, as far as the authorizer can list it (authorizer.RuleResolver). */
export interface SubjectRules {
  resourceRules: ResourceRule[];
  nonResourceRules: NonResourceRule[];
  /** True when the authorizer cannot list everything it would allow (a webhook, Delegated). */
  incomplete: boolean;
  evaluationError?: string;
}

export interface RuleResolver {
  rulesFor(user: UserInfo, namespace: string, cluster?: string): SubjectRules;
}
