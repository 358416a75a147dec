// The server compiles its own resources' schemas after start-up (src/server/run.ts), outside any
// request: Registries.compileValidators compiles exactly the named group's validators, one per
// turn of the event loop, and a write afterwards validates as before.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { GROUP, RESOURCES, SANDBOX_RESOURCES } from '../../src/api/resources.js';
import { Registries } from '../../src/registry/registries.js';
import { systemContext } from '../../src/registry/context.js';
import { StatusError } from '../../src/api/status.js';
import { createEmbeddedStore } from '../../src/storage/embedded.js';
import { tempDir, type TestContext } from '../auth-e2e/harness.js';

test('compileValidators compiles the named group only, one per turn, and writes validate as before', { timeout: 60_000 }, async (t: TestContext) => {
  const store = await createEmbeddedStore({ dataDir: tempDir(t, 'compile-validators-') });
  t.after(() => store.close());
  const registries = new Registries(store, [...SANDBOX_RESOURCES, ...RESOURCES]);
  const compiled = () => [...registries].filter((r) => r.schemaValidator.compiled()).map((r) => `${r.def.group}/${r.def.plural}`).sort();
  assert.deepEqual(compiled(), []);

  // Other work gets the event loop between two compiles.
  let turns = 0;
  const counting = setInterval(() => turns++, 0);
  await registries.compileValidators(GROUP);
  clearInterval(counting);
  const own = RESOURCES.map((d) => `${d.group}/${d.plural}`).sort();
  assert.deepEqual(compiled(), own);
  assert.ok(turns >= 1, `timers ran ${turns} times during the compiles`);
  await registries.compileValidators(GROUP); // nothing left to compile
  assert.deepEqual(compiled(), own);

  // A write after the warm-up is validated by the compiled schema: the same 422 as ever.
  const err = await registries
    .get('commitrequests')!
    .create(systemContext(), 'default', { apiVersion: `${GROUP}/v1alpha1`, kind: 'CommitRequest', metadata: { name: 'warm' }, spec: {} }, { dryRun: true, fieldManager: 't', fieldValidation: 'Strict' })
    .then(() => undefined, (e: unknown) => e);
  assert.ok(err instanceof StatusError);
  assert.deepEqual([err.status.code, err.status.message], [422, 'CommitRequest.configbutler.ai "warm" is invalid: [spec.targetRef: Required value, spec.message: Required value]']);
});
