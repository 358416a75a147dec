// The kubectl end-to-end scenario, run once per kubectl binary (kubectl on PATH, 1.27, 1.33) by
// the kubectl*.test.ts files: a real server process, the generated admin kubeconfig, a fresh
// --cache-dir. Every command that should succeed must print nothing on stderr.
import { describe, before, after, test } from 'node:test';
import assert from 'node:assert/strict';
import { parse as parseYAML } from 'yaml';
import { Kubectl, kubectlBinary, type RunResult } from '../support/kubectl.js';
import { GROUP, VERSION, ns, startServer, watch, type StartedServer } from '../support/server.js';

const manifest = (name: string, opts: { labels?: Record<string, string>; branch?: string; url?: string; path?: string } = {}) =>
  [
    `apiVersion: ${GROUP}/${VERSION}`,
    'kind: GitTarget',
    'metadata:',
    `  name: ${name}`,
    ...(opts.labels ? ['  labels:', ...Object.entries(opts.labels).map(([k, v]) => `    ${k}: ${v}`)] : []),
    'spec:',
    '  repository:',
    `    url: ${opts.url ?? 'https://example.com/r.git'}`,
    `  branch: ${opts.branch ?? 'main'}`,
    `  path: ${opts.path ?? 'tenants/a'}`,
    '',
  ].join('\n');

function ok(r: RunResult, stdout?: string | RegExp): void {
  const ctx = `exit ${r.code}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`;
  assert.equal(r.stderr, '', ctx);
  assert.equal(r.code, 0, ctx);
  if (typeof stdout === 'string') assert.equal(r.stdout, stdout, ctx);
  else if (stdout) assert.match(r.stdout, stdout, ctx);
}

function failed(r: RunResult, stderr: string): void {
  assert.equal(r.stderr, stderr, `stdout:\n${r.stdout}`);
  assert.equal(r.code, 1);
  assert.equal(r.stdout, '');
}

const TABLE_HEADER = /^NAME\s+READY\s+REASON\s+BRANCH\s+PATH\s+LAST COMMIT\s+AGE$/;
const WIDE_HEADER = /^NAME\s+READY\s+REASON\s+BRANCH\s+PATH\s+LAST COMMIT\s+AGE\s+REPOSITORY\s+PENDING\s+STREAMS\s+MESSAGE$/;

export function kubectlScenario(version: string | undefined): void {
  const label = version ? `kubectl ${version}` : 'kubectl (PATH)';
  describe(label, { concurrency: false }, () => {
    let server: StartedServer;
    let k: Kubectl;
    const g = 'gittarget.configbutler.ai';

    before(async () => {
      server = await startServer();
      k = new Kubectl(kubectlBinary(version), server.kubeconfig);
    });
    after(async () => {
      k?.cleanup();
      await server?.stop();
    });

    test('api-resources and api-versions list the group', async () => {
      ok(
        await k.run(['api-resources', `--api-group=${GROUP}`]),
        [
          'NAME              SHORTNAMES   APIVERSION                 NAMESPACED   KIND',
          'commitrequests    creq         configbutler.ai/v1alpha1   true         CommitRequest',
          'gittargets        gt           configbutler.ai/v1alpha1   true         GitTarget',
          'repositoryscans                configbutler.ai/v1alpha1   true         RepositoryScan',
          '',
        ].join('\n'),
      );
      ok(await k.run(['api-versions']), `${GROUP}/${VERSION}\n`);
    });

    test('explain gittarget.spec.repository prints the field docs', async () => {
      const r = await k.run(['explain', 'gittarget.spec.repository']);
      ok(r);
      assert.match(r.stdout, /^GROUP: {6}configbutler\.ai$/m);
      assert.match(r.stdout, /^KIND: {7}GitTarget$/m);
      assert.match(r.stdout, /^VERSION: {4}v1alpha1$/m);
      assert.match(r.stdout, /^FIELD: repository <Object>$/m);
      assert.match(r.stdout, /^ {4}The Git repository to write to\. Immutable\.$/m);
      assert.match(r.stdout, /^ {2}url\t<string> -required-$/m);
      assert.match(r.stdout, /^ {4}Repository URL: https:\/\/, http:\/\/, file:\/\/\/absolute\/path\.git, or$/m);
      assert.match(r.stdout, /^ {2}secretRef\t<Object>$/m);
    });

    test('create -f, then get as table, yaml, json, wide, with -l and --field-selector', async () => {
      ok(await k.run(['create', '-f', k.file('demo.yaml', manifest('demo', { labels: { app: 'demo' } }))]), `${g}/demo created\n`);
      ok(await k.run(['create', '-f', k.file('other.yaml', manifest('other', { labels: { app: 'other' }, branch: 'release' }))]), `${g}/other created\n`);

      const table = await k.run(['get', 'gittargets']);
      ok(table);
      const lines = table.stdout.trimEnd().split('\n');
      assert.equal(lines.length, 3, table.stdout);
      assert.match(lines[0]!, TABLE_HEADER);
      assert.match(lines[1]!, /^demo\s+main\s+tenants\/a\s+\d+s$/);
      assert.match(lines[2]!, /^other\s+release\s+tenants\/a\s+\d+s$/);

      const yaml = await k.run(['get', 'gt', 'demo', '-o', 'yaml']);
      ok(yaml);
      const y = parseYAML(yaml.stdout);
      assert.equal(y.apiVersion, `${GROUP}/${VERSION}`);
      assert.equal(y.kind, 'GitTarget');
      assert.equal(y.metadata.name, 'demo');
      assert.equal(y.metadata.namespace, 'default');
      assert.deepEqual(y.metadata.labels, { app: 'demo' });
      assert.equal(y.metadata.generation, 1);
      assert.match(y.metadata.uid, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
      assert.match(y.metadata.resourceVersion, /^\d+$/);
      assert.match(y.metadata.creationTimestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
      assert.equal(y.metadata.managedFields, undefined, 'kubectl hides managedFields');
      assert.deepEqual(y.spec.repository, { url: 'https://example.com/r.git' });
      assert.equal(y.spec.branch, 'main');
      assert.equal(y.spec.path, 'tenants/a');

      const json = await k.run(['get', 'gittargets', '-o', 'json']);
      ok(json);
      const list = JSON.parse(json.stdout);
      assert.equal(list.kind, 'List');
      assert.deepEqual(
        list.items.map((i: any) => [i.kind, i.metadata.name, i.spec.branch]),
        [
          ['GitTarget', 'demo', 'main'],
          ['GitTarget', 'other', 'release'],
        ],
      );

      const wide = await k.run(['get', 'gt', '-o', 'wide']);
      ok(wide);
      const wl = wide.stdout.trimEnd().split('\n');
      assert.equal(wl.length, 3, wide.stdout);
      assert.match(wl[0]!, WIDE_HEADER);
      assert.match(wl[1]!, /^demo\s+main\s+tenants\/a\s+\d+s\s+https:\/\/example\.com\/r\.git\s*$/);

      const byLabel = await k.run(['get', 'gt', '-l', 'app=demo', '-o', 'name']);
      ok(byLabel, `${g}/demo\n`);
      const notDemo = await k.run(['get', 'gt', '-l', 'app!=demo', '-o', 'name']);
      ok(notDemo, `${g}/other\n`);
      ok(await k.run(['get', 'gt', '--field-selector', 'metadata.name=other', '-o', 'name']), `${g}/other\n`);
      ok(await k.run(['get', 'gt', '--field-selector', 'spec.branch=main', '-o', 'name']), `${g}/demo\n`);
      const all = await k.run(['get', 'gt', '-A']);
      ok(all);
      assert.match(all.stdout.split('\n')[0]!, /^NAMESPACE\s+NAME\s+READY\s/);
      assert.match(all.stdout.split('\n')[1]!, /^default\s+demo\s/);
    });

    test('get -w receives ADDED, MODIFIED and DELETED', async () => {
      const w = k.start(['get', 'gittargets', '-w', '--output-watch-events']);
      try {
        await w.waitFor((l) => l.some((x) => /^ADDED\s+other\s/.test(x)), 'the initial ADDED rows');
        assert.match(w.lines[0]!, /^EVENT\s+NAME\s+READY\s+REASON\s/);
        assert.match(w.lines[1]!, /^ADDED\s+demo\s/);
        ok(await k.run(['create', '-f', k.file('watched.yaml', manifest('watched'))]), `${g}/watched created\n`);
        await w.waitFor((l) => l.some((x) => /^ADDED\s+watched\s/.test(x)), 'ADDED watched');
        const labelled = await k.run(['label', 'gt', 'watched', 'tier=x']);
        ok(labelled, /^gittarget\.configbutler\.ai\/watched labell?ed\n$/);
        await w.waitFor((l) => l.some((x) => /^MODIFIED\s+watched\s/.test(x)), 'MODIFIED watched');
        ok(await k.run(['delete', 'gt', 'watched']), `${g} "watched" deleted\n`);
        await w.waitFor((l) => l.some((x) => /^DELETED\s+watched\s/.test(x)), 'DELETED watched');
        assert.deepEqual(
          w.lines.slice(1).map((x) => x.split(/\s+/).slice(0, 2).join(' ')),
          ['ADDED demo', 'ADDED other', 'ADDED watched', 'MODIFIED watched', 'DELETED watched'],
        );
        assert.equal(w.stderr, '');
      } finally {
        await w.stop();
      }
    });

    test('apply -f twice: created, then unchanged; an edit is configured', async () => {
      const file = k.file('applied.yaml', manifest('applied'));
      ok(await k.run(['apply', '-f', file]), `${g}/applied created\n`);
      ok(await k.run(['apply', '-f', file]), `${g}/applied unchanged\n`);
      const edited = k.file('applied.yaml', manifest('applied', { labels: { edited: 'true-story' } }));
      ok(await k.run(['apply', '-f', edited]), `${g}/applied configured\n`);
      ok(await k.run(['get', 'gt', 'applied', '-o', 'jsonpath={.metadata.labels.edited}']), 'true-story');
    });

    test('patch --type=merge and --type=json', async () => {
      ok(await k.run(['patch', 'gt', 'demo', '--type=merge', '-p', '{"spec":{"suspend":true}}']), `${g}/demo patched\n`);
      ok(await k.run(['get', 'gt', 'demo', '-o', 'jsonpath={.spec.suspend} {.metadata.generation}']), 'true 2');
      ok(await k.run(['patch', 'gt', 'demo', '--type=json', '-p', '[{"op":"replace","path":"/spec/suspend","value":false}]']), `${g}/demo patched\n`);
      ok(await k.run(['get', 'gt', 'demo', '-o', 'jsonpath={.spec.suspend} {.metadata.generation}']), 'false 3');
      ok(await k.run(['patch', 'gt', 'demo', '--type=merge', '-p', '{"spec":{"suspend":false}}']), `${g}/demo patched (no change)\n`);
    });

    test('an invalid object is refused with the field named', async () => {
      const bad = k.file('bad.yaml', `apiVersion: ${GROUP}/${VERSION}\nkind: GitTarget\nmetadata:\n  name: bad\nspec:\n  repository: {}\n  branch: main\n  path: tenants/a\n`);
      failed(await k.run(['create', '-f', bad]), 'The GitTarget "bad" is invalid: spec.repository.url: Required value\n');
      const badPath = k.file('badpath.yaml', manifest('badpath', { path: '../escape' }));
      const r = await k.run(['create', '-f', badPath]);
      assert.equal(r.code, 1);
      assert.match(r.stderr, /^The GitTarget "badpath" is invalid: spec\.path: Invalid value: "\.\.\/escape": .+\n$/);
    });

    test('changing spec.branch is refused with the immutability message', async () => {
      failed(
        await k.run(['patch', 'gt', 'demo', '--type=merge', '-p', '{"spec":{"branch":"release"}}']),
        'The GitTarget "demo" is invalid: spec.branch: Invalid value: "release": field is immutable; delete and recreate the GitTarget to change its destination\n',
      );
      failed(
        await k.run(['patch', 'gt', 'demo', '-p', '{"spec":{"suspend":true}}']),
        'error: application/strategic-merge-patch+json is not supported by configbutler.ai/v1alpha1, Kind=GitTarget: the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml\n',
      );
    });

    test('wait --for=condition=Ready returns once the status subresource sets the condition', async () => {
      const waiting = k.run(['wait', '--for=condition=Ready', 'gt/demo', '--timeout=30s']);
      // kubectl wait is now watching (or about to); the condition is set through /status.
      const r = await server.request('PATCH', `${ns('default')}/demo/status`, {
        contentType: 'application/merge-patch+json',
        body: { status: { conditions: [{ type: 'Ready', status: 'True', reason: 'Synced', message: 'pushed', lastTransitionTime: '2026-01-01T00:00:00Z' }] } },
      });
      assert.equal(r.status, 200, r.text);
      ok(await waiting, `${g}/demo condition met\n`);
      // Already met: returns at once.
      ok(await k.run(['wait', '--for=condition=Ready', 'gt/demo', '--timeout=10s']), `${g}/demo condition met\n`);
      const table = await k.run(['get', 'gt', 'demo']);
      ok(table);
      assert.match(table.stdout.split('\n')[1]!, /^demo\s+True\s+Synced\s+main\s/);
    });

    test('create --dry-run=server stores nothing', async () => {
      ok(await k.run(['create', '-f', k.file('dry.yaml', manifest('dry')), '--dry-run=server']), `${g}/dry created (server dry run)\n`);
      failed(await k.run(['get', 'gt', 'dry']), 'Error from server (NotFound): gittargets.configbutler.ai "dry" not found\n');
      const r = await server.get(`${ns('default')}/dry`);
      assert.equal(r.status, 404);
    });

    test('20, 27: resource aliases and category; explain of the kind and of a leaf field', async () => {
      for (const r of ['gittarget', 'gt', 'gittargets.configbutler.ai', 'gitops']) {
        const out = await k.run(['get', r, '-o', 'name']);
        ok(out);
        assert.match(out.stdout, /^gittarget\.configbutler\.ai\/demo$/m, r);
      }
      const kind = await k.run(['explain', 'gittargets']);
      ok(kind);
      assert.match(kind.stdout, /^KIND: {7}GitTarget$/m);
      assert.match(kind.stdout, /^VERSION: {4}v1alpha1$/m);
      const leaf = await k.run(['explain', 'gittargets.spec.repository.url']);
      ok(leaf);
      assert.match(leaf.stdout, /^FIELD: url <string>$/m);
    });

    test('29: an unknown field is refused, naming it', async () => {
      const f = k.file('unknown.yaml', manifest('unknown').replace('spec:\n', 'spec:\n  bogusField: 1\n'));
      failed(await k.run(['create', '-f', f]), 'The GitTarget "unknown" is invalid: spec.bogusField: Forbidden: unknown field "spec.bogusField"\n');
    });

    test('62: --show-labels and --sort-by', async () => {
      const labels = await k.run(['get', 'gt', 'demo', '--show-labels']);
      ok(labels);
      assert.match(labels.stdout.split('\n')[0]!, /\sLABELS$/);
      assert.match(labels.stdout.split('\n')[1]!, /\sapp=demo$/);
      const sorted = await k.run(['get', 'gt', '--sort-by=.spec.branch', '-o', 'name']);
      ok(sorted);
      assert.deepEqual(sorted.stdout.trimEnd().split('\n'), [`${g}/applied`, `${g}/demo`, `${g}/other`]);
      const reverse = await k.run(['get', 'gt', '--sort-by=.metadata.name', '--no-headers']);
      ok(reverse);
      assert.deepEqual(reverse.stdout.trimEnd().split('\n').map((l) => l.split(/\s+/)[0]), ['applied', 'demo', 'other']);
    });

    // 87 (apply --server-side) is in kubectl-ssa-scenario.ts.

    test('95: delete of an object with a finalizer returns once the finalizer is removed', async () => {
      ok(await k.run(['create', '-f', k.file('fin.yaml', manifest('fin').replace('metadata:\n', 'metadata:\n  finalizers: [example.dev/keep]\n'))]), `${g}/fin created\n`);
      const rv = (await server.get(`${ns('default')}/fin`)).body.metadata.resourceVersion;
      const w = await watch(server, `${ns('default')}?watch=true&fieldSelector=metadata.name%3Dfin&resourceVersion=${rv}`);
      const deleting = k.run(['delete', 'gt', 'fin', '--timeout=30s']);
      // Remove the finalizer once the deletion is under way (the MODIFIED that sets deletionTimestamp).
      try {
        for (;;) {
          const ev = await w.next();
          assert.ok(ev, 'the watch ended');
          if (ev.object.metadata.deletionTimestamp) break;
        }
      } finally {
        w.close();
      }
      const rm = await server.request('PATCH', `${ns('default')}/fin`, { contentType: 'application/merge-patch+json', body: { metadata: { finalizers: null } } });
      assert.equal(rm.status, 200, rm.text);
      ok(await deleting, `${g} "fin" deleted\n`);
    });

    test('delete and delete --all', async () => {
      ok(await k.run(['delete', 'gt', 'demo']), `${g} "demo" deleted\n`);
      failed(await k.run(['get', 'gt', 'demo']), 'Error from server (NotFound): gittargets.configbutler.ai "demo" not found\n');
      ok(await k.run(['delete', 'gt', '--all']), `${g} "applied" deleted\n${g} "other" deleted\n`);
      const empty = await k.run(['get', 'gt']);
      assert.equal(empty.code, 0);
      assert.equal(empty.stdout, '');
      assert.equal(empty.stderr, 'No resources found in default namespace.\n');
      const list = await server.get(ns('default'));
      assert.deepEqual(list.body.items, []);
    });
  });
}
