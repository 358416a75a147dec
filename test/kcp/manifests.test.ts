// apiservice/kcp/: the generated APIResourceSchemas and APIExport are what `npm run gen:kcp` writes
// today (drift fails here), their schemas are the served OpenAPI's, every resource of the export
// uses virtual storage pointing at the endpoint slice, and docs/kcp.md shows the files verbatim.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { GROUP, RESOURCES, VERSION } from '../../src/api/resources.js';
import { buildOpenAPIDocuments } from '../../src/apiserver/openapi/index.js';
import { generatedKcpFiles } from '../../src/kcp/manifests.js';

// dist/test/kcp → repository root
const ROOT = resolve(fileURLToPath(new URL('.', import.meta.url)), '..', '..', '..');
const DIR = join(ROOT, 'apiservice', 'kcp');
const read = (name: string) => readFileSync(join(DIR, name), 'utf8');
const docsOf = (text: string) => parseAllDocuments(text).map((d) => {
  assert.deepEqual(d.errors, []);
  return d.toJS();
}).filter((d) => d !== null);

test('generated files are up to date (run `npm run gen:kcp` after changing src/api)', () => {
  for (const [name, text] of Object.entries(generatedKcpFiles())) {
    assert.equal(read(name), text, `apiservice/kcp/${name} drifted from src/api: run npm run gen:kcp`);
  }
});

test('APIResourceSchemas carry the served OpenAPI schema, names and printer columns', () => {
  const served = JSON.parse(buildOpenAPIDocuments(RESOURCES, { title: 't', version: 'v' }).v3GroupVersions.get(`apis/${GROUP}/${VERSION}`)!.body.toString());
  const schemas = docsOf(read('apiresourceschemas.yaml'));
  assert.deepEqual(schemas.map((s) => s.spec.names.plural), ['gittargets', 'commitrequests']);
  for (const s of schemas) {
    assert.equal(s.apiVersion, 'apis.kcp.io/v1alpha1');
    assert.equal(s.kind, 'APIResourceSchema');
    assert.match(s.metadata.name, new RegExp(`^s[0-9a-f]{10}\\.${s.spec.names.plural}\\.configbutler\\.ai$`));
    assert.equal(s.spec.group, GROUP);
    assert.equal(s.spec.scope, 'Namespaced');
    const [v] = s.spec.versions;
    assert.equal(v.name, VERSION);
    assert.deepEqual(v.subresources, { status: {} });
    const component = served.components.schemas[`ai.configbutler.v1alpha1.${s.spec.names.kind}`];
    const own = v.schema;
    assert.deepEqual(own.properties.metadata, { type: 'object' });
    for (const field of ['spec', 'status', 'apiVersion', 'kind']) assert.deepEqual(own.properties[field], component.properties[field], field);
    assert.deepEqual(own.required, component.required);
    const def = RESOURCES.find((r) => r.plural === s.spec.names.plural)!;
    assert.deepEqual(v.additionalPrinterColumns.map((c: any) => `${c.name}=${c.jsonPath}`), def.columns.map((c) => `${c.name}=${c.jsonPath}`));
    assert.deepEqual(s.spec.names.shortNames, def.shortNames);
  }
});

test('APIExport: every resource is virtual storage referencing the endpoint slice, with the generated schema names', () => {
  const [exp] = docsOf(read('apiexport.yaml'));
  const schemas = docsOf(read('apiresourceschemas.yaml'));
  const [slice] = docsOf(read('endpointslice.yaml'));
  const [crd] = docsOf(read('endpointslice-crd.yaml'));
  assert.equal(exp.apiVersion, 'apis.kcp.io/v1alpha2');
  assert.deepEqual(exp.spec.resources, schemas.map((s) => ({
    group: GROUP, name: s.spec.names.plural, schema: s.metadata.name,
    storage: { virtual: { reference: { apiGroup: 'kcp.configbutler.ai', kind: 'ReverserEndpointSlice', name: 'reverser-apiserver' } } },
  })));
  assert.equal(slice.apiVersion, `${crd.spec.group}/${crd.spec.versions[0].name}`);
  assert.equal(slice.kind, crd.spec.names.kind);
  assert.equal(slice.metadata.name, 'reverser-apiserver');
  assert.deepEqual(slice.status.endpoints, [{ url: 'https://reverser-apiserver.reverser-system.svc:443', shards: { matchAll: true } }]);
  assert.equal(crd.metadata.name, `${crd.spec.names.plural}.${crd.spec.group}`);
  const [binding] = docsOf(read('apibinding.yaml'));
  assert.equal(binding.spec.reference.export.name, exp.metadata.name);
  const rbac = docsOf(read('consumer-rbac.yaml'));
  assert.ok(rbac[0].rules.some((r: any) => r.resources.includes('gittargets') && r.verbs.includes('assert-author')));
});

test('docs/kcp.md: every YAML block is a file of apiservice/kcp/, verbatim, and every hand-written file is shown', () => {
  const md = readFileSync(join(ROOT, 'docs', 'kcp.md'), 'utf8');
  const blocks = [...md.matchAll(/<!-- file: apiservice\/kcp\/([a-z.-]+) -->\n```yaml\n([\s\S]*?)```\n/g)];
  const allYaml = [...md.matchAll(/```yaml\n/g)].length;
  assert.equal(blocks.length, allYaml, 'every yaml block in docs/kcp.md is preceded by <!-- file: apiservice/kcp/NAME -->');
  for (const [, name, body] of blocks) assert.equal(body, read(name!), `docs/kcp.md block for ${name}`);
  const shown = new Set(blocks.map((b) => b[1]));
  const handWritten = readdirSync(DIR).filter((f) => f.endsWith('.yaml') && !(f in generatedKcpFiles()));
  for (const f of handWritten) assert.ok(shown.has(f), `docs/kcp.md shows ${f}`);
  assert.ok(shown.has('apiexport.yaml'));
});
