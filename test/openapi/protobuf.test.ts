// The /openapi/v2 protobuf body decodes as openapi.v2.Document and carries what client-go reads.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parse } from 'yaml';
import { RESOURCES } from '../../src/api/resources.js';
import { buildOpenAPIDocuments } from '../../src/apiserver/openapi/index.js';
import { openAPIv2DocumentType } from '../../src/apiserver/openapi/protobuf.js';

const docs = buildOpenAPIDocuments(RESOURCES, { title: 'reverser-apiserver', version: 'v0.1.0' });
const v2 = JSON.parse(docs.v2Json.body.toString());
const type = openAPIv2DocumentType();
const decoded = type.toObject(type.decode(docs.v2Protobuf.body), { defaults: false, longs: Number }) as Record<string, any>;
const ITEM = '/apis/configbutler.ai/v1alpha1/namespaces/{namespace}/gittargets/{name}';
const GT = 'ai.configbutler.v1alpha1.GitTarget';
const ext = (list: any[], name: string) => parse(list.find((e) => e.name === name).value.yaml);

test('protobuf document: swagger, info, every path and definition', () => {
  assert.equal(decoded.swagger, '2.0');
  assert.deepEqual(decoded.info, { title: 'reverser-apiserver', version: 'v0.1.0' });
  assert.deepEqual(decoded.paths.path.map((p: any) => p.name), Object.keys(v2.paths));
  assert.equal(decoded.definitions.additional_properties.length, Object.keys(v2.definitions).length);
  assert.deepEqual(decoded.definitions.additional_properties.map((d: any) => d.name), Object.keys(v2.definitions));
});

test('protobuf schema: GVK list extension, types, refs, properties, enum, default', () => {
  const gt = decoded.definitions.additional_properties.find((d: any) => d.name === GT).value;
  assert.deepEqual(ext(gt.vendor_extension, 'x-kubernetes-group-version-kind'), [{ group: 'configbutler.ai', kind: 'GitTarget', version: 'v1alpha1' }]);
  assert.deepEqual(gt.type, { value: ['object'] });
  assert.deepEqual(gt.required, ['spec']);
  const props = Object.fromEntries(gt.properties.additional_properties.map((p: any) => [p.name, p.value]));
  assert.equal(props.metadata._ref, '#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta');
  const spec = Object.fromEntries(props.spec.properties.additional_properties.map((p: any) => [p.name, p.value]));
  assert.equal(spec.branch.max_length, 255);
  assert.match(spec.repository.properties.additional_properties[0].value.description, /^Repository URL/);
  const commit = Object.fromEntries(spec.commit.properties.additional_properties.map((p: any) => [p.name, p.value]));
  assert.deepEqual(commit.mode.enum.map((a: any) => parse(a.yaml)), ['Auto', 'OnRequest']);
  assert.equal(parse(commit.mode.default.yaml), 'Auto');
  assert.equal(commit.idleSeconds.maximum, 86400);
  const list = decoded.definitions.additional_properties.find((d: any) => d.name === `${GT}List`).value;
  const items = list.properties.additional_properties.find((p: any) => p.name === 'items').value;
  assert.deepEqual(items.items, { schema: [{ _ref: `#/definitions/${GT}` }] });
  const meta = decoded.definitions.additional_properties.find((d: any) => d.name === 'io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta').value;
  const labels = meta.properties.additional_properties.find((p: any) => p.name === 'labels').value;
  assert.deepEqual(labels.additional_properties, { schema: { type: { value: ['string'] } } });
});

test('protobuf PATCH operation: GVK object, operation-level fieldValidation, body parameter, consumes', () => {
  const item = decoded.paths.path.find((p: any) => p.name === ITEM).value;
  const patch = item.patch;
  // client-go YAML-decodes this into map[string]string: it must be a mapping, not a list.
  assert.deepEqual(ext(patch.vendor_extension, 'x-kubernetes-group-version-kind'), { group: 'configbutler.ai', kind: 'GitTarget', version: 'v1alpha1' });
  assert.equal(ext(patch.vendor_extension, 'x-kubernetes-action'), 'patch');
  const query = patch.parameters.filter((p: any) => p.parameter.non_body_parameter).map((p: any) => p.parameter.non_body_parameter.query_parameter_sub_schema);
  assert.deepEqual(query.find((q: any) => q.name === 'fieldValidation'), {
    name: 'fieldValidation',
    in: 'query',
    type: 'string',
    unique_items: true,
    description: v2.paths[ITEM].patch.parameters.find((p: any) => p.name === 'fieldValidation').description,
  });
  const body = patch.parameters.find((p: any) => p.parameter.body_parameter).parameter.body_parameter;
  assert.deepEqual(body, { name: 'body', in: 'body', required: true, schema: { _ref: '#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.Patch' } });
  assert.deepEqual([...patch.consumes].sort(), ['application/apply-patch+yaml', 'application/json-patch+json', 'application/merge-patch+json']);
  const ok = patch.responses.response_code.find((r: any) => r.name === '200').value.response;
  assert.equal(ok.schema.schema._ref, `#/definitions/${GT}`);
  const pathParams = item.parameters.map((p: any) => p.parameter.non_body_parameter.path_parameter_sub_schema ?? p.parameter.non_body_parameter.query_parameter_sub_schema);
  assert.deepEqual(pathParams.map((p: any) => [p.name, p.in]), [['name', 'path'], ['namespace', 'path'], ['pretty', 'query']]);
});
