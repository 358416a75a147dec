// Controllers write status through the registry as the system identity (src/controllers/client.ts),
// not into the Store: the mirror's status writer (writeMirrorStatus, what the mirror controller
// calls) is validated like a client's PUT of /status — an invalid status is refused with 422 and
// stores nothing — records managedFields for the server's manager, and is counted in the API's
// request metrics with the labels that PUT would have.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createStore } from '../../src/storage/index.js';
import { createServerMetrics } from '../../src/metrics/metrics.js';
import { SystemClient } from '../../src/controllers/client.js';
import { writeMirrorStatus, type MirrorStatus } from '../../src/controllers/mirror/status.js';
import { Registries } from '../../src/registry/registries.js';
import { RESOURCES } from '../../src/api/resources.js';
import { systemContext, systemWriteOptions } from '../../src/registry/context.js';
import { StatusError } from '../../src/api/status.js';

const ok = { status: 'True' as const, reason: 'Valid', message: 'fine' };

test('a controller status write goes through the registry: validated (422 stores nothing), managedFields, request metrics', { timeout: 30_000 }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'status-registry-'));
  const store = await createStore({ storage: 'embedded', dataDir: dir });
  t.after(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const registries = new Registries(store, RESOURCES);
  const metrics = createServerMetrics();
  const client = new SystemClient(registries, metrics);
  const created = (
    await registries.get('gittargets')!.create(
      systemContext(),
      'team-a',
      {
        apiVersion: 'configbutler.ai/v1alpha1',
        kind: 'GitTarget',
        metadata: { name: 'tenants', namespace: 'team-a' },
        spec: { repository: { url: 'local:tenants' }, branch: 'main', path: 'clusters/dev', resources: [{ group: '', resource: 'configmaps' }] },
      },
      systemWriteOptions(),
    )
  ).object;
  const key = { cluster: '_', namespace: 'team-a', name: 'tenants' };
  const uid = created.metadata.uid!;
  const counted = async (code: string) => (await metrics.registry.getSingleMetric('apiserver_request_total')!.get()).values.find((v) => v.labels.verb === 'update' && v.labels.resource === 'gittargets' && v.labels.code === code)?.value ?? 0;

  const s: MirrorStatus = { generation: 1, validated: ok, sourceReachable: ok, synced: ok, streams: { ready: 1, total: 1 } };
  await writeMirrorStatus(client, key, uid, s);
  const stored = await store.get({ group: 'configbutler.ai', resource: 'gittargets' }, key);
  assert.deepEqual(
    (stored!.status as { conditions: Array<{ type: string; status: string }> }).conditions.map((c) => `${c.type}=${c.status}`),
    ['Ready=False', 'Validated=True', 'SourceReachable=True', 'Synced=True'],
  );
  assert.deepEqual((stored!.status as { streams: unknown }).streams, { ready: 1, total: 1, summary: '1/1' });
  assert.deepEqual(
    (stored!.metadata.managedFields as Array<{ manager: string; operation: string; subresource?: string }>).map((m) => `${m.manager} ${m.operation} ${m.subresource ?? ''}`),
    ['reverser-apiserver Update ', 'reverser-apiserver Update status'],
    'the status write is recorded for the server’s field manager on the status subresource',
  );
  assert.equal(await counted('200'), 1);

  // A status the schema refuses: 422 Invalid naming the field, and nothing is stored.
  const bad = { ...s, synced: { status: 'Maybe', reason: 'Unsure', message: 'a controller bug' } } as unknown as MirrorStatus;
  await assert.rejects(
    () => writeMirrorStatus(client, key, uid, bad),
    (e: unknown) => {
      assert.ok(e instanceof StatusError, String(e));
      assert.equal(e.status.code, 422);
      assert.equal(e.status.reason, 'Invalid');
      assert.deepEqual(
        e.status.details?.causes?.map((c) => c.field),
        ['status.conditions[3].status'],
      );
      return true;
    },
  );
  const after = await store.get({ group: 'configbutler.ai', resource: 'gittargets' }, key);
  assert.equal(after!.metadata.resourceVersion, stored!.metadata.resourceVersion, 'the refused write stored nothing');
  assert.equal(await counted('422'), 1);
  assert.equal(await counted('200'), 1);
});
