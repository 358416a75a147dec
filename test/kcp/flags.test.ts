// --kcp-shard-users parsing: it reaches both authentication (requestheader) and authorization, and
// is refused without the requestheader CA the shard certificates must chain to.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AuthFlagError, parseAuthFlags } from '../../src/auth/options.js';

const base = { 'authorization-mode': 'AlwaysAllow' };

test('--kcp-shard-users reaches authentication and authorization', () => {
  const { authn, authz } = parseAuthFlags({ ...base, 'requestheader-client-ca-file': '/ca.crt', 'kcp-shard-users': 'shard-1, shard-2' });
  assert.deepEqual(authn.requestHeader.shardUsers, ['shard-1', 'shard-2']);
  assert.deepEqual(authz.kcpShardUsers, ['shard-1', 'shard-2']);
});

test('--kcp-shard-users without --requestheader-client-ca-file is a flag error', () => {
  assert.throws(() => parseAuthFlags({ ...base, 'kcp-shard-users': 'shard-1' }),
    (e: unknown) => e instanceof AuthFlagError && e.message === '--kcp-shard-users: needs --requestheader-client-ca-file (the CA of the shard client certificates)');
});
