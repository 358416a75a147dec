// The server's loopback identity, as kube-apiserver's: a random bearer token minted at start, kept
// only in memory, that authenticates as `system:apiserver` in `system:masters`. The in-process
// mirror reads this server's own sandbox with it, so the sandbox is the default source whatever
// CA authenticates clients (--client-ca-file of the operator's own, or the generated dev CA). The
// token never leaves the process: it is in no file, no log and no kubeconfig on disk.
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { bearerToken } from './tokenreview.js';
import type { Authenticator, AuthnRequest, AuthnResult, UserInfo } from './types.js';

export const LOOPBACK_USER = 'system:apiserver';
/** The SNI name the loopback client asks for; the server answers it with the loopback certificate. */
export const LOOPBACK_SERVER_NAME = 'apiserver-loopback-client';

export interface Loopback {
  token: string;
  user: UserInfo;
  /** `inner`, with the loopback token recognised first. */
  wrap(inner: Authenticator): Authenticator;
}

export function createLoopback(): Loopback {
  const token = randomBytes(32).toString('base64url');
  const expected = Buffer.from(token);
  const user: UserInfo = { username: LOOPBACK_USER, uid: randomBytes(16).toString('hex'), groups: ['system:masters', 'system:authenticated'] };
  const matches = (req: AuthnRequest): boolean => {
    const h = req.headers.authorization;
    const given = bearerToken(Array.isArray(h) ? h[0] : h);
    if (given === undefined) return false;
    const b = Buffer.from(given);
    return b.length === expected.length && timingSafeEqual(b, expected);
  };
  return {
    token,
    user,
    wrap: (inner) => ({
      authenticate: (req: AuthnRequest): Promise<AuthnResult> => (matches(req) ? Promise.resolve({ kind: 'user', user, consumedHeaders: ['authorization'] }) : inner.authenticate(req)),
    }),
  };
}
