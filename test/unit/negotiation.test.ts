import { test } from 'node:test';
import assert from 'node:assert/strict';
import { negotiate, negotiateAs, wantsAggregatedDiscovery } from '../../src/apiserver/negotiation.js';
import { openapiV3AcceptsJSON } from '../../src/apiserver/non-resource.js';
import { StatusError } from '../../src/api/status.js';

const TABLE = 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json';
const all = { table: true, partial: true, partialList: true };

test('first producible alternative wins', () => {
  assert.equal(negotiate(TABLE, all), 'table');
  assert.equal(negotiate(TABLE, { ...all, table: false }), 'json');
  assert.equal(negotiate(undefined, all), 'json');
  assert.equal(negotiate('application/vnd.kubernetes.protobuf,application/json', all), 'json');
  assert.equal(negotiate('application/yaml', all), 'yaml');
  assert.equal(negotiate('*/*', all), 'json');
  assert.equal(negotiate('application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json', all), 'partial-list');
  assert.equal(negotiate('application/json;g=meta.k8s.io;v=v1;as=PartialObjectMetadata', all), 'partial');
});

test('nothing producible is a 406 NotAcceptable', () => {
  for (const accept of ['application/vnd.kubernetes.protobuf', 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1', 'text/html']) {
    assert.throws(
      () => negotiate(accept, { table: true, partial: false, partialList: true }),
      (e: unknown) => e instanceof StatusError && e.status.code === 406 && e.status.reason === 'NotAcceptable',
      accept,
    );
  }
});

test('aggregated discovery preference as kubectl 1.27 and 1.33 ask', () => {
  assert.equal(wantsAggregatedDiscovery('application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json'), 'v2beta1');
  assert.equal(
    wantsAggregatedDiscovery(
      'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json',
    ),
    'v2',
  );
  assert.equal(wantsAggregatedDiscovery('application/json'), 'legacy');
  assert.equal(wantsAggregatedDiscovery(undefined), 'legacy');
  assert.equal(wantsAggregatedDiscovery('application/json;g=apidiscovery.k8s.io;v=v3;as=APIGroupDiscoveryList'), 'none');
});

test('a Table or PartialObjectMetadata asked for as meta.k8s.io/v1beta1 is answered in v1beta1, as kube does', () => {

  assert.deepEqual(negotiateAs('application/json;as=Table;v=v1beta1;g=meta.k8s.io', all), { output: 'table', metaVersion: 'meta.k8s.io/v1beta1' });
  assert.deepEqual(negotiateAs(TABLE, all), { output: 'table', metaVersion: 'meta.k8s.io/v1' });
  assert.deepEqual(negotiateAs('application/json;as=PartialObjectMetadata;v=v1beta1;g=meta.k8s.io', all), { output: 'partial', metaVersion: 'meta.k8s.io/v1beta1' });
  assert.deepEqual(negotiateAs('application/json;as=PartialObjectMetadataList;v=v1beta1;g=meta.k8s.io', all), { output: 'partial-list', metaVersion: 'meta.k8s.io/v1beta1' });
  assert.deepEqual(negotiateAs('application/json;as=Table;v=v2;g=meta.k8s.io,application/json', all), { output: 'json', metaVersion: 'meta.k8s.io/v1' });
});

test('OpenAPI v3: JSON whenever an Accept alternative allows it (by quality, as kube-openapi), never for protobuf alone', () => {
  const P = 'application/com.github.proto-openapi.spec.v3@v1.0+protobuf';
  const yes = ['', 'application/json', '*/*', 'application/*', `${P}, application/json`, `application/json;q=0.5, ${P}`, `${P};q=0, application/json;q=0.1`, 'application/json;q=0', `${P}, */*`];
  const no = [P, 'application/com.github.proto-openapi.spec.v3.v1.0+protobuf', 'text/html', 'application/yaml', `${P}, text/plain`];
  for (const a of yes) assert.equal(openapiV3AcceptsJSON(a || undefined), true, a);
  for (const a of no) assert.equal(openapiV3AcceptsJSON(a), false, a);
});
