// kcp shards as front proxies. kcp releases up to v0.32.3 proxy a workspace request to a
// virtual-resource backend over the shard's client certificate without saying who the caller is;
// kcp main stamps the caller into X-Remote-*. A request that carries only the shard's own identity
// therefore acts for an unknown person: it may do what the shard is granted, but it must never
// name a commit author (docs/kcp.md), whatever the shard's groups (even system:masters).
import type { Attributes, AuthorizationResult, Authorizer } from './types.js';
import { ASSERT_AUTHOR_VERB } from './assert-author.js';

export function shardWithoutCallerReason(shard: string): string {
  return `the request carries only the identity of kcp shard ${JSON.stringify(shard)} (--kcp-shard-users), not its caller's (kcp releases up to v0.32.3 do not forward it), so no author can be asserted`;
}

export class KcpShardAuthorizer implements Authorizer {
  private readonly shards: Set<string>;

  constructor(shardUsers: string[], private readonly inner: Authorizer) {
    this.shards = new Set(shardUsers);
  }

  authorize(attrs: Attributes): Promise<AuthorizationResult> {
    if (attrs.verb === ASSERT_AUTHOR_VERB && this.shards.has(attrs.user.username)) {
      return Promise.resolve({ decision: 'deny', reason: shardWithoutCallerReason(attrs.user.username) });
    }
    return this.inner.authorize(attrs);
  }
}
