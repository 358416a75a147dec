// The answers test/cluster/parity-differential.test.ts compares with the real kube-apiserver, fast
// and without a control plane: enum errors name their values, timeoutSeconds that is not a number is
// 400 (as kube-apiserver), and the answers we keep on purpose (docs/api.md#errors). Exact bodies.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { gitTarget, startServer, type StartedServer } from '../support/server.js';

const GTS = '/apis/configbutler.ai/v1alpha1/namespaces/default/gittargets';
let server: StartedServer;
before(async () => {
  server = await startServer();
});
after(() => server?.stop());

test('an enum field names its supported values (spec.prune.mode, spec.commit.mode)', async () => {
  const r = await server.request('POST', GTS, { body: gitTarget('enum', 'default', { spec: { prune: { mode: 'Sometimes' }, commit: { mode: 'Later' } } }) });
  assert.equal(r.status, 422, r.text);
  assert.equal(r.body.message,
    'GitTarget.configbutler.ai "enum" is invalid: [spec.commit.mode: Unsupported value: "Later": supported values: "Auto", "OnRequest", ' +
    'spec.prune.mode: Unsupported value: "Sometimes": supported values: "Never", "OnEvent", "Always"]');
  assert.deepEqual(r.body.details.causes, [
    { reason: 'FieldValueNotSupported', message: 'Unsupported value: "Later": supported values: "Auto", "OnRequest"', field: 'spec.commit.mode' },
    { reason: 'FieldValueNotSupported', message: 'Unsupported value: "Sometimes": supported values: "Never", "OnEvent", "Always"', field: 'spec.prune.mode' },
  ]);
});

test('timeoutSeconds that is not a non-negative integer: 400 BadRequest, on lists and watches', async () => {
  for (const q of ['timeoutSeconds=x', 'timeoutSeconds=-1', 'watch=true&timeoutSeconds=1.5']) {
    const r = await server.request('GET', `${GTS}?${q}`);
    const v = new URLSearchParams(q).get('timeoutSeconds');
    assert.deepEqual([r.status, r.body.reason, r.body.message], [400, 'BadRequest', `timeoutSeconds: invalid value "${v}": must be a non-negative integer`], q);
  }
});

test('kept on purpose: Strict unknown fields are 422 with a cause per field; an immediate DELETE returns the object', async () => {
  const r = await server.request('POST', `${GTS}?fieldValidation=Strict`, { body: { ...gitTarget('strict'), bogus: 1, spec: { ...gitTarget('strict').spec, x: 1 } } });
  assert.equal(r.status, 422, r.text);
  assert.equal(r.body.message, 'GitTarget.configbutler.ai "strict" is invalid: [spec.x: Forbidden: unknown field "spec.x", bogus: Forbidden: unknown field "bogus"]');
  const c = await server.request('POST', GTS, { body: gitTarget('gone') });
  assert.equal(c.status, 201, c.text);
  const d = await server.request('DELETE', `${GTS}/gone`);
  assert.equal(d.status, 200, d.text);
  assert.deepEqual([d.body.kind, d.body.metadata.name, d.body.metadata.uid], ['GitTarget', 'gone', c.body.metadata.uid]);
});
