// A suspended GitTarget costs no lease: the mirror reports Suspended once and gives the lease back
// (it used to keep it and renew it every few seconds, for every suspended target, forever).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { GT, readyOf, startHarness, tempDir, waitFor } from './harness.js';
import { targetLeaseName } from '../../src/controllers/runtime/index.js';

test('a GitTarget suspended from the start is reported Suspended and holds no lease', { timeout: 60_000 }, async (t) => {
  const h = await startHarness(t, { dataDir: tempDir(t, 'suspend-lease-') });
  const uid = randomUUID();
  await h.store.create(GT, { cluster: '_', namespace: 'team-a', name: 'paused' }, {
    apiVersion: 'configbutler.ai/v1alpha1',
    kind: 'GitTarget',
    metadata: { name: 'paused', namespace: 'team-a', uid, generation: 1, creationTimestamp: new Date().toISOString() },
    spec: {
      repository: { url: 'local:paused' },
      branch: 'main',
      path: 'clusters/dev',
      resources: [{ group: '', resource: 'configmaps' }],
      commit: { idleSeconds: 1, maxAgeSeconds: 600, mode: 'Auto' },
      prune: { mode: 'OnEvent' },
      includeClusterNoise: false,
      suspend: true,
    },
  });
  const ready = await waitFor('Ready=False/Suspended', async () => {
    const r = readyOf(await h.store.get(GT, { cluster: '_', namespace: 'team-a', name: 'paused' }));
    return r?.reason === 'Suspended' ? r : undefined;
  });
  assert.deepEqual({ status: ready.status, message: ready.message }, { status: 'False', message: 'spec.suspend is true: nothing is mirrored or committed' });
  const lease = targetLeaseName({ cluster: '_', namespace: 'team-a', name: 'paused', uid });
  // Past a renewal period (ttl/3 = 3.3 s): nobody took it again.
  await new Promise((r) => setTimeout(r, 4_000));
  assert.equal(h.running.keeper.holds(lease), undefined, 'this replica holds no lease for the suspended target');
  const other = await h.store.acquireLease(lease, 'another-replica', 10_000);
  assert.ok(other, 'the lease is free in the store: another replica takes it at once');
});
