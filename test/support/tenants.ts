// Tenants for tests of the controllers on a real server with the sandbox as the default source:
// each a namespace holding one ConfigMap `app`, and the GitTarget that mirrors that namespace's
// ConfigMaps into the local repository `local:<name>` (test/controllers/at-rest.test.ts,
// edit-cost.test.ts, status-writes-new-target.test.ts).
import assert from 'node:assert/strict';
import { ns, type StartedServer } from './server.js';

/** POSTs `body` to `path` and asserts 201 Created. */
export async function created(server: StartedServer, path: string, body: unknown): Promise<void> {
  assert.equal((await server.request('POST', path, { body })).status, 201, path);
}

/** For each name, in order: the namespace `name` and in it the ConfigMap `app` holding `data`. */
export async function seedTenants(server: StartedServer, names: readonly string[], data: Record<string, string> = { k: 'v' }): Promise<void> {
  for (const name of names) {
    await created(server, '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
    await created(server, `/api/v1/namespaces/${name}/configmaps`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'app', namespace: name }, data });
  }
}

/** Creates the GitTarget `mirror` of tenant `name`: its namespace's ConfigMaps into `local:<name>`, windows closed after 1 s of quiet. */
export async function createMirror(server: StartedServer, name: string): Promise<void> {
  await created(server, ns(name), {
    apiVersion: 'configbutler.ai/v1alpha1',
    kind: 'GitTarget',
    metadata: { name: 'mirror', namespace: name },
    spec: { repository: { url: `local:${name}` }, branch: 'main', path: '.', resources: [{ group: '', version: 'v1', resource: 'configmaps', namespaces: [name] }], commit: { idleSeconds: 1 } },
  });
}
