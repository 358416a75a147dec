// The binary's flag handling: names are a contract, mistakes exit non-zero naming the flag.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { issueServerCert, makeCA } from '../support/pki.js';

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

test('file and address flags are checked before the data directory is touched: exit 2 naming the flag, nothing written', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cli-flags-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const ca = makeCA('flags-ca');
  const a = issueServerCert(ca, 'a');
  const b = issueServerCert(ca, 'b');
  const file = (name: string, text: string) => {
    const p = join(dir, name);
    writeFileSync(p, text);
    return p;
  };
  const cert = file('a.crt', a.certPem);
  const otherKey = file('b.key', b.keyPem);
  const notPEM = file('not.pem', 'hello\n');
  const missing = join(dir, 'missing.pem');
  const cases: Array<[string[], string]> = [
    [[`--tls-cert-file=${missing}`, `--tls-private-key-file=${otherKey}`], `--tls-cert-file: cannot read ${missing}: no such file`],
    [[`--tls-cert-file=${notPEM}`, `--tls-private-key-file=${otherKey}`], `--tls-cert-file: ${notPEM} is not a PEM certificate (no "-----BEGIN CERTIFICATE-----" block)`],
    [[`--tls-cert-file=${cert}`, `--tls-private-key-file=${notPEM}`], `--tls-private-key-file: ${notPEM} is not a PEM private key (no "-----BEGIN ... PRIVATE KEY-----" block)`],
    [[`--tls-cert-file=${cert}`, `--tls-private-key-file=${otherKey}`], `--tls-private-key-file: ${otherKey} is not the private key of the certificate in --tls-cert-file ${cert}`],
    [[`--kubeconfig=${missing}`], `--kubeconfig: cannot read ${missing}: no such file`],
    [[`--kubeconfig=${notPEM}`], `--kubeconfig: ${notPEM} is not a kubeconfig (no clusters)`],
    [['--bind-address=no-such-host.invalid'], '--bind-address: must be an IP address (e.g. 127.0.0.1, 0.0.0.0 or ::), got "no-such-host.invalid"'],
    [[`--client-ca-file=${notPEM}`], `--client-ca-file: ${notPEM} is not a PEM certificate (no "-----BEGIN CERTIFICATE-----" block)`],
  ];
  for (const [flags, message] of cases) {
    const dataDir = join(dir, 'data');
    const r = await run(['serve', `--data-dir=${dataDir}`, '--authorization-mode=AlwaysAllow', '--secure-port=1', ...flags]);
    assert.equal(r.code, 2, `${flags.join(' ')}: ${r.stderr}`);
    assert.equal(r.stderr, `error: ${message}\n`);
    assert.equal(existsSync(dataDir), false, `${flags.join(' ')} created the data directory`);
  }
});

test('every boolean flag takes the bare form, =true and =false, as kube\'s flags do', async () => {
  const { BOOLEAN_FLAGS, allServeFlags, parseServeFlags } = await import('../../src/cli/options.js');
  // Every flag documented as true/false is a boolean flag (so none is left needing a value).
  for (const f of allServeFlags()) {
    if (f.default === 'true' || f.default === 'false' || f.description.startsWith('true:')) assert.ok(BOOLEAN_FLAGS.has(f.name), f.name);
  }
  const hosting = ['--kubeconfig', '/nonexistent/kubeconfig'];
  const read = {
    'sandbox': (o: any) => o.sandbox,
    'register-apiservice': (o: any) => o.registration.enabled,
    'authentication-skip-lookup': (o: any) => o.authn.hosting?.skipLookup ?? o.authn.skipLookup,
    'authentication-tolerate-lookup-failure': (o: any) => o.authn.hosting?.tolerateLookupFailure ?? o.authn.tolerateLookupFailure,
    'rbac-bootstrap-roles': (o: any) => o.authz.bootstrapRoles,
    'allow-insecure-credentials': (o: any) => o.tenantInput.allowInsecureCredentials,
    'allow-file-repositories': (o: any) => o.tenantInput.allowFileRepositories,
  } as Record<string, (o: unknown) => unknown>;
  assert.deepEqual(Object.keys(read).sort(), [...BOOLEAN_FLAGS].sort());
  for (const name of BOOLEAN_FLAGS) {
    const extra = name === 'rbac-bootstrap-roles' ? ['--authorization-mode=RBAC', '--authorization-policy-file=/nonexistent.yaml'] : [];
    for (const [form, want] of [[`--${name}`, true], [`--${name}=true`, true], [`--${name}=false`, false], [`--${name}=T`, true], [`--${name}=0`, false]] as const) {
      const o = parseServeFlags([...hosting, ...extra, form]);
      assert.equal(read[name]!(o), want, `${form}`);
    }
    assert.throws(() => parseServeFlags([...hosting, ...extra, `--${name}=yes`]), /true or false/, `--${name}=yes`);
  }
  // Through the binary: --register-apiservice alone used to fail with "argument missing".
  const r = await run(['serve', '--register-apiservice', '--secure-port=notaport']);
  assert.equal(r.code, 2, r.stderr);
  assert.match(r.stderr, /--secure-port/);
  assert.doesNotMatch(r.stderr, /argument missing|register-apiservice/);
});
