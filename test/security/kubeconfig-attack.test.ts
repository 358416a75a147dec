// The kubeconfig Secret attack, as a tenant: a Secret whose user hides `exec` behind a YAML merge key
// (or an alias, or a tag), or names a file the server would read (`token-file`, `tokenFile`,
// `client-certificate`, `certificate-authority`), in YAML and in JSON. Each GitTarget naming one
// must end Validated=False with its exact reason and message; the exec command must not run (it
// would create a marker file) and no request may reach the tenant's listener (an HTTPS server on
// loopback that records every Authorization header). The control: a clean kubeconfig naming the
// same listener is accepted and its token arrives there, so the listener would have seen a leak.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:https';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { parse } from 'yaml';
import { until } from '../support/deadline.js';
import { issueServerCert, makeCA } from '../support/pki.js';
import { ok, startMirroringServer, startSandbox, type Sandbox } from '../mirror/harness.js';
import type { StartedServer } from '../support/server.js';
import type { Kubectl } from '../support/kubectl.js';

const NS = 'tenant';
let hosting: Sandbox;
let server: StartedServer & { kubectl: Kubectl };
let listener: Server;
let listenerURL: string;
let caData: string;
let dir: string;
const seen: Array<{ path: string; authorization: string }> = [];

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'kubeconfig-attack-'));
  const ca = makeCA('tenant-listener-ca');
  const leaf = issueServerCert(ca, 'localhost');
  caData = Buffer.from(ca.certPem).toString('base64');
  listener = createServer({ cert: leaf.certPem, key: leaf.keyPem }, (req, res) => {
    seen.push({ path: req.url ?? '', authorization: String(req.headers.authorization ?? '') });
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end('{"kind":"Status","apiVersion":"v1","status":"Failure","code":404}');
  });
  await new Promise<void>((r) => listener.listen(0, '127.0.0.1', r));
  listenerURL = `https://127.0.0.1:${(listener.address() as AddressInfo).port}`;
  hosting = await startSandbox();
  server = await startMirroringServer(hosting);
  await ok(hosting.kubectl, ['create', 'namespace', NS]);
});

after(async () => {
  await server?.stop();
  await hosting?.destroy();
  await new Promise<void>((r) => (listener ? listener.close(() => r()) : r()));
  rmSync(dir, { recursive: true, force: true });
});

function target(name: string): string {
  return JSON.stringify({
    apiVersion: 'configbutler.ai/v1alpha1',
    kind: 'GitTarget',
    metadata: { name, namespace: NS },
    spec: {
      repository: { url: `local:${name}` },
      branch: 'main',
      path: 'mirror',
      source: { kubeConfig: { secretRef: { name } } },
      commit: { idleSeconds: 1 },
      resources: [{ group: '', version: 'v1', resource: 'configmaps', namespaces: ['team-a'] }],
    },
  });
}

async function condition(name: string, type: string): Promise<{ status: string; reason: string; message: string }> {
  const obj = parse(await ok(server.kubectl, ['get', 'gittarget', name, '-n', NS, '-o', 'yaml']));
  const c = (obj.status?.conditions ?? []).find((x: any) => x.type === type);
  return c ? { status: c.status, reason: c.reason, message: c.message } : { status: '', reason: '', message: '' };
}

async function secret(name: string, text: string): Promise<void> {
  const body = { apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace: NS }, data: { value: Buffer.from(text).toString('base64') } };
  await ok(hosting.kubectl, ['apply', '-f', '-'], JSON.stringify(body));
}

test('kubeconfig Secrets that hide exec or name a file are refused; nothing runs, nothing is read or sent', { timeout: 180_000 }, async () => {
  const marker = join(dir, 'exec-ran');
  const tokenPath = join(dir, 'server-token');
  writeFileSync(tokenPath, 'file-secret-0d1f2e');
  const cred = JSON.stringify({ apiVersion: 'client.authentication.k8s.io/v1beta1', kind: 'ExecCredential', status: { token: 'exec-token' } });
  const exec = `{apiVersion: client.authentication.k8s.io/v1beta1, command: /bin/sh, args: [-c, ${JSON.stringify(`touch ${marker}; echo '${cred}'`)}]}`;
  const cluster = `clusters:\n- name: c\n  cluster: {server: "${listenerURL}", certificate-authority-data: ${caData}}\n`;
  const tail = 'contexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n';
  const yamlWith = (user: string, extra = '') => `apiVersion: v1\nkind: Config\n${extra}${cluster}users:\n- name: u\n  user: ${user}\n${tail}`;
  const jsonWith = (user: Record<string, unknown>) =>
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'c', cluster: { server: listenerURL, 'certificate-authority-data': caData } }],
      users: [{ name: 'u', user }],
      contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
      'current-context': 'x',
    });
  const yamlFeature = 'YAML merge keys, anchors, aliases and tags are refused in a kubeconfig Secret';
  const cases: Array<{ name: string; text: string; reason: string; message: string }> = [
    { name: 'merge-exec', text: yamlWith(`{<<: {exec: ${exec}}}`), reason: 'KubeConfigYAMLFeatureNotAllowed', message: `uses a merge key (<<); ${yamlFeature}` },
    {
      name: 'alias-exec',
      text: yamlWith('{<<: *hidden}', `x-hidden: &hidden {exec: ${exec}}\n`),
      reason: 'KubeConfigYAMLFeatureNotAllowed',
      message: `uses an anchor (&hidden); ${yamlFeature}`,
    },
    { name: 'tagged-token', text: yamlWith('{token: !!binary ZmlsZS1zZWNyZXQ=}'), reason: 'KubeConfigYAMLFeatureNotAllowed', message: `uses a tag (!!binary); ${yamlFeature}` },
    { name: 'exec', text: yamlWith(`{exec: ${exec}}`), reason: 'KubeConfigExecNotAllowed', message: ': user "u" uses exec, which would run code in the server; use a token or a client certificate (*-data)' },
    { name: 'auth-provider', text: yamlWith('{auth-provider: {name: oidc}}'), reason: 'KubeConfigExecNotAllowed', message: ': user "u" uses auth-provider, which would run code in the server; use a token or a client certificate (*-data)' },
    { name: 'token-file', text: yamlWith(`{token-file: ${tokenPath}}`), reason: 'KubeConfigFileReferenceNotAllowed', message: `: user "u" reads a file (token-file) from the server's disk; use an inline token` },
    { name: 'tokenfile-camel', text: yamlWith(`{tokenFile: ${tokenPath}}`), reason: 'KubeConfigFileReferenceNotAllowed', message: `: user "u" reads a file (tokenFile) from the server's disk; use an inline token` },
    { name: 'client-certificate', text: yamlWith(`{client-certificate: ${tokenPath}, client-key: ${tokenPath}}`), reason: 'KubeConfigFileReferenceNotAllowed', message: `: user "u" reads a file (client-certificate) from the server's disk; use client-certificate-data` },
    {
      name: 'certificate-authority',
      text: yamlWith('{token: t}').replace(`certificate-authority-data: ${caData}`, `certificate-authority: ${tokenPath}`),
      reason: 'KubeConfigFileReferenceNotAllowed',
      message: `: cluster "c" reads a file (certificate-authority) from the server's disk; use certificate-authority-data`,
    },
    { name: 'json-token-file', text: jsonWith({ 'token-file': tokenPath }), reason: 'KubeConfigFileReferenceNotAllowed', message: `: user "u" reads a file (token-file) from the server's disk; use an inline token` },
    {
      name: 'json-duplicate',
      text: jsonWith({ token: 'x' }).replace('"user":{"token":"x"}', `"user":{"token":"x","token":"y"}`),
      reason: 'KubeConfigInvalid',
      message: 'is not valid YAML: Map keys must be unique',
    },
    { name: 'yaml-duplicate', text: yamlWith(`{token: a, token: b}`), reason: 'KubeConfigInvalid', message: 'is not valid YAML: Map keys must be unique' },
  ];
  for (const c of cases) await secret(c.name, c.text);
  for (const c of cases) await ok(server.kubectl, ['apply', '-f', '-'], target(c.name));
  for (const c of cases) {
    await until(async () => (await condition(c.name, 'Validated')).status === 'False', `Validated=False on ${c.name}`, 30_000, 200);
    const got = await condition(c.name, 'Validated');
    const sep = c.message.startsWith(': ') ? '' : ' ';
    assert.deepEqual(got, { status: 'False', reason: c.reason, message: `the kubeconfig in Secret "${c.name}"${sep}${c.message}` }, c.name);
  }

  // The control: the same listener, a clean kubeconfig: accepted, and its token arrives.
  await secret('control', yamlWith('{token: control-token-77}'));
  await ok(server.kubectl, ['apply', '-f', '-'], target('control'));
  await until(() => seen.some((s) => s.authorization === 'Bearer control-token-77'), 'the control token at the listener', 30_000, 100);
  assert.equal((await condition('control', 'Validated')).status, 'True');
  // By now every refused target has been re-checked at least once more (the mirror re-checks every 10 s at most).
  assert.equal(existsSync(marker), false, 'the exec plugin ran inside the server');
  assert.deepEqual(
    seen.filter((s) => s.authorization !== 'Bearer control-token-77'),
    [],
    'a refused kubeconfig reached the listener',
  );
  assert.ok(!server.stderr().includes('file-secret-0d1f2e'));
});
