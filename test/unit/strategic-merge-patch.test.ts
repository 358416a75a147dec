// Strategic merge patches as kubectl edit and client-side apply send them for built-in kinds.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { strategicMergePatch } from '../../src/apiserver/strategic-merge-patch.js';
import { deployments } from '../../src/api/apps-v1.js';
import { configMaps } from '../../src/api/core-v1.js';

const deploy = () => ({
  metadata: { name: 'web', finalizers: ['a', 'b'], labels: { app: 'web', tier: 'front' } },
  spec: {
    replicas: 1,
    strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1 } },
    template: {
      spec: {
        containers: [
          { name: 'web', image: 'nginx:1', env: [{ name: 'A', value: '1' }, { name: 'B', value: '2' }] },
          { name: 'sidecar', image: 'envoy:1' },
        ],
        tolerations: [{ key: 'x' }, { key: 'y' }],
      },
    },
  },
});

test('maps merge, null deletes, lists merge by their key or are replaced', () => {
  const out = strategicMergePatch(
    deploy(),
    {
      metadata: { labels: { tier: null, team: 'a' } },
      spec: {
        template: {
          spec: {
            containers: [{ name: 'web', image: 'nginx:2', env: [{ name: 'B', value: '3' }, { name: 'C', value: '4' }] }, { name: 'new', image: 'busybox' }],
            tolerations: [{ key: 'z' }],
          },
        },
      },
    },
    deployments.strategicMerge!,
  ) as any;
  assert.deepEqual(out.metadata.labels, { app: 'web', team: 'a' });
  assert.deepEqual(out.spec.template.spec.containers, [
    { name: 'web', image: 'nginx:2', env: [{ name: 'A', value: '1' }, { name: 'B', value: '3' }, { name: 'C', value: '4' }] },
    { name: 'sidecar', image: 'envoy:1' },
    { name: 'new', image: 'busybox' },
  ]);
  assert.deepEqual(out.spec.template.spec.tolerations, [{ key: 'z' }]);
});

test('directives: $patch delete and replace, $retainKeys, $deleteFromPrimitiveList, $setElementOrder', () => {
  const out = strategicMergePatch(
    deploy(),
    {
      metadata: { '$deleteFromPrimitiveList/finalizers': ['a'], finalizers: ['c'] },
      spec: {
        strategy: { $retainKeys: ['type'], type: 'Recreate' },
        template: {
          spec: {
            '$setElementOrder/containers': [{ name: 'sidecar' }, { name: 'web' }],
            containers: [{ name: 'web', $patch: 'delete' }],
          },
        },
      },
    },
    deployments.strategicMerge!,
  ) as any;
  assert.deepEqual(out.metadata.finalizers, ['b', 'c']);
  assert.deepEqual(out.spec.strategy, { type: 'Recreate' });
  assert.deepEqual(out.spec.template.spec.containers, [{ name: 'sidecar', image: 'envoy:1' }]);
  const replaced = strategicMergePatch(deploy(), { spec: { template: { spec: { containers: [{ $patch: 'replace' }, { name: 'only', image: 'x' }] } } } }, deployments.strategicMerge!) as any;
  assert.deepEqual(replaced.spec.template.spec.containers, [{ name: 'only', image: 'x' }]);
  const whole = strategicMergePatch(deploy(), { spec: { $patch: 'replace', replicas: 3 } }, deployments.strategicMerge!) as any;
  assert.deepEqual(whole.spec, { replicas: 3 });
});

test('what kubectl edit sends for a ConfigMap', () => {
  const cm = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, data: { a: '1', b: '2' } };
  assert.deepEqual(strategicMergePatch(cm, { data: { a: 'edited', b: null, c: '3' } }, configMaps.strategicMerge!), {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'c' },
    data: { a: 'edited', c: '3' },
  });
  assert.throws(() => strategicMergePatch(cm, { $patch: 'explode' }, configMaps.strategicMerge!), /unknown patch directive "explode"/);
  assert.throws(() => strategicMergePatch(cm, { metadata: { ownerReferences: [{ name: 'no-uid' }] } }, configMaps.strategicMerge!), /has no merge key "uid"/);
});
