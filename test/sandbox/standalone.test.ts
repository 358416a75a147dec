// `reverser-apiserver sandbox`: the sandbox alone (no configbutler.ai group), its
// <data-dir>/sandbox.kubeconfig, and a restart on the same data dir keeping objects and
// resourceVersions; and what discovery shows with and without the sandbox.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseYAML } from 'yaml';
import { Kubectl, kubectlBinary } from '../support/kubectl.js';
import { startServer } from '../support/server.js';
import { failed, ok } from './kubectl-scenario.js';

const AGGREGATED = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json';

describe('reverser-apiserver sandbox', { timeout: 120_000 }, () => {
  test('serves only the sandbox and writes sandbox.kubeconfig; a restart keeps objects and resourceVersions', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'reverser-sandbox-'));
    let server = await startServer([], { command: 'sandbox', dataDir });
    const k = new Kubectl(kubectlBinary(), join(dataDir, 'sandbox.kubeconfig'));
    try {
      assert.ok(existsSync(join(dataDir, 'sandbox.kubeconfig')));
      assert.ok(!existsSync(join(dataDir, 'admin.kubeconfig')));
      const kc = parseYAML((await import('node:fs')).readFileSync(join(dataDir, 'sandbox.kubeconfig'), 'utf8'));
      assert.equal(kc['current-context'], 'reverser-sandbox');
      assert.equal(kc.clusters[0].cluster.server, server.url);

      const groups = await server.get('/apis');
      assert.deepEqual(groups.body.groups.map((g: { name: string }) => g.name), ['apps', 'events.k8s.io']);
      failed(await k.run(['get', 'gittargets']), 'error: the server doesn\'t have a resource type "gittargets"\n');

      ok(await k.run(['create', 'namespace', 'team-a']), 'namespace/team-a created\n');
      ok(await k.run(['create', 'configmap', 'one', '-n', 'team-a', '--from-literal=a=1']), 'configmap/one created\n');
      const before = parseYAML((await k.run(['get', 'configmap', 'one', '-n', 'team-a', '-o', 'yaml'])).stdout);

      await server.stop();
      server = await startServer([], { command: 'sandbox', dataDir, port: server.port });
      const after = parseYAML((await k.run(['get', 'configmap', 'one', '-n', 'team-a', '-o', 'yaml'])).stdout);
      assert.deepEqual(after, before);
      // The initial namespaces are not created twice; new writes continue the resourceVersion sequence.
      const list = await server.get('/api/v1/namespaces');
      assert.deepEqual(list.body.items.map((n: { metadata: { name: string } }) => n.metadata.name), ['default', 'kube-node-lease', 'kube-public', 'kube-system', 'team-a']);
      ok(await k.run(['create', 'configmap', 'two', '-n', 'team-a', '--from-literal=b=2']), 'configmap/two created\n');
      const two = parseYAML((await k.run(['get', 'configmap', 'two', '-n', 'team-a', '-o', 'yaml'])).stdout);
      assert.ok(Number(two.metadata.resourceVersion) > Number(list.body.metadata.resourceVersion), `${two.metadata.resourceVersion} after ${list.body.metadata.resourceVersion}`);
    } finally {
      k.cleanup();
      await server.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  test('discovery: the core group, apps/v1 and events.k8s.io/v1 appear only with --sandbox', async () => {
    const plain = await startServer();
    try {
      assert.deepEqual((await plain.get('/api')).body, { kind: 'APIVersions', versions: [], serverAddressByClientCIDRs: [] });
      assert.deepEqual((await plain.get('/apis')).body.groups.map((g: { name: string }) => g.name), ['configbutler.ai']);
      const agg = await plain.get('/apis', { accept: AGGREGATED });
      assert.deepEqual(agg.body.items.map((i: { metadata: { name: string } }) => i.metadata.name), ['configbutler.ai']);
      assert.deepEqual((await plain.get('/api', { accept: AGGREGATED })).body.items, []);
      assert.equal((await plain.get('/api/v1')).status, 404);
      assert.equal((await plain.get('/api/v1/namespaces')).status, 404);
      assert.equal((await plain.get('/apis/apps/v1')).status, 404);
      // Without the sandbox there are no namespace objects, and none are needed.
      const created = await plain.request('POST', '/apis/configbutler.ai/v1alpha1/namespaces/anywhere/gittargets', {
        body: { apiVersion: 'configbutler.ai/v1alpha1', kind: 'GitTarget', metadata: { name: 'g' }, spec: { repository: { url: 'local:r' }, branch: 'main', path: 'p' } },
      });
      assert.equal(created.status, 201, created.text);
    } finally {
      await plain.stop();
    }
    const sandbox = await startServer(['--sandbox']);
    try {
      assert.deepEqual((await sandbox.get('/api')).body, { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [] });
      assert.deepEqual((await sandbox.get('/apis')).body.groups.map((g: { name: string }) => g.name), ['apps', 'events.k8s.io', 'configbutler.ai']);
      const core = (await sandbox.get('/api/v1')).body;
      assert.deepEqual(
        core.resources.map((r: { name: string; namespaced: boolean; kind: string }) => `${r.name} ${r.namespaced} ${r.kind}`),
        ['namespaces false Namespace', 'namespaces/status false Namespace', 'configmaps true ConfigMap', 'secrets true Secret', 'serviceaccounts true ServiceAccount', 'events true Event'],
      );
      const apps = (await sandbox.get('/apis/apps/v1')).body;
      assert.deepEqual(apps.resources.map((r: { name: string }) => r.name), ['deployments', 'deployments/status']);
      const agg = (await sandbox.get('/apis', { accept: AGGREGATED })).body;
      assert.deepEqual(agg.items.map((i: { metadata: { name: string } }) => i.metadata.name), ['apps', 'events.k8s.io', 'configbutler.ai']);
      const coreAgg = (await sandbox.get('/api', { accept: AGGREGATED })).body;
      assert.deepEqual(coreAgg.items[0].versions[0].resources.map((r: { resource: string; scope: string }) => `${r.resource} ${r.scope}`), [
        'namespaces Cluster',
        'configmaps Namespaced',
        'secrets Namespaced',
        'serviceaccounts Namespaced',
        'events Namespaced',
      ]);
      const v3 = (await sandbox.get('/openapi/v3')).body;
      assert.deepEqual(Object.keys(v3.paths).sort(), ['api/v1', 'apis/apps/v1', 'apis/configbutler.ai/v1alpha1', 'apis/events.k8s.io/v1']);
      // With the sandbox, our own group follows the namespace lifecycle too.
      const refused = await sandbox.request('POST', '/apis/configbutler.ai/v1alpha1/namespaces/anywhere/gittargets', {
        body: { apiVersion: 'configbutler.ai/v1alpha1', kind: 'GitTarget', metadata: { name: 'g' }, spec: { repository: { url: 'local:r' }, branch: 'main', path: 'p' } },
      });
      assert.equal(refused.status, 404);
      assert.equal(refused.body.message, 'namespaces "anywhere" not found');
    } finally {
      await sandbox.stop();
    }
  });
});
