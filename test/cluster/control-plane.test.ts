// Against a real control plane (etcd, kube-apiserver, kube-controller-manager built from their Go
// modules, test/cluster/build.sh): our server deployed the way a Pod would be (reverser.ts), and
// everything reached through kube-apiserver's aggregation layer: kubectl 1.27 … 1.33, aggregated
// discovery, real users (client certificates from the cluster CA, ServiceAccount tokens) with RBAC
// held by kube-apiserver, the namespace controller and the garbage collector deleting our objects,
// and the APIService kept registered when its permission comes and goes.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Kubectl, kubectlBinary, type RunResult } from '../support/kubectl.js';
import { CHART, REPO_ROOT, helmBinary, run, startControlPlane, until, type ControlPlane, type ClusterUser } from './fixture.js';
import { join } from 'node:path';
import { APISERVICE, NAMESPACE, SERVICE, deployReverser, type Reverser } from './reverser.js';

let cp: ControlPlane;
let srv: Reverser;
let admin: Kubectl;
const kubectls: Kubectl[] = [];
const g = 'gittarget.configbutler.ai';
const GV = '/apis/configbutler.ai/v1alpha1';

function ok(r: RunResult, stdout?: string | RegExp): string {
  const ctx = `exit ${r.code}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`;
  assert.equal(r.stderr, '', ctx);
  assert.equal(r.code, 0, ctx);
  if (typeof stdout === 'string') assert.equal(r.stdout, stdout, ctx);
  else if (stdout) assert.match(r.stdout, stdout, ctx);
  return r.stdout;
}

function kubectl(kubeconfig: string, version?: string): Kubectl {
  const k = new Kubectl(kubectlBinary(version), kubeconfig);
  kubectls.push(k);
  return k;
}

const gitTarget = (name: string, namespace: string, extra: Record<string, unknown> = {}) => ({
  apiVersion: 'configbutler.ai/v1alpha1', kind: 'GitTarget', metadata: { name, namespace, ...extra },
  spec: { repository: { url: 'https://example.com/r.git' }, branch: 'main', path: `tenants/${name}` },
});
const commitRequest = (name: string, namespace: string, target: string, author?: { name: string; email: string }, extra: Record<string, unknown> = {}) => ({
  apiVersion: 'configbutler.ai/v1alpha1', kind: 'CommitRequest', metadata: { name, namespace, ...extra },
  spec: { targetRef: { name: target }, message: `cluster ${name}`, ...(author ? { author } : {}) },
});

before(async () => {
  cp = await startControlPlane();
  admin = kubectl(cp.admin.kubeconfig);
  srv = await deployReverser(cp);
});

after(async () => {
  for (const k of kubectls) k.cleanup();
  await srv?.stop();
  await cp?.stop();
});

test('the server registered its APIService with the CA of its serving certificate, and it is Available', async () => {
  const r = await cp.api('GET', `/apis/apiregistration.k8s.io/v1/apiservices/${APISERVICE}`);
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.body.spec, {
    group: 'configbutler.ai',
    version: 'v1alpha1',
    groupPriorityMinimum: 1000,
    versionPriority: 15,
    service: { namespace: NAMESPACE, name: SERVICE, port: srv.port },
    caBundle: Buffer.from(srv.caPem).toString('base64'),
  });
  const available = r.body.status.conditions.find((c: { type: string }) => c.type === 'Available');
  assert.equal(available.status, 'True', JSON.stringify(r.body.status));
  ok(await admin.run(['get', 'apiservice', APISERVICE, '-o', 'jsonpath={.status.conditions[?(@.type=="Available")].status}']), 'True');
  assert.equal(srv.logLines('APIService v1alpha1.configbutler.ai').length, 1, srv.logs());
});

test('aggregated discovery from kube-apiserver includes configbutler.ai/v1alpha1 with both resources', async () => {
  const r = await new Promise<any>((resolve, reject) => {
    import('node:https').then(({ request }) => {
      const req = request(`${cp.url}/apis`, {
        ca: cp.ca.certPem, cert: cp.admin.cert.certPem, key: cp.admin.cert.keyPem, agent: false,
        headers: { accept: 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json' },
      }, (res) => {
        let t = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (t += c));
        res.on('end', () => resolve({ status: res.statusCode, type: res.headers['content-type'], body: JSON.parse(t) }));
      });
      req.on('error', reject);
      req.end();
    }, reject);
  });
  assert.equal(r.status, 200);
  assert.match(r.type, /apidiscovery\.k8s\.io;v=v2;as=APIGroupDiscoveryList/);
  const ours = r.body.items.find((i: any) => i.metadata.name === 'configbutler.ai');
  assert.ok(ours, 'configbutler.ai in the aggregated discovery');
  assert.deepEqual(ours.versions.map((v: any) => v.version), ['v1alpha1']);
  assert.deepEqual(ours.versions[0].resources.map((x: any) => x.resource).sort(), ['commitrequests', 'gittargets', 'repositoryscans']);
});

const manifest = (name: string, labels: Record<string, string> = {}) =>
  [
    'apiVersion: configbutler.ai/v1alpha1', 'kind: GitTarget', 'metadata:', `  name: ${name}`,
    ...(Object.keys(labels).length ? ['  labels:', ...Object.entries(labels).map(([k, v]) => `    ${k}: ${v}`)] : []),
    'spec:', '  repository:', '    url: https://example.com/r.git', '  branch: main', '  path: tenants/a', '',
  ].join('\n');

describe('kubectl through kube-apiserver', { concurrency: false }, () => {
  for (const version of [undefined, '1.27', '1.28', '1.29', '1.30', '1.31', '1.32', '1.33']) {
    test(version ? `kubectl ${version}` : 'kubectl (PATH)', async () => {
      const k = kubectl(cp.admin.kubeconfig, version);
      const ns = `kubectl-${(version ?? 'path').replace('.', '-')}`;
      ok(await k.run(['create', 'namespace', ns]), `namespace/${ns} created\n`);
      ok(await k.run(['api-resources', '--api-group=configbutler.ai']), [
        'NAME              SHORTNAMES   APIVERSION                 NAMESPACED   KIND',
        'commitrequests    creq         configbutler.ai/v1alpha1   true         CommitRequest',
        'gittargets        gt           configbutler.ai/v1alpha1   true         GitTarget',
        'repositoryscans                configbutler.ai/v1alpha1   true         RepositoryScan',
        '',
      ].join('\n'));
      const explain = ok(await k.run(['explain', 'gittarget.spec.branch']));
      assert.match(explain, /^KIND: {7}GitTarget$/m);
      assert.match(explain, /^FIELD: {4}branch <string>$|^FIELD: branch <string>$/m);

      ok(await k.run(['-n', ns, 'create', '-f', k.file('a.yaml', manifest('a'))]), `${g}/a created\n`);
      const w = k.start(['-n', ns, 'get', 'gittargets', '-w', '--output-watch-events']);
      try {
        await w.waitFor((l) => l.some((x) => /^ADDED\s+a\s/.test(x)), 'ADDED a', 30_000);
        ok(await k.run(['-n', ns, 'apply', '-f', k.file('b.yaml', manifest('b'))]), `${g}/b created\n`);
        ok(await k.run(['-n', ns, 'apply', '-f', k.file('b.yaml', manifest('b', { tier: 'x' }))]), `${g}/b configured\n`);
        ok(await k.run(['-n', ns, 'wait', '--for=jsonpath={.metadata.labels.tier}=x', 'gittarget/b', '--timeout=30s']), `${g}/b condition met\n`);
        ok(await k.run(['-n', ns, 'get', 'gt', '-o', 'name']), `${g}/a\n${g}/b\n`);
        ok(await k.run(['-n', ns, 'delete', 'gt', 'a']), `${g} "a" deleted\n`);
        await w.waitFor((l) => l.some((x) => /^DELETED\s+a\s/.test(x)), 'DELETED a', 30_000);
        // The controllers may write status too (more MODIFIED events); what kubectl did is in order.
        const events = w.lines.slice(1).map((x) => x.split(/\s+/).slice(0, 2).join(' '));
        assert.deepEqual(events.filter((e) => !e.startsWith('MODIFIED')), ['ADDED a', 'ADDED b', 'DELETED a'], events.join('\n'));
        const labelled = events.indexOf('MODIFIED b');
        assert.ok(labelled > events.indexOf('ADDED b') && labelled < events.indexOf('DELETED a'), events.join('\n'));
        assert.deepEqual(events.filter((e) => e.startsWith('MODIFIED') && e !== 'MODIFIED a' && e !== 'MODIFIED b'), []);
        assert.equal(w.stderr, '');
      } finally {
        await w.stop();
      }
    });
  }
});

describe('real users, RBAC held by kube-apiserver', { concurrency: false }, () => {
  let alice: ClusterUser;
  let bob: ClusterUser;
  const AUTHOR = { name: 'Alice Liddell', email: 'alice@example.com' };

  before(async () => {
    alice = cp.user('alice', ['devs']);
    bob = cp.user('bob');
    ok(await admin.run(['create', 'namespace', 'team-a']));
    for (const name of ['tenants', 'other']) assert.equal((await cp.api('POST', `${GV}/namespaces/team-a/gittargets`, gitTarget(name, 'team-a'))).status, 201);
    // alice may use the API in team-a (the aggregated edit role) and assert authors on "tenants" only.
    ok(await admin.run(['-n', 'team-a', 'create', 'rolebinding', 'alice-edit', '--clusterrole=edit', '--user=alice']));
    // (kubectl create role warns that assert-author is not a standard verb; a manifest does not.)
    ok(await admin.run(['apply', '-f', '-'], {
      stdin: JSON.stringify({
        apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: 'tenants-author', namespace: 'team-a' },
        rules: [{ apiGroups: ['configbutler.ai'], resources: ['gittargets'], resourceNames: ['tenants'], verbs: ['assert-author'] }],
      }),
    }), 'role.rbac.authorization.k8s.io/tenants-author created\n');
    ok(await admin.run(['-n', 'team-a', 'create', 'rolebinding', 'tenants-author', '--role=tenants-author', '--user=alice']));
    // The ClusterRole aggregation controller folds reverser-apiserver:edit into edit.
    await until('edit aggregates our rules', async () => {
      const r = await cp.api('GET', '/apis/rbac.authorization.k8s.io/v1/clusterroles/edit');
      return r.body?.rules?.some((x: any) => x.apiGroups?.includes('configbutler.ai') && x.verbs.includes('create'));
    }, 60_000, 250);
  });

  test('kubectl auth can-i assert-author answers yes for alice on tenants, no on other', async () => {
    // kubectl's own note on a non-standard verb is the only thing on stderr.
    const warning = "Warning: verb 'assert-author' is not a known verb\n\n";
    const yes = await admin.run(['auth', 'can-i', 'assert-author', 'gittargets.configbutler.ai/tenants', '-n', 'team-a', '--as', 'alice']);
    assert.deepEqual(yes, { code: 0, stdout: 'yes\n', stderr: warning });
    const no = await admin.run(['auth', 'can-i', 'assert-author', 'gittargets.configbutler.ai/other', '-n', 'team-a', '--as', 'alice']);
    assert.deepEqual(no, { code: 1, stdout: 'no\n', stderr: warning });
  });

  test('alice (client certificate) asserts an author on tenants; refused on other with the Forbidden message; submitter is alice', async () => {
    const created = await cp.api('POST', `${GV}/namespaces/team-a/commitrequests`, commitRequest('by-alice', 'team-a', 'tenants', AUTHOR), alice);
    assert.equal(created.status, 201, created.text);
    assert.equal(created.body.status.submitter.username, 'alice');
    assert.deepEqual(created.body.spec.author, AUTHOR);

    const refused = await cp.api('POST', `${GV}/namespaces/team-a/commitrequests`, commitRequest('by-alice-2', 'team-a', 'other', AUTHOR), alice);
    assert.equal(refused.status, 403, refused.text);
    assert.equal(refused.body.reason, 'Forbidden');
    assert.equal(refused.body.message, 'gittargets.configbutler.ai "other" is forbidden: User "alice" cannot assert-author resource "gittargets" in API group "configbutler.ai" in the namespace "team-a": '
      + 'setting spec.author on a CommitRequest for GitTarget "other" requires a Role rule apiGroups: ["configbutler.ai"], resources: ["gittargets"], resourceNames: ["other"], verbs: ["assert-author"]');
    assert.equal((await cp.api('GET', `${GV}/namespaces/team-a/commitrequests/by-alice-2`)).status, 404, 'nothing stored');
  });

  test('bob, with no grant, gets 403 for reads and writes', async () => {
    const k = kubectl(bob.kubeconfig);
    const r = await k.run(['-n', 'team-a', 'get', 'gittargets']);
    assert.equal(r.code, 1);
    assert.equal(r.stderr, 'Error from server (Forbidden): gittargets.configbutler.ai is forbidden: User "bob" cannot list resource "gittargets" in API group "configbutler.ai" in the namespace "team-a"\n');
    const w = await cp.api('POST', `${GV}/namespaces/team-a/commitrequests`, commitRequest('by-bob', 'team-a', 'tenants'), bob);
    assert.equal(w.status, 403, w.text);
  });

  test('kubectl --as alice through kube-apiserver: kube-apiserver impersonates, our server sees alice', async () => {
    const out = ok(await admin.run(['-n', 'team-a', 'create', '--as', 'alice', '-o', 'jsonpath={.status.submitter.username}', '-f', '-'], {
      stdin: JSON.stringify(commitRequest('as-alice', 'team-a', 'tenants', AUTHOR)),
    }));
    assert.equal(out, 'alice');
    const denied = await admin.run(['-n', 'team-a', 'create', '--as', 'alice', '-f', '-'], { stdin: JSON.stringify(commitRequest('as-alice-2', 'team-a', 'other', AUTHOR)) });
    assert.equal(denied.code, 1);
    assert.match(denied.stderr, /^Error from server \(Forbidden\).*gittargets\.configbutler\.ai "other" is forbidden: User "alice" cannot assert-author/);
  });

  test('a ServiceAccount token: through kube-apiserver (edit role) and straight at our server (TokenReview)', async () => {
    ok(await admin.run(['-n', 'team-a', 'create', 'serviceaccount', 'web-editor']));
    ok(await admin.run(['-n', 'team-a', 'create', 'rolebinding', 'web-editor', '--clusterrole=edit', '--serviceaccount=team-a:web-editor']));
    const token = ok(await admin.run(['-n', 'team-a', 'create', 'token', 'web-editor'])).trim();
    const k = kubectl(cp.tokenKubeconfig('web-editor', token));
    const out = ok(await k.run(['-n', 'team-a', 'create', '-o', 'jsonpath={.status.submitter.username}', '-f', '-'], {
      stdin: JSON.stringify(commitRequest('by-sa', 'team-a', 'tenants')),
    }));
    assert.equal(out, 'system:serviceaccount:team-a:web-editor');
    const direct = await srv.get(`${GV}/namespaces/team-a/commitrequests/by-sa`, { authorization: `Bearer ${token}` });
    assert.equal(direct.status, 200, direct.text);
    assert.equal(JSON.parse(direct.text).status.submitter.username, 'system:serviceaccount:team-a:web-editor');
    const bad = await srv.get(`${GV}/namespaces/team-a/commitrequests`, { authorization: 'Bearer not-a-token' });
    assert.equal(bad.status, 401, bad.text);
  });
});

describe('controllers of kube-controller-manager work on our objects', { concurrency: false }, () => {
  test('deleting namespace team-del deletes its GitTargets and CommitRequests (namespace controller)', async () => {
    ok(await admin.run(['create', 'namespace', 'team-del']));
    for (const n of ['one', 'two']) assert.equal((await cp.api('POST', `${GV}/namespaces/team-del/gittargets`, gitTarget(n, 'team-del'))).status, 201);
    assert.equal((await cp.api('POST', `${GV}/namespaces/team-del/commitrequests`, commitRequest('cr', 'team-del', 'one'))).status, 201);
    ok(await admin.run(['delete', 'namespace', 'team-del', '--timeout=150s'], { timeoutMs: 160_000 }), 'namespace "team-del" deleted\n');
    for (const r of ['gittargets', 'commitrequests']) {
      const viaCluster = await cp.api('GET', `${GV}/namespaces/team-del/${r}`);
      assert.equal(viaCluster.status, 200, viaCluster.text);
      assert.deepEqual(viaCluster.body.items, [], `${r} left in team-del`);
    }
  });

  test('objects whose owner is deleted, or never existed, are garbage-collected', async () => {
    ok(await admin.run(['create', 'namespace', 'team-gc']));
    const owner = await cp.api('POST', `${GV}/namespaces/team-gc/gittargets`, gitTarget('owner', 'team-gc'));
    assert.equal(owner.status, 201, owner.text);
    const ref = (uid: string, name = 'owner') => ({ ownerReferences: [{ apiVersion: 'configbutler.ai/v1alpha1', kind: 'GitTarget', name, uid }] });
    assert.equal((await cp.api('POST', `${GV}/namespaces/team-gc/commitrequests`, commitRequest('owned', 'team-gc', 'owner', undefined, ref(owner.body.metadata.uid)))).status, 201);
    assert.equal((await cp.api('POST', `${GV}/namespaces/team-gc/commitrequests`, commitRequest('orphan', 'team-gc', 'owner', undefined, ref('0d3f2a4e-0000-4000-8000-000000000001', 'gone')))).status, 201);
    assert.equal((await cp.api('POST', `${GV}/namespaces/team-gc/commitrequests`, commitRequest('unowned', 'team-gc', 'owner'))).status, 201);
    ok(await admin.run(['-n', 'team-gc', 'delete', 'gittarget', 'owner']), `${g} "owner" deleted\n`);
    // The garbage collector re-reads discovery every 30 s; our group appeared after it started.
    await until('owned and orphan collected', async () => {
      const l = await cp.api('GET', `${GV}/namespaces/team-gc/commitrequests`);
      return l.status === 200 && JSON.stringify(l.body.items.map((i: any) => i.metadata.name)) === '["unowned"]';
    }, 150_000, 1000);
  });
});

describe('the deployment manifests are accepted by the real kube-apiserver', { concurrency: false }, () => {
  test('kubectl apply -k apiservice/ (server-side dry run after the real apply)', async () => {
    const out = ok(await admin.run(['apply', '-k', join(REPO_ROOT, 'apiservice'), '--dry-run=server']));
    assert.match(out, /^rolebinding\.rbac\.authorization\.k8s\.io\/reverser-apiserver-auth-reader (unchanged|configured) \(server dry run\)$/m);
    const rb = await cp.api('GET', '/apis/rbac.authorization.k8s.io/v1/namespaces/kube-system/rolebindings/reverser-apiserver-auth-reader');
    assert.equal(rb.status, 200, 'the auth-reader RoleBinding lives in kube-system');
  });

  test('the Helm chart rendered by helm template, applied with a server-side dry run', async () => {
    const helm = await helmBinary();
    const h = await run(helm, ['template', 'reverser', CHART, '--namespace', 'reverser-helm']);
    assert.equal(h.code, 0, h.stderr);
    ok(await admin.run(['create', 'namespace', 'reverser-helm']));
    const out = ok(await admin.run(['apply', '--dry-run=server', '-f', '-'], { stdin: h.stdout }));
    assert.deepEqual(out.trimEnd().split('\n').map((l) => l.replace(/ (created|configured|unchanged) \(server dry run\)$/, '')).sort(), [
      'apiservice.apiregistration.k8s.io/v1alpha1.configbutler.ai',
      'clusterrole.rbac.authorization.k8s.io/reverser:apiservice-registrar',
      'clusterrole.rbac.authorization.k8s.io/reverser:edit',
      'clusterrole.rbac.authorization.k8s.io/reverser:event-recorder',
      'clusterrole.rbac.authorization.k8s.io/reverser:mirror-reader',
      'clusterrole.rbac.authorization.k8s.io/reverser:namespace-reader',
      'clusterrole.rbac.authorization.k8s.io/reverser:view',
      'clusterrolebinding.rbac.authorization.k8s.io/reverser:apiservice-registrar',
      'clusterrolebinding.rbac.authorization.k8s.io/reverser:event-recorder',
      'clusterrolebinding.rbac.authorization.k8s.io/reverser:mirror-reader',
      'clusterrolebinding.rbac.authorization.k8s.io/reverser:namespace-reader',
      'clusterrolebinding.rbac.authorization.k8s.io/reverser:system:auth-delegator',
      'deployment.apps/reverser',
      'rolebinding.rbac.authorization.k8s.io/reverser-auth-reader',
      'service/reverser',
      'serviceaccount/reverser',
    ]);
  });
});

describe('the audit attribution objects are accepted by the real kube-apiserver', { concurrency: false }, () => {
  test('the chart with audit.enabled=true: its audit Service (pinned clusterIP) and ConfigMap, server-side dry run', async () => {
    const helm = await helmBinary();
    const h = await run(helm, ['template', 'reverser', CHART, '--namespace', 'reverser-helm', '--set', 'audit.enabled=true', '--set', 'audit.clusterIP=10.0.0.44', '--show-only', 'templates/audit.yaml']);
    assert.equal(h.code, 0, h.stderr);
    const created = await admin.run(['get', 'namespace', 'reverser-helm']);
    if (created.code !== 0) ok(await admin.run(['create', 'namespace', 'reverser-helm']));
    const out = ok(await admin.run(['apply', '--dry-run=server', '-f', '-'], { stdin: h.stdout }));
    assert.deepEqual(out.trimEnd().split('\n').sort(), ['configmap/reverser-audit created (server dry run)', 'service/reverser-audit created (server dry run)']);
  });
});

describe('APIService permission removed and granted back', { concurrency: false }, () => {
  test('forbidden: one log line, serving continues, /readyz?verbose says so; granted back: re-created within one refresh, no restart', async () => {
    const binding = 'reverser-apiserver:apiservice-registrar';
    ok(await admin.run(['delete', 'clusterrolebinding', binding]), `clusterrolebinding.rbac.authorization.k8s.io "${binding}" deleted\n`);
    ok(await admin.run(['delete', 'apiservice', APISERVICE]), `apiservice.apiregistration.k8s.io "${APISERVICE}" deleted\n`);
    await until('forbidden on /readyz?verbose', async () => (await srv.get('/readyz?verbose')).text.includes('not registered: forbidden to manage apiservices'), 30_000);
    const ready = await srv.get('/readyz?verbose');
    assert.equal(ready.status, 200, ready.text);
    assert.match(ready.text, /^\[\+\]apiservice-registration ok \(APIService v1alpha1\.configbutler\.ai not registered: forbidden to manage apiservices: .*User "system:serviceaccount:reverser-system:reverser-apiserver" cannot get resource "apiservices".*; re-checking every 2s\)$/m);
    await new Promise((r) => setTimeout(r, srv.refreshMs * 3));
    assert.equal(srv.logLines('forbidden to manage apiservices').length, 1, srv.logs());
    assert.ok(srv.alive());
    assert.equal((await srv.get('/healthz')).status, 200);

    const t0 = Date.now();
    ok(await admin.run(['create', 'clusterrolebinding', binding, `--clusterrole=${binding}`, `--serviceaccount=${NAMESPACE}:${SERVICE}`]));
    await until('the APIService re-created', async () => (await cp.api('GET', `/apis/apiregistration.k8s.io/v1/apiservices/${APISERVICE}`)).status === 200, srv.refreshMs * 2 + 5000, 100);
    const took = Date.now() - t0;
    assert.ok(took <= srv.refreshMs * 2 + 5000, `re-created after ${took} ms`);
    ok(await admin.run(['wait', '--for=condition=Available', `apiservice/${APISERVICE}`, '--timeout=60s'], { timeoutMs: 70_000 }));
    ok(await admin.run(['get', 'gittargets', '-n', 'team-a', '-o', 'name']), `${g}/other\n${g}/tenants\n`);
    assert.equal(srv.logLines('forbidden to manage apiservices').length, 1);
  });
});
