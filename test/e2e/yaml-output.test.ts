// YAML the server writes reads back as the same values in YAML 1.1 readers: kubectl (Go's
// sigs.k8s.io/yaml) applies it unchanged, and PyYAML reads the same object as the JSON form.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { Kubectl, kubectlBinary } from '../support/kubectl.js';
import { gitTarget, ns, startServer, type StartedServer } from '../support/server.js';
import { waitMs } from '../support/deadline.js';

// Strings that YAML 1.2 writes plain but YAML 1.1 reads as booleans, timestamps or numbers.
const LABELS = { a: 'yes', b: 'no', c: 'on', d: 'off', e: 'y', f: 'n', g: 'Yes', h: 'OFF', t: 'true', day: '2024-01-01' };
const ANNOTATIONS = { 'x/under': '1_000', 'x/octal': '0o17', 'x/sexagesimal': '1:20', 'x/tilde': '~', 'x/null': 'null', 'x/time': '2001-12-14t21:59:43.10-05:00', 'x/inf': '.inf', 'x/merge': '<<', 'x/plain': 'plain' };

let server: StartedServer;
let kubectl: Kubectl;
before(async () => {
  server = await startServer();
  kubectl = new Kubectl(kubectlBinary(), server.kubeconfig);
});
after(async () => {
  kubectl?.cleanup();
  await server?.stop();
});

/** PyYAML (a YAML 1.1 reader) parses `text`; returns the JSON it makes of it. */
function pyyaml(text: string): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const p = execFile('python3', ['-c', 'import sys, json, yaml; json.dump(yaml.safe_load(sys.stdin), sys.stdout)'], { timeout: waitMs(20_000) }, (err, stdout, stderr) =>
      err ? reject(new Error(`python3 with PyYAML failed (pip install pyyaml): ${stderr || err.message}`)) : resolve(JSON.parse(stdout)));
    p.stdin!.end(text);
  });
}

test('Accept: application/yaml quotes YAML 1.1 booleans, timestamps and numbers; PyYAML and kubectl apply read it back unchanged', async () => {
  const body = gitTarget('ambiguous', 'yaml11', { labels: LABELS });
  body.metadata.annotations = ANNOTATIONS;
  const created = await server.request('POST', ns('yaml11'), { body });
  assert.equal(created.status, 201, created.text);

  const asYAML = await server.get(`${ns('yaml11')}/ambiguous`, { accept: 'application/yaml' });
  assert.equal(asYAML.status, 200, asYAML.text);
  assert.equal(asYAML.headers['content-type'], 'application/yaml');
  for (const [k, v] of Object.entries(LABELS)) assert.ok(asYAML.text.includes(`    ${k}: "${v}"\n`), `label ${k}: ${v} is not quoted:\n${asYAML.text}`);
  assert.ok(asYAML.text.includes('    x/plain: plain\n'), 'unambiguous strings stay plain');
  const asJSON = await server.get(`${ns('yaml11')}/ambiguous`);
  assert.deepEqual(await pyyaml(asYAML.text), asJSON.body);

  // The list too.
  const list = await server.get(ns('yaml11'), { accept: 'application/yaml' });
  assert.deepEqual(await pyyaml(list.text), (await server.get(ns('yaml11'))).body);

  // kubectl applies the server's YAML as it is (same labels), and reads it back identically.
  const applied = await kubectl.run(['apply', '-f', kubectl.file('ambiguous.yaml', asYAML.text)]);
  assert.equal(applied.code, 0, applied.stderr);
  assert.equal(applied.stdout, 'gittarget.configbutler.ai/ambiguous configured\n');
  const after = await server.get(`${ns('yaml11')}/ambiguous`);
  assert.deepEqual(after.body.metadata.labels, LABELS);
  assert.deepEqual(Object.fromEntries(Object.entries(after.body.metadata.annotations).filter(([k]) => k.startsWith('x/'))), ANNOTATIONS);
});
