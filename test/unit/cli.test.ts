// The binary's flag handling: names are a contract, mistakes exit non-zero naming the flag.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const MAIN = fileURLToPath(new URL('../../src/cli/main.js', import.meta.url));

function run(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [MAIN, ...args], { timeout: 20_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as NodeJS.ErrnoException & { code?: number }).code as unknown as number) ?? 1 : 0, stdout, stderr });
    });
  });
}

test('--help lists every contract flag', async () => {
  const r = await run(['--help']);
  assert.equal(r.code, 0);
  for (const flag of [
    'secure-port', 'bind-address', 'data-dir', 'cert-dir', 'tls-cert-file', 'tls-private-key-file', 'client-ca-file',
    'storage', 'redis-url', 'redis-key-prefix', 'event-log-retention', 'authorization-mode', 'log-level', 'kubeconfig',
    'requestheader-client-ca-file', 'requestheader-allowed-names', 'authorization-policy-file', 'committer-name', 'committer-email',
  ]) {
    assert.match(r.stdout, new RegExp(`--${flag}\\b`), flag);
  }
});

test('unknown and invalid flags exit 2 with a message naming the flag', async () => {
  const cases: Array<[string[], RegExp]> = [
    [['serve', '--bogus=1'], /--bogus/],
    [['serve', '--secure-port=abc', '--authorization-mode=AlwaysAllow'], /--secure-port: must be an integer between 1 and 65535/],
    [['serve', '--storage=etcd', '--authorization-mode=AlwaysAllow'], /--storage: must be embedded or redis/],
    [['serve', '--redis-key-prefix=bad*prefix', '--authorization-mode=AlwaysAllow'], /--redis-key-prefix: .*allowed characters/],
    [['serve', '--redis-key-prefix=:::', '--authorization-mode=AlwaysAllow'], /--redis-key-prefix: .*non-empty/],
    [['serve', '--log-level=loud', '--authorization-mode=AlwaysAllow'], /--log-level: must be one of error, warn, info, debug/],
    [['serve', '--authorization-mode=Sometimes'], /--authorization-mode: unknown mode/],
    [['serve', '--authorization-mode=RBAC'], /--authorization-policy-file: required with --authorization-mode=RBAC/],
    [['serve', '--tls-cert-file=/x', '--authorization-mode=AlwaysAllow'], /--tls-cert-file and --tls-private-key-file must be given together/],
    [['frobnicate'], /unknown command "frobnicate"/],
  ];
  for (const [args, msg] of cases) {
    const r = await run(args);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, msg, args.join(' '));
  }
});
