// src/kubeconfig/kubeconfig.ts is the part of @kubernetes/client-node's KubeConfig the server uses,
// without the generated API client that class's module loads. These tests hold it to the library:
// for the same kubeconfig, applyToHTTPSOptions yields the same TLS material and credentials as
// client-node's own class (its `agent` aside, which the server never uses), and loading it — with
// the hosting-cluster client and the controllers that use it — loads none of the generated client.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { RequestOptions } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { KubeConfig as Full } from '@kubernetes/client-node';
import { KubeConfig } from '../../src/kubeconfig/kubeconfig.js';
import { withDeadline } from '../support/deadline.js';

const b64 = (s: string) => Buffer.from(s).toString('base64');

/** What applyToHTTPSOptions set, comparable: Buffers as text, no agent. */
async function applied(kc: { applyToHTTPSOptions(o: RequestOptions): Promise<void> }): Promise<Record<string, unknown>> {
  const o: RequestOptions = {};
  try {
    await kc.applyToHTTPSOptions(o);
  } catch (e) {
    return { error: (e as Error).message };
  }
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) if (k !== 'agent' && v !== undefined) out[k] = Buffer.isBuffer(v) ? v.toString() : v;
  return out;
}

function kubeconfigYaml(cluster: string, user: string): string {
  return `apiVersion: v1
kind: Config
current-context: c
contexts:
- name: c
  context: {cluster: k, user: u, namespace: team-a}
clusters:
- name: k
  cluster:
${cluster}
users:
- name: u
  user:
${user}
`;
}

test('applyToHTTPSOptions yields what client-node yields, kubeconfig by kubeconfig', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'kubeconfig-test-'));
  try {
    mkdirSync(join(dir, 'pki'));
    writeFileSync(join(dir, 'pki', 'ca.crt'), 'CA FROM FILE');
    writeFileSync(join(dir, 'pki', 'client.crt'), 'CERT FROM FILE');
    writeFileSync(join(dir, 'pki', 'client.key'), 'KEY FROM FILE');
    writeFileSync(join(dir, 'token'), 'token-from-file');
    const plugin = join(dir, 'plugin.sh');
    writeFileSync(plugin, `#!/bin/sh\necho '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"exec-token-'"$1"'"}}'\n`);
    chmodSync(plugin, 0o755);
    const cases: Record<string, [string, string]> = {
      'CA data, client certificate data, token': [`    server: https://127.0.0.1:6443\n    certificate-authority-data: ${b64('CA DATA')}\n    tls-server-name: api.example`, `    client-certificate-data: ${b64('CERT DATA')}\n    client-key-data: ${b64('KEY DATA')}\n    token: abc`],
      'files relative to the kubeconfig': [`    server: https://127.0.0.1:6443\n    certificate-authority: pki/ca.crt`, `    client-certificate: pki/client.crt\n    client-key: pki/client.key`],
      'basic auth and impersonation, TLS verification off': [`    server: https://127.0.0.1:6443\n    insecure-skip-tls-verify: true`, `    username: alice\n    password: s3cret\n    as: bob`],
      'a token file (auth-provider config)': [`    server: https://127.0.0.1:6443`, `    auth-provider: {name: tokenFile, config: {tokenFile: ${join(dir, 'token')}}}`],
      'an exec plugin': [`    server: https://127.0.0.1:6443`, `    exec: {apiVersion: client.authentication.k8s.io/v1, command: ${plugin}, args: [one], interactiveMode: Never}`],
      'plain http without skipping TLS verification': [`    server: http://127.0.0.1:8080`, `    token: abc`],
      'plain http with TLS verification off': [`    server: http://127.0.0.1:8080\n    insecure-skip-tls-verify: true`, `    token: abc`],
    };
    for (const [name, [cluster, user]] of Object.entries(cases)) {
      const file = join(dir, `${name.replace(/\W+/g, '-')}.kubeconfig`);
      writeFileSync(file, kubeconfigYaml(cluster, user));
      const ours = new KubeConfig();
      ours.loadFromFile(file);
      const theirs = new Full();
      theirs.loadFromFile(file);
      assert.deepEqual(ours.getCurrentCluster(), theirs.getCurrentCluster(), `${name}: the current cluster`);
      assert.deepEqual(ours.getCurrentUser(), theirs.getCurrentUser(), `${name}: the current user`);
      assert.deepEqual(await applied(ours), await applied(theirs), `${name}: applyToHTTPSOptions`);
    }
    // The cases say something: spot-check what they yield.
    const one = new KubeConfig();
    one.loadFromFile(join(dir, 'an-exec-plugin.kubeconfig'));
    assert.deepEqual(await applied(one), { headers: { Authorization: 'Bearer exec-token-one' } });
    const http = new KubeConfig();
    http.loadFromFile(join(dir, 'plain-http-without-skipping-TLS-verification.kubeconfig'));
    assert.deepEqual(await applied(http), { error: 'HTTP protocol is not allowed when skipTLSVerify is not set or false' });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the in-cluster config: the service account CA, its rotating token file, its namespace', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'kubeconfig-incluster-'));
  const env = { host: process.env.KUBERNETES_SERVICE_HOST, port: process.env.KUBERNETES_SERVICE_PORT };
  try {
    const sa = join(dir, 'var/run/secrets/kubernetes.io/serviceaccount');
    mkdirSync(sa, { recursive: true });
    writeFileSync(join(sa, 'ca.crt'), 'IN-CLUSTER CA');
    writeFileSync(join(sa, 'token'), 'sa-token');
    writeFileSync(join(sa, 'namespace'), 'reverser-system');
    process.env.KUBERNETES_SERVICE_HOST = 'fd00::1';
    process.env.KUBERNETES_SERVICE_PORT = '443';
    const ours = new KubeConfig();
    ours.loadFromCluster(dir);
    const theirs = new Full();
    theirs.loadFromCluster(dir);
    assert.equal(ours.getCurrentCluster()!.server, 'https://[fd00::1]:443');
    assert.deepEqual(ours.getCurrentCluster(), theirs.getCurrentCluster());
    assert.deepEqual(ours.getCurrentUser(), theirs.getCurrentUser());
    assert.deepEqual(ours.contexts, theirs.contexts);
    assert.deepEqual(await applied(ours), { ca: 'IN-CLUSTER CA', headers: { Authorization: 'Bearer sa-token' } });
  } finally {
    for (const [k, v] of [['KUBERNETES_SERVICE_HOST', env.host], ['KUBERNETES_SERVICE_PORT', env.port]] as const) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    rmSync(dir, { recursive: true, force: true });
  }
});

test('loading the kubeconfig, the hosting-cluster client and the controllers loads none of the generated API client', async () => {
  // A child process with a module hook that records every module it loads (ESM modules do not
  // show in the require cache).
  const dir = mkdtempSync(join(tmpdir(), 'kubeconfig-loads-'));
  try {
    const list = join(dir, 'loaded.txt');
    const hook = join(dir, 'hook.mjs');
    writeFileSync(hook, `import { appendFileSync } from 'node:fs';\nexport async function load(url, ctx, next) { appendFileSync(${JSON.stringify(list)}, url + '\\n'); return next(url, ctx); }\n`);
    const register = `import { register } from 'node:module'; register(${JSON.stringify(`file://${hook}`)});`;
    const src = (p: string) => JSON.stringify(fileURLToPath(new URL(`../../src/${p}`, import.meta.url)));
    const main = `const { KubeConfig } = await import(${src('kubeconfig/kubeconfig.js')}); await import(${src('auth/hosting.js')}); await import(${src('controllers/index.js')});
const kc = new KubeConfig(); kc.loadFromString('current-context: c\\ncontexts: [{name: c, context: {cluster: k, user: u}}]\\nclusters: [{name: k, cluster: {server: "https://127.0.0.1:1"}}]\\nusers: [{name: u, user: {token: t}}]\\n');
const o = {}; await kc.applyToHTTPSOptions(o); process.stdout.write(o.headers.Authorization);`;
    const child = spawn(process.execPath, ['--import', `data:text/javascript,${encodeURIComponent(register)}`, '--input-type=module', '-e', main], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c));
    child.stderr.on('data', (c: Buffer) => (out += c));
    const code = await withDeadline(new Promise<number | null>((r) => child.once('exit', r)), 'the child process importing the modules', 30_000, () => child.kill('SIGKILL'));
    assert.equal(code, 0, out);
    assert.equal(out, 'Bearer t');
    const loaded = readFileSync(list, 'utf8').split('\n').filter(Boolean);
    const fromLibrary = loaded.filter((u) => u.includes('/node_modules/@kubernetes/client-node/')).map((u) => u.replace(/.*\/client-node\//, ''));
    assert.ok(loaded.some((u) => u.endsWith('/src/controllers/index.js')), 'the hook saw the controllers load');
    assert.deepEqual(fromLibrary.sort(), ['dist/config_types.js', 'dist/exec_auth.js', 'dist/file_auth.js']);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
