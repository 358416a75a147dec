// Assembles the authentication chain: client certificate, front proxy, bearer token (TokenReview),
// each present only when configured. CA bundles come from flags (files re-read on change) or, when
// a hosting cluster is known and the flags are absent, from kube-system/extension-apiserver-authentication.
import { readFileSync } from 'node:fs';
import type { AuthnOptions } from './options.js';
import { DEFAULT_REQUESTHEADER } from './options.js';
import type { Authenticator } from './types.js';
import { loggerOf, type AuthDeps, type AuthLogger } from './deps.js';
import { DynamicCA, X509Authenticator } from './x509.js';
import { RequestHeaderAuthenticator, type RequestHeaderConfig } from './requestheader.js';
import { UnionAuthenticator } from './union.js';
import { HostingClient } from './hosting.js';
import { TokenReviewAuthenticator } from './tokenreview.js';
import { AuthConfigMapFollower } from './configmap.js';
import { FILE_RESYNC_MS, watchFileContent } from './filewatch.js';

export interface BuiltAuthentication {
  authenticator: Authenticator;
  /** PEMs for the TLS server's `ca` option (client CA, then requestheader CA), current after rotation. */
  tlsCAs(): string[];
  /** Called after any CA bundle changed, so the TLS server can refresh its secure context. */
  onTLSCAsChange(listener: () => void): void;
  /** The TokenReview authenticator when a hosting cluster is configured (tests read `reviews`). */
  tokenReview?: TokenReviewAuthenticator;
  /** The front-proxy authenticator (its current header configuration is visible via config()). */
  requestHeader: RequestHeaderAuthenticator;
  close(): void;
}

export interface BuildAuthenticationDeps extends AuthDeps {
  /** Poll interval for CA files given by flags (default FILE_RESYNC_MS, 60 s; their directory is watched too). */
  filePollIntervalMs?: number;
  /** Retry delay after a failed watch of the authentication ConfigMap (default 1 s). */
  configMapRetryMs?: number;
  /** Each ConfigMap watch asks the server to end it after this many seconds times [1, 2) (default 300, as client-go). */
  configMapWatchTimeoutSeconds?: number;
}

function readCAFile(ca: DynamicCA, path: string, flag: string): void {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new Error(`--${flag}: cannot read ${path}: ${(e as Error).message}`);
  }
  try {
    ca.set(text);
  } catch (e) {
    throw new Error(`--${flag}: ${(e as Error).message}`);
  }
}

/** `requestheader-*` list values in the ConfigMap are JSON string arrays. */
function jsonList(data: Record<string, string>, key: string, dflt: string[]): string[] {
  const v = data[key];
  if (v === undefined || v === '') return [...dflt];
  const parsed: unknown = JSON.parse(v);
  if (!Array.isArray(parsed) || parsed.some((x) => typeof x !== 'string')) throw new Error(`${key} is not a JSON list of strings`);
  return parsed as string[];
}

export function requestHeaderConfigFromConfigMap(data: Record<string, string>): RequestHeaderConfig {
  return {
    allowedNames: jsonList(data, 'requestheader-allowed-names', DEFAULT_REQUESTHEADER.allowedNames),
    usernameHeaders: jsonList(data, 'requestheader-username-headers', DEFAULT_REQUESTHEADER.usernameHeaders),
    groupHeaders: jsonList(data, 'requestheader-group-headers', DEFAULT_REQUESTHEADER.groupHeaders),
    extraHeadersPrefix: jsonList(data, 'requestheader-extra-headers-prefix', DEFAULT_REQUESTHEADER.extraHeadersPrefix),
    uidHeaders: jsonList(data, 'requestheader-uid-headers', DEFAULT_REQUESTHEADER.uidHeaders),
  };
}

function warnIfSameCA(clientCA: DynamicCA, rhCA: DynamicCA, logger: AuthLogger): void {
  const a = new Set(clientCA.roots().map((c) => c.fingerprint256));
  if (rhCA.roots().some((c) => a.has(c.fingerprint256))) {
    logger.warn('authentication: the client CA and the requestheader CA share a certificate; client certificates are checked first, so the front proxy would authenticate as itself. Use a separate front-proxy CA.');
  }
}

export async function buildAuthentication(opts: AuthnOptions, deps: BuildAuthenticationDeps = {}): Promise<BuiltAuthentication> {
  const logger = loggerOf(deps);
  const pollMs = deps.filePollIntervalMs ?? FILE_RESYNC_MS;
  const closers: Array<() => void> = [];
  const clientCA = new DynamicCA('client CA');
  const rhCA = new DynamicCA('requestheader client CA');
  const rh = new RequestHeaderAuthenticator(rhCA, opts.requestHeader);

  const followFile = (ca: DynamicCA, path: string, flag: string): void => {
    readCAFile(ca, path, flag);
    closers.push(watchFileContent(path, pollMs, (text) => {
      try {
        if (ca.set(text)) logger.info(`authentication: reloaded --${flag} ${path}`);
      } catch (e) {
        logger.error(`authentication: --${flag} ${path} changed but is unusable, keeping the previous CA: ${(e as Error).message}`);
      }
    }, (e) => logger.error(`authentication: re-reading --${flag} ${path}: ${e.message}`)));
  };
  if (opts.clientCAFile) followFile(clientCA, opts.clientCAFile, 'client-ca-file');
  if (opts.requestHeader.clientCAFile) followFile(rhCA, opts.requestHeader.clientCAFile, 'requestheader-client-ca-file');

  let tokenReview: TokenReviewAuthenticator | undefined;
  let client: HostingClient | undefined;
  try {
    if (opts.hosting) {
      client = await HostingClient.create(opts.hosting);
      const c = client;
      closers.push(() => c.close());
      tokenReview = new TokenReviewAuthenticator(client, { ttlMs: opts.tokenCacheTTLMs, audiences: opts.apiAudiences, now: deps.now });
      const wantClientCA = !opts.clientCAFile;
      const wantRH = !opts.requestHeaderFromFlags;
      if (!opts.skipLookup && (wantClientCA || wantRH)) {
        const follower = new AuthConfigMapFollower(client, (data) => {
          try {
            if (wantClientCA && clientCA.set(data['client-ca-file'])) logger.info('authentication: client CA loaded from kube-system/extension-apiserver-authentication');
            if (wantRH) {
              const cfg = { ...requestHeaderConfigFromConfigMap(data), shardUsers: opts.requestHeader.shardUsers };
              if (rhCA.set(data['requestheader-client-ca-file'])) logger.info('authentication: requestheader CA loaded from kube-system/extension-apiserver-authentication');
              rh.setConfig(cfg);
            }
          } catch (e) {
            logger.error(`authentication: kube-system/extension-apiserver-authentication is unusable, keeping the previous settings: ${(e as Error).message}`);
          }
        }, logger, { retryMs: deps.configMapRetryMs, minWatchTimeoutSeconds: deps.configMapWatchTimeoutSeconds });
        closers.push(() => follower.close());
        try {
          await follower.start();
        } catch (e) {
          const msg = `authentication: cannot read kube-system/extension-apiserver-authentication: ${(e as Error).message}`;
          if (!opts.tolerateLookupFailure) throw new Error(`${msg} (set --authentication-tolerate-lookup-failure=true to start anyway)`);
          logger.warn(`${msg}; continuing without it`);
        }
      }
    }
  } catch (e) {
    for (const c of closers) c();
    throw e;
  }
  warnIfSameCA(clientCA, rhCA, logger);

  const chain: Authenticator[] = [new X509Authenticator(clientCA), rh];
  if (tokenReview) chain.push(tokenReview);
  const listeners: Array<() => void> = [];
  const notify = (): void => {
    for (const l of listeners) {
      try {
        l();
      } catch (e) {
        logger.error(`authentication: CA change listener failed: ${(e as Error).message}`);
      }
    }
  };
  clientCA.onChange(notify);
  rhCA.onChange(notify);
  return {
    authenticator: new UnionAuthenticator(chain, (req) => rh.headerNames(req)),
    tlsCAs: () => [clientCA.pem(), rhCA.pem()].filter((p): p is string => !!p),
    onTLSCAsChange: (l) => listeners.push(l),
    tokenReview,
    requestHeader: rh,
    close: () => {
      for (const c of closers.splice(0)) c();
    },
  };
}
