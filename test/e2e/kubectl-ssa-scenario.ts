// kubectl server-side apply end to end, run once per kubectl binary (PATH, 1.27, 1.33) by the
// kubectl-ssa*.test.ts files: create by apply, no-op re-apply, a second manager's conflict and
// --force-conflicts, removal of a field dropped from the file, diff --server-side, managedFields
// as kubectl shows them, and the takeover of an object created by client-side apply.
import { describe, before, after, test } from 'node:test';
import assert from 'node:assert/strict';
import { parse as parseYAML } from 'yaml';
import { Kubectl, kubectlBinary, type RunResult } from '../support/kubectl.js';
import { GROUP, VERSION, startServer, type StartedServer } from '../support/server.js';

const GV = `${GROUP}/${VERSION}`;
const g = 'gittarget.configbutler.ai';

function manifest(name: string, o: { idle?: number; labels?: Record<string, string>; resources?: string[]; suspend?: boolean } = {}): string {
  const lines = [`apiVersion: ${GV}`, 'kind: GitTarget', 'metadata:', `  name: ${name}`];
  if (o.labels) lines.push('  labels:', ...Object.entries(o.labels).map(([k, v]) => `    ${k}: "${v}"`));
  lines.push('spec:', '  repository:', '    url: https://example.com/r.git', '  branch: main', '  path: tenants/a');
  if (o.idle !== undefined) lines.push('  commit:', `    idleSeconds: ${o.idle}`);
  if (o.suspend !== undefined) lines.push(`  suspend: ${o.suspend}`);
  if (o.resources) lines.push('  resources:', ...o.resources.map((r) => `  - {group: "", version: v1, resource: ${r}}`));
  return `${lines.join('\n')}\n`;
}

function ok(r: RunResult, stdout?: string | RegExp): void {
  const ctx = `exit ${r.code}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`;
  assert.equal(r.stderr, '', ctx);
  assert.equal(r.code, 0, ctx);
  if (typeof stdout === 'string') assert.equal(r.stdout, stdout, ctx);
  else if (stdout) assert.match(r.stdout, stdout, ctx);
}

/** managedFields of an object as `get -o yaml --show-managed-fields` prints them, times dropped. */
function managedOf(yaml: string): Array<Record<string, unknown>> {
  return (parseYAML(yaml).metadata.managedFields ?? []).map(({ time: _t, ...rest }: Record<string, unknown>) => rest);
}

export function kubectlSSAScenario(version: string | undefined): void {
  const label = version ? `kubectl ${version}` : 'kubectl (PATH)';
  describe(`${label}: server-side apply`, { concurrency: false }, () => {
    let server: StartedServer;
    let k: Kubectl;
    const rv = async (name: string) => (await server.get(`/apis/${GV}/namespaces/default/gittargets/${name}`)).body.metadata.resourceVersion as string;

    before(async () => {
      // API semantics only: no controller writes status behind the test's back.
      server = await startServer(['--controllers=none']);
      k = new Kubectl(kubectlBinary(version), server.kubeconfig);
    });
    after(async () => {
      k?.cleanup();
      await server?.stop();
    });

    test('apply --server-side creates; re-applying is a no-op (resourceVersion unchanged)', async () => {
      const file = k.file('ssa.yaml', manifest('ssa', { idle: 7, labels: { team: 'a', tier: 'x' }, resources: ['configmaps', 'services'] }));
      ok(await k.run(['apply', '--server-side', '-f', file]), `${g}/ssa serverside-applied\n`);
      const first = await rv('ssa');
      ok(await k.run(['apply', '--server-side', '-f', file]), `${g}/ssa serverside-applied\n`);
      assert.equal(await rv('ssa'), first);
    });

    test('get -o yaml --show-managed-fields shows the Apply entry in fieldsV1 format', async () => {
      const r = await k.run(['get', 'gt', 'ssa', '-o', 'yaml', '--show-managed-fields']);
      ok(r);
      assert.match(r.stdout, /^ {4}time: "\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"$/m);
      assert.deepEqual(managedOf(r.stdout), [
        {
          apiVersion: GV,
          fieldsType: 'FieldsV1',
          fieldsV1: {
            'f:metadata': { 'f:labels': { 'f:team': {}, 'f:tier': {} } },
            'f:spec': {
              'f:branch': {},
              'f:commit': { 'f:idleSeconds': {} },
              'f:path': {},
              'f:repository': { 'f:url': {} },
              'f:resources': {
                'k:{"group":"","resource":"configmaps"}': { '.': {}, 'f:group': {}, 'f:resource': {}, 'f:version': {} },
                'k:{"group":"","resource":"services"}': { '.': {}, 'f:group': {}, 'f:resource': {}, 'f:version': {} },
              },
            },
          },
          manager: 'kubectl',
          operation: 'Apply',
        },
      ]);
      const hidden = await k.run(['get', 'gt', 'ssa', '-o', 'yaml']);
      ok(hidden);
      assert.equal(parseYAML(hidden.stdout).metadata.managedFields, undefined);
    });

    test('a second manager changing a field of the first gets the conflict naming field and manager', async () => {
      const r = await k.run(['apply', '--server-side', '--field-manager=other', '-f', k.file('other.yaml', manifest('ssa', { idle: 9 }))]);
      assert.equal(r.code, 1, r.stderr);
      assert.equal(r.stdout, '');
      assert.equal(r.stderr.split('\n')[0], 'error: Apply failed with 1 conflict: conflict with "kubectl": .spec.commit.idleSeconds');
      ok(await k.run(['get', 'gt', 'ssa', '-o', 'jsonpath={.spec.commit.idleSeconds}']), '7');
    });

    test('--force-conflicts takes the field over', async () => {
      ok(await k.run(['apply', '--server-side', '--field-manager=other', '--force-conflicts', '-f', k.file('other.yaml', manifest('ssa', { idle: 9 }))]), `${g}/ssa serverside-applied\n`);
      ok(await k.run(['get', 'gt', 'ssa', '-o', 'jsonpath={.spec.commit.idleSeconds}']), '9');
      const r = await k.run(['get', 'gt', 'ssa', '-o', 'yaml', '--show-managed-fields']);
      ok(r);
      const byManager = Object.fromEntries(managedOf(r.stdout).map((e) => [e.manager, e.fieldsV1 as any]));
      assert.equal(byManager.kubectl['f:spec']['f:commit'], undefined, 'kubectl lost the field');
      assert.deepEqual(byManager.other['f:spec']['f:commit'], { 'f:idleSeconds': {} });
    });

    test('diff --server-side shows what the apply would change', async () => {
      const file = k.file('diff.yaml', manifest('ssa', { labels: { team: 'b', tier: 'x' }, resources: ['configmaps', 'services'] }));
      const r = await k.run(['diff', '--server-side', '-f', file]);
      assert.equal(r.code, 1, `exit 1 means "differences found"; stderr:\n${r.stderr}`);
      assert.equal(r.stderr, '');
      const changes = r.stdout.split('\n').filter((l) => /^[-+] /.test(l));
      assert.deepEqual(changes, ['-    team: a', '+    team: b']);
      ok(await k.run(['get', 'gt', 'ssa', '-o', 'jsonpath={.metadata.labels.team}']), 'a');
    });

    test('removing a field from the applied file removes it from the object (kubectl was its only owner)', async () => {
      ok(await k.run(['apply', '--server-side', '-f', k.file('ssa.yaml', manifest('ssa', { labels: { team: 'a' }, resources: ['configmaps'] }))]), `${g}/ssa serverside-applied\n`);
      ok(await k.run(['get', 'gt', 'ssa', '-o', 'jsonpath={.metadata.labels} {.spec.resources[*].resource} {.spec.commit.idleSeconds}']), '{"team":"a"} configmaps 9');
    });

    test('--dry-run=server applies nothing', async () => {
      const before = await rv('ssa');
      ok(await k.run(['apply', '--server-side', '--dry-run=server', '-f', k.file('dry.yaml', manifest('ssa', { labels: { team: 'dry' } }))]), `${g}/ssa serverside-applied (server dry run)\n`);
      assert.equal(await rv('ssa'), before);
    });

    test('apply --server-side takes over an object created by client-side apply', async () => {
      ok(await k.run(['apply', '-f', k.file('csa.yaml', manifest('csa', { labels: { team: 'a', tier: 'x' }, suspend: true }))]), `${g}/csa created\n`);
      ok(await k.run(['apply', '--server-side', '-f', k.file('csa.yaml', manifest('csa', { labels: { team: 'b' } }))]), `${g}/csa serverside-applied\n`);
      const r = await k.run(['get', 'gt', 'csa', '-o', 'yaml', '--show-managed-fields']);
      ok(r);
      const obj = parseYAML(r.stdout);
      assert.deepEqual(obj.metadata.labels, { team: 'b' }, 'the label dropped from the file is gone');
      assert.equal(obj.spec.suspend, false, 'the field dropped from the file is gone (then defaulted)');
      const managers = managedOf(r.stdout).map((e) => `${e.manager}/${e.operation}`);
      assert.deepEqual(managers.filter((m) => m.startsWith('kubectl-client-side-apply')), [], 'the client-side manager was migrated');
      assert.ok(managers.includes('kubectl/Apply'), managers.join(','));
      assert.equal(
        obj.metadata.annotations['kubectl.kubernetes.io/last-applied-configuration'],
        `{"apiVersion":"${GV}","kind":"GitTarget","metadata":{"labels":{"team":"b"},"name":"csa","namespace":"default"},"spec":{"branch":"main","path":"tenants/a","repository":{"url":"https://example.com/r.git"}}}\n`,
      );
      ok(await k.run(['apply', '-f', k.file('csa.yaml', manifest('csa', { labels: { team: 'c' } }))]), `${g}/csa configured\n`);
      ok(await k.run(['get', 'gt', 'csa', '-o', 'jsonpath={.metadata.labels.team}']), 'c');
    });
  });
}
