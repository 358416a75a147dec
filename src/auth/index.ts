// The auth package's public surface for the HTTP pipeline and the CLI.
export * from './types.js';
export { AUTH_FLAGS, parseAuthFlags, parseDuration, AuthFlagError, DEFAULT_ALWAYS_ALLOW_PATHS, DEFAULT_REQUESTHEADER, DEFAULT_CACHE_TTL_MS } from './options.js';
export type { AuthnOptions, AuthzOptions, AuthorizationMode, RequestHeaderOptions, HostingClusterOptions, FlagDef } from './options.js';
export type { AuthDeps, AuthLogger } from './deps.js';
export { buildAuthentication } from './authentication.js';
export type { BuiltAuthentication, BuildAuthenticationDeps } from './authentication.js';
export { buildAuthorization, pathMatches, SYSTEM_MASTERS, ALL_RULES } from './authorization.js';
export type { BuiltAuthorization } from './authorization.js';
export { forbiddenMessage, forbiddenDetails } from './messages.js';
export { checkAssertAuthor, assertAuthorRule, ASSERT_AUTHOR_VERB } from './assert-author.js';
export type { AssertAuthorResult } from './assert-author.js';
export { submitterFromUser, stampSubmitter, preserveSubmitter, DISPLAY_NAME_CLAIM, EMAIL_CLAIM } from './submitter.js';
export type { Submitter } from './submitter.js';
export { peerChainFromSocket, peerVerificationFromSocket } from './x509.js';
export { AuthorizationUnavailableError } from './delegated.js';
export { impersonate } from './impersonation.js';
export type { ImpersonationResult } from './impersonation.js';
