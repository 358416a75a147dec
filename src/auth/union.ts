// The authentication chain, with k8s.io/apiserver's union-fail-on-error semantics: the first
// authenticator that recognises the user wins; if none does, any error makes the request
// unauthenticated (401) rather than anonymous, so a bad credential never degrades to anonymous.
import type { AuthnRequest, AuthnResult, Authenticator, UserInfo } from './types.js';

export const ALL_AUTHENTICATED = 'system:authenticated';
export const ALL_UNAUTHENTICATED = 'system:unauthenticated';

/** Adds system:authenticated once, here, so every authenticator's users carry it. */
export function withAuthenticatedGroup(user: UserInfo): UserInfo {
  for (const g of user.groups) {
    if (g === ALL_AUTHENTICATED || g === ALL_UNAUTHENTICATED) return user;
  }
  return { ...user, groups: [...user.groups, ALL_AUTHENTICATED] };
}

export class UnionAuthenticator implements Authenticator {
  /**
   * @param alwaysConsumed names of headers to strip whichever authenticator wins (the front-proxy
   *   headers must never reach handlers when a client certificate or token authenticated the request).
   */
  constructor(private readonly chain: Authenticator[], private readonly alwaysConsumed?: (req: AuthnRequest) => string[]) {}

  async authenticate(req: AuthnRequest): Promise<AuthnResult> {
    const consumed: string[] = this.alwaysConsumed ? this.alwaysConsumed(req) : [];
    const errors: string[] = [];
    for (const a of this.chain) {
      let r: AuthnResult;
      try {
        r = await a.authenticate(req);
      } catch (e) {
        r = { kind: 'error', message: (e as Error).message };
      }
      if (r.consumedHeaders) consumed.push(...r.consumedHeaders);
      if (r.kind === 'user') {
        return { kind: 'user', user: withAuthenticatedGroup(r.user), consumedHeaders: dedupe(consumed) };
      }
      if (r.kind === 'error') errors.push(r.message);
    }
    const consumedHeaders = consumed.length > 0 ? dedupe(consumed) : undefined;
    if (errors.length > 0) return { kind: 'error', message: errors.join('; '), consumedHeaders };
    return consumedHeaders ? { kind: 'anonymous', consumedHeaders } : { kind: 'anonymous' };
  }
}

function dedupe(xs: string[]): string[] {
  return [...new Set(xs)];
}
