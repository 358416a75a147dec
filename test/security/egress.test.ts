// Egress and credentials, as a tenant: a repository URL on a cloud metadata address is refused at
// create; a name that resolves to a denied address is refused when connecting (DNS rebinding on
// loopback: a resolver that answers 127.0.0.1 first and 127.0.0.2 next, with 127.0.0.2/32 denied);
// credentials never go over plain http:// unless the operator opts in; and through a whole server
// with --egress-deny-cidrs covering loopback, a git remote and a kubeconfig Secret server named
// `localhost` are refused at connect with their condition, while the operator's own default source
// (the sandbox, also on loopback) keeps working.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { createHttpClient } from '../../src/git/http-client.js';
import { GitEngine } from '../../src/git/index.js';
import { GitEngineError } from '../../src/git/errors.js';
import { EgressPolicy } from '../../src/net/egress.js';
import { startGitServer, type GitServer } from '../support/git-server.js';
import { startServer, ns, type StartedServer } from '../support/server.js';
import { until } from '../support/deadline.js';
import { ok, startMirroringServer, startSandbox, type Sandbox } from '../mirror/harness.js';
import type { Kubectl } from '../support/kubectl.js';

const gt = (name: string, url: string, extra: Record<string, unknown> = {}) => ({
  apiVersion: 'configbutler.ai/v1alpha1',
  kind: 'GitTarget',
  metadata: { name, namespace: 'default' },
  spec: { repository: { url }, branch: 'main', path: 'mirror', commit: { idleSeconds: 1 }, resources: [{ group: '', version: 'v1', resource: 'configmaps', namespaces: ['team-a'] }], ...extra },
});

test('a repository URL on a metadata address or name is refused at create with 422', { timeout: 60_000 }, async () => {
  const server = await startServer();
  try {
    const cases: Array<[string, string]> = [
      ['http://169.254.169.254/latest/meta-data', '169.254.169.254 is a link-local (cloud metadata) address; the server never connects there'],
      ['https://[fd00:ec2::254]/repo.git', 'fd00:ec2::254 is a link-local (cloud metadata) address; the server never connects there'],
      ['https://[fe80::1]/repo.git', 'fe80::1 is a link-local (cloud metadata) address; the server never connects there'],
      ['http://metadata.google.internal/computeMetadata/v1/', '"metadata.google.internal" is a cloud metadata service name; the server never connects there'],
      ['http://0xA9FEA9FE/repo.git', '169.254.169.254 is a link-local (cloud metadata) address; the server never connects there'],
    ];
    for (const [url, why] of cases) {
      const r = await server.request('POST', ns('default'), { body: gt('meta', url) });
      assert.equal(r.status, 422, r.text);
      assert.equal(r.body.reason, 'Invalid');
      assert.deepEqual(r.body.details.causes, [{ reason: 'FieldValueInvalid', field: 'spec.repository.url', message: `Invalid value: ${JSON.stringify(url)}: repository URL host ${why}` }]);
    }
    assert.equal((await server.request('GET', `${ns('default')}/meta`)).status, 404, 'nothing was stored');
  } finally {
    await server.stop();
  }
});

test('DNS rebinding: a name allowed on one lookup and denied on the next is refused at connect', { timeout: 30_000 }, async () => {
  const seen: string[] = [];
  const listen = (host: string, port = 0) =>
    new Promise<http.Server>((resolve, reject) => {
      const s = http.createServer((req, res) => {
        seen.push(`${host} ${req.method} ${req.url}`);
        res.writeHead(200, { connection: 'close', 'content-type': 'text/plain' });
        res.end('ok');
      });
      s.once('error', reject);
      s.listen(port, host, () => resolve(s));
    });
  const good = await listen('127.0.0.1');
  const port = (good.address() as AddressInfo).port;
  const bad = await listen('127.0.0.2', port);
  try {
    const answers = ['127.0.0.1', '127.0.0.2'];
    const policy = new EgressPolicy({ denyCIDRs: ['127.0.0.2/32'] }, (_host, cb) => cb(null, [{ address: answers.shift() ?? '127.0.0.2', family: 4 }]));
    const client = createHttpClient(5_000, policy);
    const first = await client.request({ url: `http://rebind.test:${port}/a`, method: 'GET', headers: {} });
    assert.equal(first.statusCode, 200);
    await assert.rejects(client.request({ url: `http://rebind.test:${port}/b`, method: 'GET', headers: {} }), {
      code: 'EGRESS_DENIED',
      message: 'egress to rebind.test (127.0.0.2) is refused by --egress-deny-cidrs',
    });
    // The literal is refused before any socket opens.
    await assert.rejects(client.request({ url: `http://127.0.0.2:${port}/c`, method: 'GET', headers: {} }), { code: 'EGRESS_DENIED', message: 'egress to 127.0.0.2 is refused by --egress-deny-cidrs' });
    assert.deepEqual(seen, ['127.0.0.1 GET /a']);
  } finally {
    good.close();
    bad.close();
  }
});

test('the git engine sends no credentials over http:// unless allowed, and refuses a denied remote', { timeout: 60_000 }, async () => {
  const remote = await startGitServer();
  const dirs: string[] = [];
  const dataDir = () => {
    const d = mkdtempSync(join(tmpdir(), 'egress-engine-'));
    dirs.push(d);
    return d;
  };
  try {
    remote.createBareRepo('plain');
    const input = {
      repository: { url: remote.url('plain'), credentials: { username: remote.username, password: remote.password } },
      branch: 'main',
      folder: '.',
      changes: [{ op: 'write' as const, object: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a', namespace: 'n' }, data: { k: 'v' } } }],
      author: { name: 'A', email: 'a@example.com' },
      message: 'm',
    };
    await assert.rejects(new GitEngine({ dataDir: dataDir() }).commit(input), (e: unknown) => {
      assert.ok(e instanceof GitEngineError);
      assert.equal(e.reason, 'InsecureCredentials');
      assert.equal(e.message, `the credentials in spec.repository.secretRef would be sent in cleartext to ${remote.url('plain')}; use https:// (the server's --allow-insecure-credentials is for development only)`);
      return true;
    });
    assert.deepEqual(remote.requests, [], 'no request reached the server');
    const denied = new GitEngine({ dataDir: dataDir(), allowInsecureCredentials: true, egress: { denyCIDRs: ['127.0.0.0/8', '::1/128'] } });
    const viaName = { ...input, repository: { ...input.repository, url: remote.url('plain').replace('127.0.0.1', 'localhost') } };
    await assert.rejects(denied.commit(viaName), (e: unknown) => {
      assert.ok(e instanceof GitEngineError);
      assert.equal(e.reason, 'EgressDenied');
      assert.match(e.message, /: egress to localhost \((127\.0\.0\.1|::1)\) is refused by --egress-deny-cidrs$/);
      return true;
    });
    assert.deepEqual(remote.requests, [], 'no request reached the server');
    // The opt-in works (development): the same commit is pushed.
    const pushed = await new GitEngine({ dataDir: dataDir(), allowInsecureCredentials: true }).commit(input);
    assert.match(pushed.sha ?? '', /^[0-9a-f]{40}$/);
  } finally {
    await remote.close();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  }
});

let hosting: Sandbox;
let server: StartedServer & { kubectl: Kubectl };
let remote: GitServer;

before(async () => {
  remote = await startGitServer({ anonymous: true });
  remote.createBareRepo('team-a');
  hosting = await startSandbox();
  server = await startMirroringServer(hosting, ['--allow-insecure-credentials=false', '--egress-deny-cidrs=127.0.0.0/8,::1/128']);
  await ok(hosting.kubectl, ['create', 'namespace', 'team-a']);
  await ok(hosting.kubectl, ['create', 'configmap', 'settings', '-n', 'team-a', '--from-literal=k=v']);
});

after(async () => {
  await server?.stop();
  await hosting?.destroy();
  await remote?.close();
});

async function condition(name: string, type: string): Promise<{ status: string; reason: string; message: string }> {
  const obj = parse(await ok(server.kubectl, ['get', 'gittarget', name, '-n', 'default', '-o', 'yaml']));
  const c = (obj.status?.conditions ?? []).find((x: any) => x.type === type);
  return c ? { status: c.status, reason: c.reason, message: c.message } : { status: '', reason: '', message: '' };
}

test('a whole server with loopback denied: the remote and a kubeconfig server are refused at connect; the default source works', { timeout: 150_000 }, async () => {
  const viaName = remote.url('team-a').replace('127.0.0.1', 'localhost');
  await ok(server.kubectl, ['apply', '-f', '-'], JSON.stringify(gt('remote-by-name', viaName)));
  await ok(server.kubectl, ['apply', '-f', '-'], JSON.stringify(gt('creds-over-http', remote.url('team-a'), { repository: { url: remote.url('team-a'), secretRef: { name: 'git-creds' } } })));
  const kc = parse(readFileSync(hosting.kubeconfig, 'utf8'));
  kc.clusters[0].cluster.server = kc.clusters[0].cluster.server.replace('127.0.0.1', 'localhost');
  await ok(hosting.kubectl, ['create', 'secret', 'generic', 'via-localhost', '-n', 'default', `--from-literal=value=${JSON.stringify(kc)}`]);
  await ok(server.kubectl, ['apply', '-f', '-'], JSON.stringify(gt('source-by-name', 'local:source-by-name', { source: { kubeConfig: { secretRef: { name: 'via-localhost' } } } })));

  await until(async () => (await condition('remote-by-name', 'RepositoryReady')).status === 'False', 'RepositoryReady=False on remote-by-name', 60_000, 250);
  const repo = await condition('remote-by-name', 'RepositoryReady');
  assert.equal(repo.reason, 'EgressDenied');
  assert.match(repo.message, new RegExp(`^${viaName.replace(/[.?]/g, '\\$&')}: egress to localhost \\((127\\.0\\.0\\.1|::1)\\) is refused by --egress-deny-cidrs$`));
  // The operator's default source is on loopback too, and is not a tenant's choice: it is mirrored.
  assert.equal((await condition('remote-by-name', 'SourceReachable')).status, 'True');
  assert.deepEqual(remote.requests, [], 'no request reached the git server');

  await until(async () => (await condition('creds-over-http', 'Validated')).status === 'False', 'Validated=False on creds-over-http', 30_000, 250);
  assert.deepEqual(await condition('creds-over-http', 'Validated'), {
    status: 'False',
    reason: 'InsecureCredentials',
    message: `the credentials in spec.repository.secretRef would be sent in cleartext to ${remote.url('team-a')}; use https:// (the server's --allow-insecure-credentials is for development only)`,
  });

  await until(async () => (await condition('source-by-name', 'SourceReachable')).status === 'False', 'SourceReachable=False on source-by-name', 60_000, 250);
  const src = await condition('source-by-name', 'SourceReachable');
  assert.equal(src.reason, 'EgressDenied');
  assert.match(src.message, /^egress to localhost \((127\.0\.0\.1|::1)\) is refused by --egress-deny-cidrs$/);
  assert.deepEqual(remote.requests, []);
});
