// Front-proxy (aggregation layer, kcp shard) authentication. X-Remote-* headers are only believed
// over a connection whose client certificate chains to the requestheader CA and whose CN is allowed;
// in every other case they are ignored, and always reported as consumed so the server strips them.
import type { AuthnRequest, AuthnResult, Authenticator, UserInfo } from './types.js';
import { ChainVerifier, type DynamicCA, subjectValues } from './x509.js';
import { DEFAULT_REQUESTHEADER } from './options.js';

export interface RequestHeaderConfig {
  allowedNames: string[];
  usernameHeaders: string[];
  groupHeaders: string[];
  extraHeadersPrefix: string[];
  uidHeaders: string[];
  /** CNs of kcp shards: without X-Remote-User they authenticate as themselves (kcp-shard.ts). */
  shardUsers?: string[];
}

/** Go's url.PathUnescape; a malformed key is kept as sent (as k8s.io/apiserver does). */
function unescapeExtraKey(k: string): string {
  try {
    return decodeURIComponent(k);
  } catch {
    return k;
  }
}

interface Compiled {
  source: RequestHeaderConfig;
  user: string[];
  group: Set<string>;
  uid: string[];
  prefixes: string[];
  allowed: Set<string>;
  shards: Set<string>;
}

function compile(c: RequestHeaderConfig): Compiled {
  const lc = (xs: string[]) => xs.map((x) => x.toLowerCase());
  return {
    source: c,
    user: lc(c.usernameHeaders),
    group: new Set(lc(c.groupHeaders)),
    uid: lc(c.uidHeaders),
    prefixes: lc(c.extraHeadersPrefix),
    allowed: new Set(c.allowedNames),
    shards: new Set(c.shardUsers ?? []),
  };
}

export class RequestHeaderAuthenticator implements Authenticator {
  private readonly verifier: ChainVerifier;
  private compiled: Compiled;

  constructor(private readonly ca: DynamicCA, config: RequestHeaderConfig = DEFAULT_REQUESTHEADER) {
    this.verifier = new ChainVerifier(ca);
    this.compiled = compile(config);
  }

  /** Swaps header names and allowed CNs (ConfigMap reload). */
  setConfig(config: RequestHeaderConfig): void {
    this.compiled = compile(config);
  }

  config(): RequestHeaderConfig {
    return this.compiled.source;
  }

  /** Names of the request's headers that belong to the front-proxy protocol (to be stripped). */
  headerNames(req: AuthnRequest): string[] {
    const c = this.compiled;
    const out: string[] = [];
    const raw = req.rawHeaders;
    for (let i = 0; i < raw.length; i += 2) {
      const name = raw[i]!.toLowerCase();
      if (c.user.includes(name) || c.uid.includes(name) || c.group.has(name) || c.prefixes.some((p) => name.startsWith(p))) {
        out.push(raw[i]!);
      }
    }
    return out;
  }

  async authenticate(req: AuthnRequest): Promise<AuthnResult> {
    const c = this.compiled;
    const raw = req.rawHeaders;
    const consumed: string[] = [];
    let username = '';
    let usernameRank = Infinity;
    let uid = '';
    let uidRank = Infinity;
    const groups: string[] = [];
    let extra: Record<string, string[]> | undefined;
    for (let i = 0; i + 1 < raw.length; i += 2) {
      const name = raw[i]!.toLowerCase();
      const value = raw[i + 1]!;
      let hit = false;
      const ur = c.user.indexOf(name);
      if (ur >= 0) {
        hit = true;
        // First non-empty value of the earliest-listed header wins, like headerValue() in Go.
        if (value !== '' && ur < usernameRank) { username = value; usernameRank = ur; }
      }
      const uidr = c.uid.indexOf(name);
      if (uidr >= 0) {
        hit = true;
        if (value !== '' && uidr < uidRank) { uid = value; uidRank = uidr; }
      }
      if (c.group.has(name)) {
        hit = true;
        groups.push(value);
      }
      for (const p of c.prefixes) {
        if (name.startsWith(p) && name.length > p.length) {
          hit = true;
          const key = unescapeExtraKey(name.slice(p.length));
          extra ??= {};
          (extra[key] ??= []).push(value);
          break;
        }
      }
      if (hit) consumed.push(raw[i]!);
    }
    const consumedHeaders = consumed.length > 0 ? consumed : undefined;
    const chain = req.peerChain;
    if (!chain || chain.length === 0 || this.ca.roots().length === 0) return { kind: 'anonymous', consumedHeaders };
    const err = this.verifier.verify(chain, req.peerVerified);
    if (err) return { kind: 'error', message: `front proxy: ${err}`, consumedHeaders };
    if (c.allowed.size > 0) {
      const cn = subjectValues(chain[0]!, 'CN')[0] ?? '';
      if (!c.allowed.has(cn)) {
        return { kind: 'error', message: `front proxy: x509: subject with cn=${cn} is not in the allowed list`, consumedHeaders };
      }
    }
    if (!username) {
      // A kcp shard without identity forwarding: the request is the shard's own, not anonymous.
      const cn = subjectValues(chain[0]!, 'CN')[0] ?? '';
      if (cn && c.shards.has(cn)) return { kind: 'user', user: { username: cn, groups: subjectValues(chain[0]!, 'O') }, consumedHeaders };
      return { kind: 'anonymous', consumedHeaders };
    }
    const user: UserInfo = { username, groups };
    if (uid) user.uid = uid;
    if (extra) user.extra = extra;
    return { kind: 'user', user, consumedHeaders };
  }
}
