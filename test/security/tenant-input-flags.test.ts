// The tenant-input flags (src/net/flags.ts): defaults refuse, bare boolean forms mean true, a bad
// CIDR or host names the flag.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FlagError, parseServeFlags as parseAll } from '../../src/cli/options.js';

const parseServeFlags = (args: string[]) => parseAll(['--authorization-mode=AlwaysAllow', ...args]);

test('tenant-input flags: defaults, opt-ins and errors', () => {
  assert.deepEqual(parseServeFlags([]).tenantInput, { allowInsecureCredentials: false, allowFileRepositories: false, egress: { denyCIDRs: [], allowCIDRs: [], allowHosts: [] } });
  assert.deepEqual(
    parseServeFlags(['--allow-insecure-credentials', '--allow-file-repositories=true', '--egress-deny-cidrs=127.0.0.0/8, ::1/128', '--egress-allow-cidrs=10.0.0.0/8', '--egress-allow-hosts=git.internal,*.corp.example']).tenantInput,
    { allowInsecureCredentials: true, allowFileRepositories: true, egress: { denyCIDRs: ['127.0.0.0/8', '::1/128'], allowCIDRs: ['10.0.0.0/8'], allowHosts: ['git.internal', '*.corp.example'] } },
  );
  assert.throws(() => parseServeFlags(['--egress-deny-cidrs=10.0.0.0/33']), new FlagError('--egress-deny-cidrs: "10.0.0.0/33" has an invalid prefix length'));
  assert.throws(() => parseServeFlags(['--egress-allow-cidrs=example.com']), new FlagError('--egress-allow-cidrs: "example.com" is not an IP address or CIDR'));
  assert.throws(() => parseServeFlags(['--egress-allow-hosts=a b']), new FlagError('--egress-allow-hosts: "a b" is not a host name or *.suffix'));
  assert.throws(() => parseServeFlags(['--allow-file-repositories=yes']), new FlagError('--allow-file-repositories: must be true or false, got "yes"'));
});
