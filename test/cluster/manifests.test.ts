// The two ways to deploy render the same objects: `kubectl kustomize apiservice/` and the Helm chart
// rendered by the real helm (built from its Go module by test/cluster/build.sh helm) for the release
// name and namespace the kustomization uses. The chart refuses unknown values and embedded storage
// on an emptyDir, and its names fit the Secret certs/generate.mjs tells you to create.
// (test/cluster/control-plane.test.ts applies both to a real kube-apiserver.)
import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { kubectlBinary } from '../support/kubectl.js';
import { CHART, REPO_ROOT, helmBinary, run } from './fixture.js';

let helm: string;

function objects(yamlText: string): Map<string, any> {
  const m = new Map<string, any>();
  for (const d of parseAllDocuments(yamlText)) {
    const o = d.toJS();
    if (!o) continue;
    m.set(`${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`, o);
  }
  return m;
}

const template = (release: string, namespace: string, ...set: string[]) =>
  run(helm, ['template', release, CHART, '--namespace', namespace, ...set.flatMap((s) => ['--set', s])]);

before(async () => {
  helm = await helmBinary();
});

test('kustomize and the chart (release reverser-apiserver in reverser-system) render the same objects', async () => {
  const k = await run(kubectlBinary(), ['kustomize', join(REPO_ROOT, 'apiservice')]);
  assert.equal(k.code, 0, k.stderr);
  const h = await template('reverser-apiserver', 'reverser-system');
  assert.equal(h.code, 0, h.stderr);
  assert.equal(h.stderr, '');
  const fromKustomize = objects(k.stdout);
  const fromChart = objects(h.stdout);
  // Helm does not own namespaces (helm install --create-namespace makes it): the only difference.
  assert.deepEqual([...fromKustomize.keys()].filter((x) => !fromChart.has(x)), ['Namespace//reverser-system']);
  assert.deepEqual([...fromChart.keys()].filter((x) => !fromKustomize.has(x)), []);
  for (const [key, o] of fromChart) assert.deepEqual(o, fromKustomize.get(key), key);
  assert.deepEqual([...fromChart.keys()].sort(), [
    'APIService//v1alpha1.configbutler.ai',
    'ClusterRole//reverser-apiserver:apiservice-registrar',
    'ClusterRole//reverser-apiserver:edit',
    'ClusterRole//reverser-apiserver:mirror-reader',
    'ClusterRole//reverser-apiserver:namespace-reader',
    'ClusterRole//reverser-apiserver:view',
    'ClusterRoleBinding//reverser-apiserver:apiservice-registrar',
    'ClusterRoleBinding//reverser-apiserver:mirror-reader',
    'ClusterRoleBinding//reverser-apiserver:namespace-reader',
    'ClusterRoleBinding//reverser-apiserver:system:auth-delegator',
    'Deployment/reverser-system/reverser-apiserver',
    'RoleBinding/kube-system/reverser-apiserver-auth-reader',
    'Service/reverser-system/reverser-apiserver',
    'ServiceAccount/reverser-system/reverser-apiserver',
  ]);
});

test('another release: names are release-scoped and the TLS Secret is the one certs/generate.mjs makes', async () => {
  const h = await template('reverser', 'tools');
  assert.equal(h.code, 0, h.stderr);
  const o = objects(h.stdout);
  assert.ok(o.has('ClusterRole//reverser:edit') && o.has('ClusterRole//reverser:view') && o.has('ClusterRole//reverser:apiservice-registrar'), [...o.keys()].join('\n'));
  assert.deepEqual(o.get('APIService//v1alpha1.configbutler.ai').spec.service, { namespace: 'tools', name: 'reverser', port: 443 });
  const dep = o.get('Deployment/tools/reverser');
  const secret = dep.spec.template.spec.volumes.find((v: any) => v.name === 'tls').secret.secretName;
  assert.equal(secret, 'reverser-tls');
  assert.ok(dep.spec.template.spec.containers[0].args.includes('--apiservice-service-name=reverser'));
  // The docs' certificate step for this release prints the command creating exactly that Secret.
  const { mkdtempSync, rmSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const dir = mkdtempSync(join(tmpdir(), 'certs-'));
  try {
    const gen = await run(process.execPath, [join(REPO_ROOT, 'certs/generate.mjs'), '--out', join(dir, 'tls'), '--service', 'reverser', '--namespace', 'tools']);
    assert.equal(gen.code, 0, gen.stderr);
    assert.match(gen.stdout, /^kubectl -n tools create secret generic reverser-tls --type=kubernetes\.io\/tls --from-file=tls\.crt=\S+ --from-file=tls\.key=\S+ --from-file=ca\.crt=\S+$/m);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('values.schema.json refuses unknown values and wrong types', async () => {
  const refused = (line: string) =>
    `Error: values don't meet the specifications of the schema(s) in the following chart(s):\nreverser-apiserver:\n- ${line}\n\n`;
  for (const [set, line] of [
    ['storage.kindd=redis', "at '/storage': additional properties 'kindd' not allowed"],
    ['caBundle=abc', "at '': additional properties 'caBundle' not allowed"],
    ['storage.kind=etcd', "at '/storage/kind': value must be one of 'redis', 'embedded'"],
    ['replicas=two', "at '/replicas': got string, want integer"],
  ] as const) {
    const r = await template('r', 'ns', set);
    assert.equal(r.code, 1, set);
    assert.equal(r.stderr, refused(line), set);
    assert.equal(r.stdout, '', set);
  }
});

test('embedded storage on an emptyDir is refused; with a claim it renders one replica on that claim', async () => {
  const refused = await template('r', 'ns', 'storage.kind=embedded');
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /storage\.kind=embedded keeps every object under the data directory, and without storage\.embedded\.existingClaim that is an emptyDir: all data would be lost on every restart/);
  const ok = await template('r', 'ns', 'storage.kind=embedded', 'storage.embedded.existingClaim=reverser-data');
  assert.equal(ok.code, 0, ok.stderr);
  const dep = objects(ok.stdout).get('Deployment/ns/r');
  assert.equal(dep.spec.replicas, 1);
  assert.deepEqual(dep.spec.template.spec.volumes.find((v: any) => v.name === 'data'), { name: 'data', persistentVolumeClaim: { claimName: 'reverser-data' } });
  assert.ok(!dep.spec.template.spec.containers[0].args.some((a: string) => a.startsWith('--redis')));
  // One Pod per data directory (the lock): an upgrade replaces the Pod instead of rolling a second one onto the claim.
  assert.deepEqual(dep.spec.strategy, { type: 'Recreate' });
  assert.equal(dep.spec.template.spec.containers[0].env, undefined, 'no Redis password without Redis');
  const ephemeral = await template('r', 'ns', 'storage.kind=embedded', 'storage.embedded.allowEphemeral=true');
  assert.equal(objects(ephemeral.stdout).get('Deployment/ns/r').spec.strategy, undefined, 'an emptyDir is per Pod: the default rolling update');
  assert.equal(objects((await template('r', 'ns')).stdout).get('Deployment/ns/r').spec.strategy, undefined, 'Redis: the default rolling update');
});

test('the Redis password comes from a Secret (env REDIS_PASSWORD), never the args; resources are set in both manifests', async () => {
  const k = await run(kubectlBinary(), ['kustomize', join(REPO_ROOT, 'apiservice')]);
  assert.equal(k.code, 0, k.stderr);
  const fromKustomize = objects(k.stdout).get('Deployment/reverser-system/reverser-apiserver').spec.template.spec.containers[0];
  const h = await template('reverser-apiserver', 'reverser-system');
  const fromChart = objects(h.stdout).get('Deployment/reverser-system/reverser-apiserver').spec.template.spec.containers[0];
  const env = [{ name: 'REDIS_PASSWORD', valueFrom: { secretKeyRef: { name: 'reverser-apiserver-redis', key: 'password', optional: true } } }];
  assert.deepEqual(fromKustomize.env, env);
  assert.deepEqual(fromChart.env, env);
  const resources = { requests: { cpu: '250m', memory: '512Mi' }, limits: { memory: '1Gi' } };
  assert.deepEqual(fromKustomize.resources, resources);
  assert.deepEqual(fromChart.resources, resources);
  for (const c of [fromKustomize, fromChart]) assert.ok(!c.args.some((a: string) => /redis-url=rediss?:\/\/[^@/]*@/.test(a)), c.args.join(' '));
  const named = await template('r', 'ns', 'storage.redisPasswordSecret=redis-auth');
  assert.equal(named.code, 0, named.stderr);
  assert.deepEqual(objects(named.stdout).get('Deployment/ns/r').spec.template.spec.containers[0].env,
    [{ name: 'REDIS_PASSWORD', valueFrom: { secretKeyRef: { name: 'redis-auth', key: 'password', optional: true } } }]);
});

/** `kubectl kustomize` of an overlay: apiservice/ plus the apiservice/audit Component. */
async function kustomizeWithAudit(): Promise<string> {
  const { mkdtempSync, rmSync, writeFileSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { relative } = await import('node:path');
  const dir = mkdtempSync(join(tmpdir(), 'overlay-'));
  try {
    // kustomize takes only relative paths to other kustomizations.
    const base = relative(dir, join(REPO_ROOT, 'apiservice'));
    writeFileSync(join(dir, 'kustomization.yaml'), `resources: [${base}]\ncomponents: [${base}/audit]\n`);
    const k = await run(kubectlBinary(), ['kustomize', dir]);
    assert.equal(k.code, 0, k.stderr);
    return k.stdout;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('audit attribution: the apiservice/audit Component and the chart with audit.enabled=true render the same objects', async () => {
  const fromKustomize = objects(await kustomizeWithAudit());
  const h = await template('reverser-apiserver', 'reverser-system', 'audit.enabled=true');
  assert.equal(h.code, 0, h.stderr);
  const fromChart = objects(h.stdout);
  assert.deepEqual([...fromKustomize.keys()].filter((x) => !fromChart.has(x)), ['Namespace//reverser-system']);
  assert.deepEqual([...fromChart.keys()].filter((x) => !fromKustomize.has(x)), []);
  for (const [key, o] of fromChart) assert.deepEqual(o, fromKustomize.get(key), key);
  assert.deepEqual([...fromChart.keys()].filter((k) => k.includes('audit')).sort(), [
    'ConfigMap/reverser-system/reverser-apiserver-audit',
    'Service/reverser-system/reverser-apiserver-audit',
  ]);
  const c = fromChart.get('Deployment/reverser-system/reverser-apiserver').spec.template.spec;
  assert.deepEqual(c.containers[0].args.filter((a: string) => a.startsWith('--audit')), [
    '--audit-client-ca-file=/var/run/reverser/audit-ca/ca.crt', '--audit-port=9444', '--audit-bind-address=0.0.0.0',
  ]);
  assert.deepEqual(c.containers[0].ports, [{ name: 'https', containerPort: 8443 }, { name: 'audit', containerPort: 9444 }]);
  assert.deepEqual(c.volumes.at(-1), { name: 'audit-ca', secret: { secretName: 'reverser-apiserver-audit-ca' } });
  assert.deepEqual(fromChart.get('Service/reverser-system/reverser-apiserver-audit').spec.ports, [{ name: 'audit', port: 9444, targetPort: 'audit' }]);
  // What the ConfigMap ships is the files of apiservice/audit/, byte for byte (the chart keeps copies under files/audit/).
  const { readFileSync } = await import('node:fs');
  const cm = fromChart.get('ConfigMap/reverser-system/reverser-apiserver-audit');
  assert.equal(cm.data['policy.yaml'], readFileSync(join(REPO_ROOT, 'apiservice/audit/policy.yaml'), 'utf8'));
  assert.equal(cm.data['webhook-kubeconfig.yaml'], readFileSync(join(REPO_ROOT, 'apiservice/audit/webhook-kubeconfig.yaml'), 'utf8'));
  for (const f of ['policy.yaml', 'webhook-kubeconfig.yaml']) {
    assert.equal(readFileSync(join(CHART, 'files/audit', f), 'utf8'), readFileSync(join(REPO_ROOT, 'apiservice/audit', f), 'utf8'), `charts/reverser-apiserver/files/audit/${f}`);
  }
  // Off by default: nothing of it in the plain render.
  const plain = await template('reverser-apiserver', 'reverser-system');
  assert.ok(!plain.stdout.includes('audit'), 'audit objects or flags rendered without audit.enabled');
});

test('audit attribution, another release: the webhook kubeconfig names its Service address, port and certificate name', async () => {
  const h = await template('rev', 'tools', 'audit.enabled=true', 'audit.clusterIP=10.96.0.44', 'audit.port=9555', 'audit.clientCASecretName=kube-audit-ca');
  assert.equal(h.code, 0, h.stderr);
  const o = objects(h.stdout);
  assert.equal(o.get('Service/tools/rev-audit').spec.clusterIP, '10.96.0.44');
  assert.deepEqual(o.get('Deployment/tools/rev').spec.template.spec.volumes.at(-1), { name: 'audit-ca', secret: { secretName: 'kube-audit-ca' } });
  const { parse } = await import('yaml');
  const kubeconfig = parse(o.get('ConfigMap/tools/rev-audit').data['webhook-kubeconfig.yaml']);
  assert.deepEqual(kubeconfig.clusters, [{
    name: 'rev-audit',
    cluster: { server: 'https://10.96.0.44:9555/audit-webhook', 'tls-server-name': 'rev.tools.svc', 'certificate-authority': '/etc/kubernetes/reverser-audit/ca.crt' },
  }]);
  assert.equal(kubeconfig['current-context'], 'rev-audit');
  // kubectl reads the shipped template as a kubeconfig.
  const view = await run(kubectlBinary(), ['config', 'view', '--kubeconfig', join(REPO_ROOT, 'apiservice/audit/webhook-kubeconfig.yaml'), '-o', 'jsonpath={.clusters[0].cluster.server}']);
  assert.equal(view.stderr, '');
  assert.equal(view.stdout, 'https://AUDIT_SERVICE_CLUSTER_IP:9444/audit-webhook');
  const bad = await template('r', 'ns', 'audit.port=none');
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, /at '\/audit\/port': got string, want integer/);
});
