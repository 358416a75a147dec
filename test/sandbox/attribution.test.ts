// Attribution from the sandbox's own request path: with `serve --sandbox` (RBAC, no audit listener)
// every write of a sandbox object records who made it, and the mirror's commits are authored per
// person. alice and bob get kubeconfigs from `reverser-apiserver kubeconfig` (client certificates
// signed by the dev CA) and each `kubectl edit`s a ConfigMap; an admin's `kubectl --as carol edit`
// is carol's; a deletecollection names its deleter. The grace is 60 s on purpose: a commit that
// had to wait for its fact would miss every deadline below, so passing proves the fact was there
// when the mirror saw the change. Also: `kubectl auth can-i` and `kubectl auth whoami` print what
// kube-apiserver prints for the same users and grants.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { X509Certificate, createHash } from 'node:crypto';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYAML } from 'yaml';
import { startServer, type StartedServer } from '../support/server.js';
import { Kubectl, kubectlBinary, type RunResult } from '../support/kubectl.js';
import { until, waitMs } from '../support/deadline.js';
import { git } from '../git/git-cli.js';

const MAIN = fileURLToPath(new URL('../../src/cli/main.js', import.meta.url));
const SERVER = 'reverser-apiserver';
const SNAPSHOT = `${SERVER} <${SERVER}@localhost> | ${SERVER}`;

const POLICY = `
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: config-editor, namespace: team-a}
rules:
- apiGroups: [""]
  resources: [configmaps]
  verbs: [get, list, watch, create, update, patch, delete, deletecollection]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: team-a-config-editors, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: config-editor}
subjects:
- {kind: Group, apiGroup: rbac.authorization.k8s.io, name: team-a}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: gitops-author}
rules:
- apiGroups: [configbutler.ai]
  resources: [gittargets, commitrequests]
  verbs: [get, list, watch, create]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: team-a-gitops-authors}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: gitops-author}
subjects:
- {kind: Group, apiGroup: rbac.authorization.k8s.io, name: team-a}
`;

function ok(r: RunResult, stdout?: string): string {
  const ctx = `exit ${r.code}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`;
  assert.equal(r.code, 0, ctx);
  if (stdout !== undefined) assert.equal(r.stdout, stdout, ctx);
  return r.stdout;
}

function run(cmd: string, args: string[]): Promise<RunResult> {
  return new Promise((resolve) => {
    execFile(cmd, args, { timeout: waitMs(30_000), killSignal: 'SIGKILL' }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : -1) : 0, stdout, stderr });
    });
  });
}

/** `kubectl edit` with an editor that replaces `from` by `to` in the file kubectl opens. */
function editor(k: Kubectl, name: string, from: string, to: string): Record<string, string> {
  const script = k.file(`${name}.sh`, `#!/bin/sh\nsed -i 's/${from}/${to}/' "$1"\n`);
  chmodSync(script, 0o755);
  return { KUBE_EDITOR: script };
}

describe('sandbox attribution and self reviews (RBAC, no audit listener)', { concurrency: false, timeout: 240_000 }, () => {
  let server: StartedServer;
  let admin: Kubectl;
  let alice: Kubectl;
  let bob: Kubectl;
  let bare: string;
  const timings: Record<string, number> = {};

  const log = async (format: string) => (await git(bare, 'log', `--format=${format}`, 'main')).split('\n').filter(Boolean);
  /** Waits for the commit count to reach n; returns how long that took. */
  const commits = async (n: number, what: string): Promise<number> => {
    const t0 = Date.now();
    await until(async () => {
      try {
        return (await log('%H')).length >= n;
      } catch {
        return false;
      }
    }, what, 20_000, 50);
    return Date.now() - t0;
  };

  before(async () => {
    server = await startServer(['--sandbox', '--controllers=all', '--authorization-mode=RBAC', `--authorization-policy-file=${writePolicy()}`, '--attribution-grace=60s']);
    admin = new Kubectl(kubectlBinary(), server.kubeconfig);
    const make = async (user: string) => {
      const file = join(admin.home, `${user}.kubeconfig`);
      const r = await run(process.execPath, [MAIN, 'kubeconfig', '--user', user, '--group', 'team-a', '--data-dir', server.dataDir, '-o', file]);
      ok(r, '');
      assert.equal(r.stderr, `wrote ${file} for user "${user}" in groups "team-a"\n`);
      return new Kubectl(kubectlBinary(), file);
    };
    alice = await make('alice');
    bob = await make('bob');
    bare = join(server.dataDir, 'git', 'default', 'config.git'); // local: repositories are per namespace
  });
  after(async () => {
    for (const k of [admin, alice, bob]) k?.cleanup();
    await server?.stop();
  });

  function writePolicy(): string {
    const p = join(process.env.TMPDIR ?? '/tmp', `sandbox-attr-policy-${process.pid}.yaml`);
    writeFileSync(p, POLICY);
    return p;
  }

  test('alice and bob each edit a ConfigMap: two commits, authored by each, committed by the server', async () => {
    ok(await admin.run(['create', 'namespace', 'team-a']), 'namespace/team-a created\n');
    ok(await admin.run(['create', 'configmap', 'one', '-n', 'team-a', '--from-literal=greeting=hello']));
    ok(await admin.run(['create', 'configmap', 'two', '-n', 'team-a', '--from-literal=greeting=hello']));
    ok(await admin.run(['apply', '-f', '-'], { stdin: JSON.stringify({
      apiVersion: 'configbutler.ai/v1alpha1',
      kind: 'GitTarget',
      metadata: { name: 'tenants', namespace: 'default' },
      spec: { repository: { url: 'local:config' }, branch: 'main', path: 'tenants/a', commit: { idleSeconds: 1 }, resources: [{ group: '', resource: 'configmaps', namespaces: ['team-a'] }] },
    }) }));
    ok(await admin.run(['wait', '--for=condition=Ready', 'gittarget/tenants', '--timeout=40s']));
    await commits(1, 'the snapshot commit');

    ok(await alice.run(['edit', 'configmap', 'one', '-n', 'team-a'], { env: editor(alice, 'alice', 'greeting: hello', 'greeting: hi from alice') }), 'configmap/one edited\n');
    timings.alice = await commits(2, "alice's commit");
    ok(await bob.run(['edit', 'configmap', 'two', '-n', 'team-a'], { env: editor(bob, 'bob', 'greeting: hello', 'greeting: hi from bob') }), 'configmap/two edited\n');
    timings.bob = await commits(3, "bob's commit");

    assert.deepEqual(await log('%an <%ae> | %cn'), [
      'bob <bob@noreply.cluster.local> | reverser-apiserver',
      'alice <alice@noreply.cluster.local> | reverser-apiserver',
      SNAPSHOT,
    ]);
    assert.deepEqual(await log('%s'), ['Update configmaps team-a/two', 'Update configmaps team-a/one', 'Snapshot of default/tenants: 2 objects']);
    assert.equal(await git(bare, 'show', 'main~1:tenants/a/team-a/configmaps/one.yaml'), 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: one\n  namespace: team-a\ndata:\n  greeting: hi from alice\n');
    // No audit route, so no AuditAttribution condition: the sandbox's facts need no delivery to watch.
    const types = ok(await admin.run(['get', 'gittarget', 'tenants', '-o', 'jsonpath={.status.conditions[*].type}']));
    assert.ok(!types.split(' ').includes('AuditAttribution'), types);
  });

  test("an admin's kubectl --as carol edit is carol's commit", async () => {
    ok(await admin.run(['--as', 'carol', '--as-group', 'team-a', 'edit', 'configmap', 'one', '-n', 'team-a'], { env: editor(admin, 'carol', 'hi from alice', 'hi from carol') }), 'configmap/one edited\n');
    timings.carol = await commits(4, "carol's commit");
    assert.deepEqual((await log('%an <%ae> | %cn | %s'))[0], 'carol <carol@noreply.cluster.local> | reverser-apiserver | Update configmaps team-a/one');
  });

  test('a deletecollection names its deleter', async () => {
    const doomed = (name: string) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'team-a', labels: { doomed: 'yes' } }, data: { k: name } });
    ok(await admin.run(['create', '-f', '-'], { stdin: [doomed('old-1'), doomed('old-2')].map((o) => JSON.stringify(o)).join('\n') }));
    await commits(5, "the admin's commit of old-1 and old-2");
    assert.equal((await log('%an | %s'))[0], 'admin | Update 2 objects in default/tenants');
    // kubectl delete -l deletes one by one; the collection DELETE is what a client like a controller sends.
    const r = ok(await bob.run(['delete', '--raw', '/api/v1/namespaces/team-a/configmaps?labelSelector=doomed%3Dyes']));
    assert.deepEqual(JSON.parse(r).items.map((o: { metadata: { name: string } }) => o.metadata.name), ['old-1', 'old-2']);
    timings.deletecollection = await commits(6, "bob's deletecollection commit");
    const [head] = await log('%an <%ae> | %cn | %s');
    assert.equal(head, 'bob <bob@noreply.cluster.local> | reverser-apiserver | Delete 2 objects in default/tenants');
    assert.equal(await git(bare, 'log', '-1', '--format=%b', 'main'), '- delete configmaps team-a/old-1\n- delete configmaps team-a/old-2\n\n');
    // Measured from kubectl's exit to the commit on the branch (idleSeconds 1, grace 60 s).
    process.stdout.write(`# edit-to-commit ms: ${JSON.stringify(timings)}\n`);
    for (const [who, ms] of Object.entries(timings)) assert.ok(ms < waitMs(15_000), `${who}: ${ms} ms`);
  });

  test('kubectl auth can-i answers from the RBAC policy, as kube-apiserver does', async () => {
    ok(await alice.run(['auth', 'can-i', 'create', 'gittargets']), 'yes\n');
    const no = await alice.run(['auth', 'can-i', 'delete', 'gittargets']);
    assert.deepEqual(no, { code: 1, stdout: 'no\n', stderr: '' });
    ok(await bob.run(['auth', 'can-i', 'deletecollection', 'configmaps', '-n', 'team-a']), 'yes\n');
    assert.deepEqual(await bob.run(['auth', 'can-i', 'get', 'configmaps', '-n', 'default']), { code: 1, stdout: 'no\n', stderr: '' });
    ok(await admin.run(['auth', 'can-i', 'delete', 'gittargets']), 'yes\n');
    // Impersonated: carol is asked about, not the admin.
    assert.deepEqual(await admin.run(['auth', 'can-i', 'delete', 'gittargets', '--as', 'carol']), { code: 1, stdout: 'no\n', stderr: '' });
    const list = ok(await bob.run(['auth', 'can-i', '--list', '-n', 'team-a']));
    const rows = list.trim().split('\n').map((l) => l.trim().split(/\s{2,}/));
    assert.deepEqual(rows[0], ['Resources', 'Non-Resource URLs', 'Resource Names', 'Verbs']);
    assert.ok(rows.some((r) => r.join('|') === 'configmaps|[]|[]|[get list watch create update patch delete deletecollection]'), list);
    assert.ok(rows.some((r) => r.join('|') === 'gittargets.configbutler.ai|[]|[]|[get list watch create]'), list);
  });

  test('kubectl auth whoami prints the user, groups and credential id kube-apiserver would', async () => {
    const kc = parseYAML(readFileSync(alice.kubeconfig, 'utf8'));
    const der = new X509Certificate(Buffer.from(kc.users[0].user['client-certificate-data'], 'base64')).raw;
    const id = `X509SHA256=${createHash('sha256').update(der).digest('hex')}`;
    const pad = (s: string) => s.padEnd('Extra: authentication.kubernetes.io/credential-id'.length + 3);
    ok(await alice.run(['auth', 'whoami']), [
      `${pad('ATTRIBUTE')}VALUE`,
      `${pad('Username')}alice`,
      `${pad('Groups')}[team-a system:authenticated]`,
      `${pad('Extra: authentication.kubernetes.io/credential-id')}[${id}]`,
      '',
    ].join('\n'));
    ok(await admin.run(['auth', 'whoami', '--as', 'carol', '--as-group', 'team-a']), 'ATTRIBUTE   VALUE\nUsername    carol\nGroups      [team-a system:authenticated]\n');
  });
});
