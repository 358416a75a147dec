// The one YAML encoder: new files and in-place edits agree byte for byte.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { editFileText, encodeObject } from '../../src/git/manifest-yaml.js';
import { parse } from 'yaml';

const deploy = (replicas: number) => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { namespace: 'shop', labels: { app: 'web' }, name: 'web' },
  spec: { replicas, template: { spec: { containers: [{ name: 'web', image: 'nginx:1', args: ['--a', '--b'] }] } } },
});

test('new files: apiVersion, kind, metadata first; 2-space indent; sequences under their key', () => {
  assert.equal(
    encodeObject(deploy(1)),
    [
      'apiVersion: apps/v1', 'kind: Deployment', 'metadata:', '  name: web', '  namespace: shop', '  labels:', '    app: web',
      'spec:', '  replicas: 1', '  template:', '    spec:', '      containers:', '        - name: web', '          image: nginx:1',
      '          args:', '            - --a', '            - --b', '',
    ].join('\n'),
  );
});

test('create then update changes only the changed line', () => {
  const created = editFileText(undefined, { writes: [deploy(1)], deletes: [] })!;
  const updated = editFileText(created, { writes: [deploy(2)], deletes: [] })!;
  const a = created.split('\n');
  const b = updated.split('\n');
  assert.equal(a.length, b.length);
  assert.deepEqual(a.map((l, i) => (l === b[i] ? null : [l, b[i]])).filter(Boolean), [['  replicas: 1', '  replicas: 2']]);
  // Updating to what the file holds gives the same bytes.
  assert.equal(editFileText(updated, { writes: [deploy(2)], deletes: [] }), updated);
});

test('removed keys and list items go; comments elsewhere stay', () => {
  const text = ['# keep me', 'apiVersion: v1', 'kind: ConfigMap', 'metadata:', '  name: c', 'data:', '  a: "1" # why a', '  b: "2"', ''].join('\n');
  const out = editFileText(text, { writes: [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, data: { a: '1' } }], deletes: [] });
  assert.equal(out, ['# keep me', 'apiVersion: v1', 'kind: ConfigMap', 'metadata:', '  name: c', 'data:', '  a: "1" # why a', ''].join('\n'));
});

test('deleting the last document removes the file; an unknown identity is appended', () => {
  const one = encodeObject({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a' } });
  assert.equal(editFileText(one, { writes: [], deletes: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'a' }] }), null);
  const two = editFileText(one, { writes: [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'b' } }], deletes: [] });
  assert.equal(two, one + '---\n' + encodeObject({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'b' } }));
});

test('strings YAML 1.1 readers (kubectl, Flux, Argo) would misread are quoted, in new files and in edits', () => {
  const cm = (v: string) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'flags', namespace: 'shop' }, data: { enabled: v, since: '2024-01-01', plain: 'x' } });
  const created = editFileText(undefined, { writes: [cm('yes')], deletes: [] })!;
  assert.equal(created, 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: flags\n  namespace: shop\ndata:\n  enabled: "yes"\n  since: "2024-01-01"\n  plain: x\n');
  const updated = editFileText(created, { writes: [cm('off')], deletes: [] })!;
  assert.equal(updated, created.replace('enabled: "yes"', 'enabled: "off"'));
  // A hand-written file with an unquoted `on` is corrected when the object is written.
  const hand = created.replace('enabled: "yes"', 'enabled: on');
  assert.equal(editFileText(hand, { writes: [cm('on')], deletes: [] }), created.replace('enabled: "yes"', 'enabled: "on"'));
});

test('every string reads back as itself under YAML 1.1 and 1.2, and common names and values stay plain', () => {
  // The encoder answers common shapes without parsing them (model/yaml-scalars.ts); this checks
  // those answers against real YAML 1.1 and 1.2 readers, including the words that resolve to
  // booleans or null in any case mix, and shapes just outside the fast path.
  const words = ['y', 'Y', 'n', 'N', 'yes', 'Yes', 'YES', 'yEs', 'no', 'No', 'NO', 'true', 'True', 'TRUE', 'tRUE', 'false', 'False', 'on', 'On', 'ON', 'off', 'Off', 'OFF', 'null', 'Null', 'NULL', 'nULL', '~'];
  const shapes = ['cm-00001', 'value of cm-00001', 'a', 'Z', 'x.y/z_w-v', 'a b', 'a  b', 'yes no', 'on-call', 'null-ish', 'a ', ' a', 'a #b', 'a: b', '0', '007', '12345', '-1', '+1', '1e3', '0x1F', '0o17', '1_000', '1:30', '.inf', '.NaN', '2024-01-01', '=', '<<', 'a\tb', 'é', 'a/b#c'];
  const parse11 = (s: string) => parse(s, { version: '1.1' }) as Record<string, unknown>;
  const parse12 = (s: string) => parse(s, { version: '1.2' }) as Record<string, unknown>;
  for (const v of [...words, ...shapes]) {
    const text = encodeObject({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'n', namespace: 's' }, data: { [v]: v } });
    assert.deepEqual(parse11(text).data, { [v]: v }, `YAML 1.1 reads ${JSON.stringify(v)} back from:\n${text}`);
    assert.deepEqual(parse12(text).data, { [v]: v }, `YAML 1.2 reads ${JSON.stringify(v)} back from:\n${text}`);
  }
  const plain = encodeObject({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm-00001', namespace: 'bench' }, data: { value: 'value of cm-00001', path: 'x.y/z_w-v' } });
  assert.equal(plain, 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-00001\n  namespace: bench\ndata:\n  value: value of cm-00001\n  path: x.y/z_w-v\n');
});
