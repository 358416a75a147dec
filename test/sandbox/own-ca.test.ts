// `serve --sandbox` with a --client-ca-file and a --tls-cert-file of the operator's own (no dev
// PKI): the sandbox is still the mirror's default source (the mirror reads it over loopback with an
// in-memory token and its own SNI certificate, src/auth/loopback.ts), and edits are attributed.
// Also the `kubeconfig` command's refusals.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { issueClientCert, makeCA } from '../support/pki.js';
import { MAIN_JS, kubectlFor, startServer, tempDir } from '../auth-e2e/harness.js';
import { until, waitMs } from '../support/deadline.js';
import { git } from '../git/git-cli.js';

test('with a client CA and serving certificate of its own, the sandbox is the default source and edits are attributed', { timeout: 180_000 }, async (t) => {
  const dir = tempDir(t, 'sandbox-own-ca-');
  const serverCA = makeCA('own-serving-ca');
  const clientCA = makeCA('own-client-ca');
  writeFileSync(join(dir, 'client-ca.crt'), clientCA.certPem);
  const srv = await startServer(t, serverCA, ['--sandbox', '--controllers=all', '--authorization-mode=AlwaysAllow', '--client-ca-file', join(dir, 'client-ca.crt'), '--allow-file-repositories=true']);
  // The harness's --tls-cert-file holds only the leaf its CA signed: the loopback client cannot
  // verify that one, so this also proves the loopback's own certificate is used.
  const admin = kubectlFor(dir, 'admin', srv.url, serverCA.certPem, issueClientCert(clientCA, 'root', ['system:masters']));
  const ok = async (args: string[], stdin?: string) => {
    const r = await admin(args, stdin);
    assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}${r.stdout}`);
    return r.stdout;
  };
  const bare = join(dir, 'config.git');
  await git(dir, 'init', '--bare', '--initial-branch=main', bare);
  await ok(['create', 'namespace', 'team-a']);
  await ok(['create', 'configmap', 'one', '-n', 'team-a', '--from-literal=k=v']);
  await ok(['apply', '-f', '-'], JSON.stringify({
    apiVersion: 'configbutler.ai/v1alpha1',
    kind: 'GitTarget',
    metadata: { name: 'tenants', namespace: 'team-a' },
    spec: { repository: { url: `file://${bare}` }, branch: 'main', path: 'live', commit: { idleSeconds: 1 }, resources: [{ group: '', resource: 'configmaps', namespaces: ['team-a'] }] },
  }));
  const r = await admin(['wait', '--for=condition=Ready', 'gittarget/tenants', '--timeout=60s']);
  assert.equal(r.stdout, 'gittarget.configbutler.ai/tenants condition met\n', `${r.stderr}\n${JSON.stringify(JSON.parse(await ok(['get', 'gittarget', 'tenants', '-o', 'json'])).status)}`);
  await ok(['--as', 'dora', 'patch', 'configmap', 'one', '-n', 'team-a', '-p', '{"data":{"k":"dora"}}']);
  const log = async () => (await git(bare, 'log', '--format=%an | %cn | %s', 'main').catch(() => '')).split('\n').filter(Boolean);
  await until(async () => (await log()).length === 2, 'two commits', 30_000, 100).catch(async (e) => {
    throw new Error(`${(e as Error).message}\n${(await log()).join('\n')}\n${srv.logs()}`);
  });
  assert.deepEqual(await log(), ['dora | reverser-apiserver | Update configmaps team-a/one', 'reverser-apiserver | reverser-apiserver | Snapshot of team-a/tenants: 1 object']);
});

test('kubeconfig: refusals are flag errors (exit 2) naming what is wrong', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'kubeconfig-cmd-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const run = (args: string[]) => new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(process.execPath, [MAIN_JS, 'kubeconfig', ...args], { timeout: waitMs(30_000) }, (e, stdout, stderr) => resolve({ code: e ? (e as { code: number }).code : 0, stdout, stderr }));
  });
  assert.deepEqual(await run(['--group', 'x']), { code: 2, stdout: '', stderr: 'error: --user is required\n' });
  assert.deepEqual(await run(['--user', 'alice', '--data-dir', dir]), {
    code: 2, stdout: '', stderr: `error: no dev CA in ${join(dir, 'certs')} (ca.crt and ca.key): start the server once without --client-ca-file (npm start) to generate it, or pass --data-dir/--cert-dir\n`,
  });
  assert.deepEqual(await run(['--user', 'a\u0007b']), { code: 2, stdout: '', stderr: 'error: --user "a\\u0007b": must be 1 to 64 characters without control characters\n' });
  assert.deepEqual(await run(['--user', 'alice', '--bogus', '1']), { code: 2, stdout: '', stderr: 'error: unknown flag --bogus; see reverser-apiserver kubeconfig --help\n' });
});
