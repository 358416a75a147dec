// kubectl against the sandbox (`serve --sandbox`) as against a cluster: namespaces with their
// kube-root-ca.crt, configmaps created from literals (kubectl sends them as protobuf), get -o yaml,
// tables, get -w, edit (a strategic merge patch), apply, delete, and kubectl's namespace check on
// a NotFound. Run once per kubectl binary.
import { describe, before, after, test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, readFileSync } from 'node:fs';
import { parse as parseYAML } from 'yaml';
import { Kubectl, kubectlBinary, type RunResult } from '../support/kubectl.js';
import { startServer, type StartedServer } from '../support/server.js';

export function ok(r: RunResult, stdout?: string | RegExp): void {
  const ctx = `exit ${r.code}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`;
  assert.equal(r.stderr, '', ctx);
  assert.equal(r.code, 0, ctx);
  if (typeof stdout === 'string') assert.equal(r.stdout, stdout, ctx);
  else if (stdout) assert.match(r.stdout, stdout, ctx);
}

export function failed(r: RunResult, stderr: string): void {
  assert.equal(r.stderr, stderr, `stdout:\n${r.stdout}`);
  assert.equal(r.code, 1);
  assert.equal(r.stdout, '');
}

/** Table rows of `kubectl get` output, columns split on runs of spaces, AGE dropped. */
export function rows(out: string): string[][] {
  return out
    .trim()
    .split('\n')
    .map((l) => l.trim().split(/\s{2,}/).slice(0, -1));
}

export function sandboxKubectlScenario(version: string | undefined): void {
  describe(`sandbox with ${version ? `kubectl ${version}` : 'kubectl (PATH)'}`, { concurrency: false, timeout: 180_000 }, () => {
    let server: StartedServer;
    let k: Kubectl;

    before(async () => {
      server = await startServer(['--sandbox']);
      k = new Kubectl(kubectlBinary(version), server.kubeconfig);
    });
    after(async () => {
      k?.cleanup();
      await server?.stop();
    });

    test('a fresh sandbox has the namespaces of a fresh cluster, each with its kube-root-ca.crt', async () => {
      const r = await k.run(['get', 'namespaces']);
      ok(r);
      assert.deepEqual(rows(r.stdout), [['NAME', 'STATUS'], ['default', 'Active'], ['kube-node-lease', 'Active'], ['kube-public', 'Active'], ['kube-system', 'Active']]);
      const cms = await k.run(['get', 'configmaps', '-A', '-o', 'jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name}{"\\n"}{end}']);
      ok(cms, 'default/kube-root-ca.crt\nkube-node-lease/kube-root-ca.crt\nkube-public/kube-root-ca.crt\nkube-system/kube-root-ca.crt\n');
    });

    test('create namespace: Active, with kube-root-ca.crt holding the server CA', async () => {
      ok(await k.run(['create', 'namespace', 'team-a']), 'namespace/team-a created\n');
      const ns = parseYAML((await k.run(['get', 'namespace', 'team-a', '-o', 'yaml'])).stdout);
      assert.deepEqual(Object.keys(ns.metadata).sort(), ['creationTimestamp', 'name', 'resourceVersion', 'uid']);
      assert.deepEqual(ns.status, { phase: 'Active' });
      const cm = await k.run(['get', 'configmap', 'kube-root-ca.crt', '-n', 'team-a', '-o', 'jsonpath={.data.ca\\.crt}']);
      ok(cm, server.ca);
      assert.equal(server.ca, readFileSync(`${server.dataDir}/certs/ca.crt`, 'utf8'));
    });

    test('create configmap --from-literal, get -o yaml and the table', async () => {
      ok(await k.run(['create', 'configmap', 'demo', '-n', 'team-a', '--from-literal=greeting=hello', '--from-literal=color=blue']), 'configmap/demo created\n');
      const r = await k.run(['get', 'configmap', 'demo', '-n', 'team-a', '-o', 'yaml']);
      ok(r);
      const cm = parseYAML(r.stdout);
      assert.equal(cm.apiVersion, 'v1');
      assert.equal(cm.kind, 'ConfigMap');
      assert.deepEqual(cm.data, { color: 'blue', greeting: 'hello' });
      assert.deepEqual(Object.keys(cm.metadata).sort(), ['creationTimestamp', 'name', 'namespace', 'resourceVersion', 'uid']);
      assert.equal(cm.metadata.namespace, 'team-a');
      const table = await k.run(['get', 'configmaps', '-n', 'team-a']);
      ok(table);
      assert.deepEqual(rows(table.stdout), [['NAME', 'DATA'], ['demo', '2'], ['kube-root-ca.crt', '1']]);
      ok(await k.run(['get', 'cm', 'demo', '-n', 'team-a', '-o', 'name']), 'configmap/demo\n');
    });

    test('get gt missing -n team-a names the GitTarget; a missing namespace is named', async () => {
      failed(await k.run(['get', 'gt', 'missing', '-n', 'team-a']), 'Error from server (NotFound): gittargets.configbutler.ai "missing" not found\n');
      failed(await k.run(['get', 'gt', 'missing', '-n', 'nowhere']), 'Error from server (NotFound): namespaces "nowhere" not found\n');
      failed(await k.run(['get', 'cm', 'missing', '-n', 'team-a']), 'Error from server (NotFound): configmaps "missing" not found\n');
    });

    test('creating in a namespace that does not exist is refused with NotFound', async () => {
      const r = await k.run(['create', 'configmap', 'x', '-n', 'nowhere', '--from-literal=a=b']);
      assert.equal(r.code, 1);
      assert.equal(r.stderr, 'error: failed to create configmap: namespaces "nowhere" not found\n');
      const raw = await server.request('POST', '/api/v1/namespaces/nowhere/configmaps', { body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' } } });
      assert.equal(raw.status, 404);
      assert.equal(raw.body.reason, 'NotFound');
      assert.equal(raw.body.message, 'namespaces "nowhere" not found');
      assert.deepEqual(raw.body.details, { name: 'nowhere', kind: 'namespaces' });
    });

    test('get -w shows edits (kubectl edit) and deletes; edit is one strategic merge patch', async () => {
      const before = parseYAML((await k.run(['get', 'cm', 'demo', '-n', 'team-a', '-o', 'yaml'])).stdout);
      const w = k.start(['get', 'configmaps', '-n', 'team-a', '-w', '--output-watch-events']);
      try {
        await w.waitFor((l) => l.some((x) => /^ADDED\s+demo\s+2\s/.test(x)), 'the initial ADDED of demo');
        const editor = k.file('editor.sh', "#!/bin/sh\nsed -i 's/^  greeting: hello$/  greeting: edited/' \"$1\"\n");
        chmodSync(editor, 0o755);
        const edited = await k.run(['edit', 'configmap', 'demo', '-n', 'team-a'], { env: { KUBE_EDITOR: editor } });
        ok(edited, 'configmap/demo edited\n');
        await w.waitFor((l) => l.some((x) => /^MODIFIED\s+demo\s+2\s/.test(x)), 'MODIFIED demo');
        const after = parseYAML((await k.run(['get', 'cm', 'demo', '-n', 'team-a', '-o', 'yaml'])).stdout);
        assert.deepEqual(after.data, { color: 'blue', greeting: 'edited' });
        assert.ok(Number(after.metadata.resourceVersion) > Number(before.metadata.resourceVersion));
        assert.equal(after.metadata.uid, before.metadata.uid);
        ok(await k.run(['delete', 'configmap', 'demo', '-n', 'team-a']), 'configmap "demo" deleted\n');
        await w.waitFor((l) => l.some((x) => /^DELETED\s+demo\s+2\s/.test(x)), 'DELETED demo');
      } finally {
        await w.stop();
      }
      failed(await k.run(['get', 'cm', 'demo', '-n', 'team-a']), 'Error from server (NotFound): configmaps "demo" not found\n');
    });

    test('explain reads the served OpenAPI of the core kinds', async () => {
      ok(await k.run(['explain', 'configmap.data']), /data\s+<map\[string\]string>/);
      ok(await k.run(['explain', 'namespace.status.phase']), /phase\s+<string>/);
    });

    test('apply -f of a ConfigMap creates, then patches', async () => {
      const manifest = (v: string) => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\n  namespace: team-a\ndata:\n  key: ${v}\n`;
      ok(await k.run(['apply', '-f', k.file('cm1.yaml', manifest('one'))]), 'configmap/applied created\n');
      ok(await k.run(['apply', '-f', k.file('cm2.yaml', manifest('two'))]), 'configmap/applied configured\n');
      ok(await k.run(['get', 'cm', 'applied', '-n', 'team-a', '-o', 'jsonpath={.data.key}']), 'two');
    });

    test('secrets and serviceaccounts from kubectl create', async () => {
      ok(await k.run(['create', 'secret', 'generic', 'creds', '-n', 'team-a', '--from-literal=token=s3cr3t']), 'secret/creds created\n');
      const s = parseYAML((await k.run(['get', 'secret', 'creds', '-n', 'team-a', '-o', 'yaml'])).stdout);
      assert.deepEqual(s.data, { token: Buffer.from('s3cr3t').toString('base64') });
      assert.equal(s.type, 'Opaque');
      const table = await k.run(['get', 'secrets', '-n', 'team-a']);
      assert.deepEqual(rows(table.stdout), [['NAME', 'TYPE', 'DATA'], ['creds', 'Opaque', '1']]);
      ok(await k.run(['create', 'serviceaccount', 'robot', '-n', 'team-a']), 'serviceaccount/robot created\n');
      assert.deepEqual(rows((await k.run(['get', 'sa', '-n', 'team-a'])).stdout), [['NAME', 'SECRETS'], ['robot', '0']]);
    });

    test('deleting a namespace deletes what it held', async () => {
      ok(await k.run(['delete', 'namespace', 'team-a']), 'namespace "team-a" deleted\n');
      failed(await k.run(['get', 'namespace', 'team-a']), 'Error from server (NotFound): namespaces "team-a" not found\n');
      for (const kind of ['configmaps', 'secrets', 'serviceaccounts']) {
        const r = await server.get(`/api/v1/namespaces/team-a/${kind}`);
        assert.equal(r.status, 200);
        assert.deepEqual(r.body.items, [], kind);
      }
    });
  });
}
