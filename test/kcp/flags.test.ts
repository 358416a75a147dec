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

const withKubeconfig = { ...base, kubeconfig: '/kcp.kubeconfig' };

test('--kcp-server-url reaches TokenReview and SubjectAccessReview clients; a workspace URL or no credentials is a flag error', () => {
  const { authn, authz } = parseAuthFlags({ ...withKubeconfig, 'kcp-server-url': 'https://kcp.example:6443/' });
  assert.equal(authn.hosting?.kcpServerURL, 'https://kcp.example:6443');
  assert.equal(authz.hosting?.kcpServerURL, 'https://kcp.example:6443');
  const refused: Array<[Record<string, string>, string]> = [
    [{ ...withKubeconfig, 'kcp-server-url': 'https://kcp.example:6443/clusters/root' }, '--kcp-server-url: "https://kcp.example:6443/clusters/root" names a workspace; give kcp\'s base URL (without /clusters/...): each request\'s workspace is appended'],
    [{ ...withKubeconfig, 'kcp-server-url': 'kcp.example:6443' }, '--kcp-server-url: "kcp.example:6443" must start with https:// or http://'],
    [{ ...base, 'kcp-server-url': 'https://kcp.example:6443' }, '--kcp-server-url: needs credentials for kcp: set --kubeconfig (or --authentication-kubeconfig, --authorization-kubeconfig)'],
  ];
  for (const [values, message] of refused) {
    assert.throws(() => parseAuthFlags(values), (e: unknown) => e instanceof AuthFlagError && e.message === message);
  }
});

test('--kcp-require-apibinding: <workspace path>:<export name>, or a bare name; it needs kcp to ask', () => {
  assert.deepEqual(parseAuthFlags({ ...withKubeconfig, 'kcp-require-apibinding': 'root:providers:reverser:configbutler.ai' }).authz.kcpRequireAPIBinding,
    { path: 'root:providers:reverser', name: 'configbutler.ai' });
  assert.deepEqual(parseAuthFlags({ ...withKubeconfig, 'kcp-require-apibinding': 'configbutler.ai' }).authz.kcpRequireAPIBinding, { name: 'configbutler.ai' });
  assert.equal(parseAuthFlags({ ...withKubeconfig }).authz.kcpRequireAPIBinding, undefined);
  assert.throws(() => parseAuthFlags({ ...withKubeconfig, 'kcp-require-apibinding': 'root:Providers:x' }),
    (e: unknown) => e instanceof AuthFlagError && e.message === '--kcp-require-apibinding: "root:Providers:x" is not <workspace path>:<export name> (e.g. root:providers:reverser:configbutler.ai)');
  assert.throws(() => parseAuthFlags({ ...base, 'kcp-require-apibinding': 'configbutler.ai' }),
    (e: unknown) => e instanceof AuthFlagError && e.message === '--kcp-require-apibinding: needs kcp to ask (--kubeconfig or --authorization-kubeconfig, optionally --kcp-server-url)');
});
