// Creates of GitTargets run one at a time only over the scope a quota counts (src/registry/quota.ts):
// serialized, each waits for the store's round trip of the one before, which halved the API
// bench's CREATE throughput when it was done for every server (docs/benchmarks.md).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_GITTARGET_QUOTAS, gitTargetQuotaHooks } from '../../src/registry/quota.js';

const store = { list: async () => ({ items: [], resourceVersion: '1' }) } as never;
const scope = (q: Partial<typeof DEFAULT_GITTARGET_QUOTAS>) => gitTargetQuotaHooks(store, { ...DEFAULT_GITTARGET_QUOTAS, ...q }).serializeCreates;

test('the widest scope a quota counts is serialized; nothing when no quota counts', () => {
  assert.equal(scope({}), 'cluster');
  assert.equal(scope({ perNamespace: 0 }), 'cluster');
  assert.equal(scope({ perCluster: 0 }), 'namespace');
  assert.equal(scope({ perCluster: 0, perNamespace: 0 }), 'namespace');
  assert.equal(scope({ perCluster: 0, streamsPerNamespace: 0 }), 'namespace');
  // Streams per GitTarget count nothing but the object itself.
  assert.equal(scope({ perCluster: 0, perNamespace: 0, streamsPerNamespace: 0 }), undefined);
  assert.equal(scope({ perCluster: 0, perNamespace: 0, streamsPerNamespace: 0, streamsPerGitTarget: 0 }), undefined);
});
