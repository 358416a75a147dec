// A mirror's status write that the store fails (a 503 under load) is written again. Logged and
// dropped, it left the GitTarget as its previous write said for good when no later report came: at
// 10,000 tenants one GitTarget stayed Connecting (bench/scale). The controllers run in this process
// on a real embedded store whose update fails once, as Redis timing out does; the source is a real
// sandbox server (a child process) and the remote a real `git http-backend`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { KubeConfig } from '../../src/kubeconfig/kubeconfig.js';
import { createStore } from '../../src/storage/index.js';
import { StorageError, type KubeObject, type Store } from '../../src/storage/types.js';
import { GT, createGitSecret, gitServer, startHarness, tempDir, waitFor } from '../controllers/harness.js';
import { ok, startSandbox } from './harness.js';

type Conds = Array<{ type: string; status: string; reason: string }>;
const conditionsOf = (o: KubeObject | undefined): Conds => (o?.status as { conditions?: Conds } | undefined)?.conditions ?? [];

test('a mirror status write the store fails is written again: the GitTarget becomes Ready though the mirror reports nothing new', { timeout: 120_000 }, async (t) => {
  const sandbox = await startSandbox();
  t.after(() => sandbox.destroy());
  await ok(sandbox.kubectl, ['create', 'namespace', 'team-a']);
  await ok(sandbox.kubectl, ['-n', 'team-a', 'create', 'configmap', 'app', '--from-literal=k=v']);
  const dir = tempDir(t, 'mirror-status-retry-');
  const remote = await gitServer(t);
  const real = await createStore({ storage: 'embedded', dataDir: dir });
  // The first GitTarget write that would make it Ready fails: the mirror's last report (Synced
  // True after the snapshot landed), after which a mirror at rest reports nothing.
  let failed = 0;
  const update: Store['update'] = (res, key, obj, rv) => {
    if (res.resource === 'gittargets' && failed === 0 && conditionsOf(obj).some((c) => c.type === 'Ready' && c.status === 'True')) {
      failed++;
      return Promise.reject(new StorageError('Unavailable', 'injected: the primary is busy'));
    }
    return real.update(res, key, obj, rv);
  };
  // Every other call reaches the store itself, as itself (its state lives on it, not on a copy).
  const store = new Proxy(real, {
    get: (target, prop) => {
      if (prop === 'update') return update;
      const v = Reflect.get(target, prop, target) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  const source = new KubeConfig();
  source.loadFromFile(sandbox.kubeconfig);
  const h = await startHarness(t, { dataDir: dir, store, defaultSource: source });
  await createGitSecret(h.store, remote);
  const ref = { cluster: '_', namespace: 'team-a', name: 'tenants' };
  await h.store.create(GT, ref, {
    apiVersion: 'configbutler.ai/v1alpha1',
    kind: 'GitTarget',
    metadata: { name: 'tenants', namespace: 'team-a', uid: randomUUID(), generation: 1, creationTimestamp: new Date().toISOString() },
    // The schema's defaults, as the registry stores every GitTarget (the status writes go through it).
    spec: {
      repository: { url: remote.url('config'), secretRef: { name: 'git-creds' } },
      branch: 'main',
      path: 'clusters/dev',
      resources: [{ group: '', version: 'v1', resource: 'configmaps', namespaces: ['team-a'] }],
      commit: { idleSeconds: 1, maxAgeSeconds: 600, mode: 'Auto' },
      prune: { mode: 'OnEvent' },
      includeClusterNoise: false,
      suspend: false,
    },
  });
  const ready = await waitFor(
    'the GitTarget Ready after its failed status write',
    async () => {
      const o = await real.get(GT, ref);
      return conditionsOf(o).some((c) => c.type === 'Ready' && c.status === 'True') ? o : undefined;
    },
    60_000,
    100,
  ).catch(async (e: Error) => {
    throw new Error(`${e.message}; ${failed} write(s) failed; its status: ${JSON.stringify((await real.get(GT, ref))?.status)}`);
  });
  assert.equal(failed, 1, 'the injected failure happened');
  assert.deepEqual(
    conditionsOf(ready).map((c) => `${c.type}=${c.status}/${c.reason}`),
    ['Ready=True/Ready', 'Validated=True/Valid', 'SourceReachable=True/Reachable', 'RepositoryReady=True/Pushed', 'Synced=True/Synced'],
  );
});
