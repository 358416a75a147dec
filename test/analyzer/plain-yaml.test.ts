// The plain reader (src/analyzer/plain-yaml.ts) against the full `yaml` parser: wherever the
// plain reader answers, the gate's findings must be exactly those of the full parser
// (analyzeManifest vs analyzeManifestFully, src/analyzer/file-rules.ts). A corpus of tricky YAML
// names the cases the plain reader must leave to the full parser, the cases it must read itself
// (so that this test exercises it), and thousands of generated files mix both.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { analyzeManifest, analyzeManifestFully } from '../../src/analyzer/file-rules.js';
import { readPlainManifest } from '../../src/analyzer/plain-yaml.js';
import { mulberry32 } from '../support/mulberry32.js';

const same = (text: string, what: string) => assert.deepEqual(analyzeManifest('f.yaml', text), analyzeManifestFully('f.yaml', text), `${what}: ${JSON.stringify(text)}`);

const obj = (rest = '', name = 'x', ns = 'team-a') => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n  namespace: ${ns}\n${rest}`;

/** Manifests the plain reader reads itself, with what the gate finds in them. */
const PLAIN: Array<[string, string]> = [
  ['the writer layout', obj('data:\n  key: v\n')],
  ['a deployment with compact and indented sequences, block scalars, empty flow collections', 'apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  labels:\n    app.kubernetes.io/name: web\nspec:\n  replicas: 2\n  template:\n    spec:\n      containers:\n      - name: web\n        image: nginx:1.25\n        args: []\n        resources: {}\n        command:\n        - sh\n        - -c\n        - |\n          echo "a: b"\n\n          echo {done}\n      volumes:\n        - name: x\n          emptyDir: {}\n'],
  ['comments everywhere', '# head\napiVersion: v1 # trailing\nkind: ConfigMap\n# between\nmetadata:\n    # less or more indented comment\n  name: x\ndata:\n  k: a#b\n'],
  ['quoted identity values', `apiVersion: "v1"\nkind: 'ConfigMap'\nmetadata:\n  name: 'it''s'\n  namespace: "team-a"\n`],
  ['multi-document, one owner', obj() + '---\n' + obj('', 'y')],
  ['multi-document, two owners', obj() + '---\n' + obj('', 'y', 'team-b')],
  ['a leading marker, an empty document and a trailing marker', '---\n---\n' + obj() + '---\n'],
  ['only comments', '# nothing here\n'],
  ['empty', ''],
  ['no trailing newline', obj('data:\n  k: v')],
  ['not an object: values', 'replicas: 3\nimage: nginx\n'],
  ['not an object: empty name', obj('', "''")],
  ['not an object: metadata is a list', 'apiVersion: v1\nkind: A\nmetadata:\n- name: x\n'],
  ['not an object: metadata is empty', 'apiVersion: v1\nkind: A\nmetadata: {}\n'],
  ['not an object: metadata is null', 'apiVersion: v1\nkind: A\nmetadata:\nspec: {}\n'],
  ['the same identity twice in one file', obj() + '---\n' + obj()],
  ['a mapping of many keys', obj('data:\n' + Array.from({ length: 40 }, (_, i) => `  k${i}: v`).join('\n') + '\n')],
  ['folded and chomped block scalars', obj('data:\n  a: >-\n    folded\n    text\n  b: |+\n    kept\n\n  c: |\n')],
];

/** Manifests the plain reader must leave to the full parser. */
const DEFERRED: Array<[string, string]> = [
  ['flow mapping', 'apiVersion: v1\nkind: A\nmetadata: {name: x, namespace: team-a}\n'],
  ['flow sequence', obj('data:\n  list: [a, b]\n')],
  ['quoted keys', `"apiVersion": v1\nkind: A\nmetadata:\n  name: x\n`],
  ['multi-line plain scalar', obj('data:\n  k: one\n    two\n')],
  ['multi-line quoted scalar', obj('data:\n  k: "one\n    two"\n')],
  ['escapes in double quotes', obj('data:\n  k: "a\\tb"\n')],
  ['block scalar with an indentation indicator', obj('data:\n  k: |2\n     x\n')],
  ['anchors and aliases', obj('  labels: &l\n    a: b\n  annotations: *l\n')],
  ['merge keys', obj('data:\n  <<: {a: b}\n')],
  ['tags', obj('data:\n  k: !!str 1\n')],
  ['a template', 'apiVersion: v1\nkind: A\nmetadata:\n  name: {{ .Values.name }}\n'],
  ['a quoted template', obj('data:\n  rule: "{{ $labels.instance }} is down"\n')],
  ['a byte order mark', '\uFEFF' + obj()],
  ['CRLF line ends', obj('data:\n  k: v\n').replace(/\n/g, '\r\n')],
  ['tabs', obj('data:\n  k:\tv\n')],
  ['non-ASCII', obj('data:\n  k: caf\u00e9\n')],
  ['duplicate keys', obj('data:\n  k: a\n  k: b\n')],
  ['a duplicate key in a mapping of many keys', obj('data:\n' + Array.from({ length: 40 }, (_, i) => `  k${i}: v`).join('\n') + '\n  k30: again\n')],
  ['duplicate keys that differ in spelling only', 'apiVersion: v1\nkind: A\nmetadata:\n  name: x\nspec:\n  true: 1\n  True: 2\n'],
  ['a numeric name', obj('', '123')],
  ['a boolean namespace', obj('', 'x', 'true')],
  ['a null name', obj('', '~')],
  ['a nested mapping on one line', obj('data:\n  k: a: b\n')],
  ['bad indentation', 'apiVersion: v1\nkind: A\nmetadata:\n  name: x\n namespace: y\n'],
  ['a directive', '%YAML 1.2\n---\n' + obj()],
  ['a document end marker', obj() + '...\n'],
  ['a top-level sequence', '- a\n- b\n'],
  ['a top-level scalar', 'just text\n'],
  ['an explicit key', obj('data:\n  ? k\n  : v\n')],
  ['a comment without a space', obj('data:\n  k: "v"#c\n')],
  ['nested compact sequences', obj('data:\n  k:\n  - - a\n')],
  ['a block scalar with a more-indented leading empty line', obj('data:\n  k: |\n       \n    x\n')],
  ['a block scalar line between its owner and its content', obj('data:\n  k: |\n      x\n    y\n')],
];

test('the plain reader reads the common manifests itself, with the full parser\'s findings', () => {
  for (const [what, text] of PLAIN) {
    assert.ok(readPlainManifest(text), `the plain reader answers for ${what}`);
    same(text, what);
  }
});

test('tricky YAML is left to the full parser, and the findings are its own', () => {
  for (const [what, text] of DEFERRED) {
    assert.equal(readPlainManifest(text), undefined, `the plain reader defers ${what}`);
    same(text, what);
  }
  // Chart.yaml is judged by its name before any reading, however plain its content.
  const chart = 'apiVersion: v2\nname: web\nversion: 0.1.0\n';
  assert.deepEqual(analyzeManifest('charts/x/Chart.yaml', chart), {
    objects: [],
    findings: [{ reason: 'Templated', message: 'makes its folder a Helm chart: its manifests are rendered by helm, not objects', permanent: true }],
  });
  assert.deepEqual(analyzeManifest('charts/x/Chart.yaml', chart), analyzeManifestFully('charts/x/Chart.yaml', chart));
});

test('exact findings for the plain cases (the rules, not only agreement)', () => {
  assert.deepEqual(analyzeManifest('f.yaml', PLAIN[5][1]), {
    objects: [
      { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'team-a', name: 'x' },
      { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'team-b', name: 'y' },
    ],
    findings: [{ reason: 'MultiOwnerFile', message: 'mixes objects of several owners (ConfigMap in namespace team-a, ConfigMap in namespace team-b): keep one kind and namespace per file', permanent: true }],
  });
  assert.deepEqual(analyzeManifest('f.yaml', '---\n---\n' + obj('', "''") + '---\n'), {
    objects: [],
    findings: [{ reason: 'NotAnObject', message: 'document 2 is not a Kubernetes object: it needs apiVersion, kind and metadata.name', permanent: true }],
  });
  assert.deepEqual(readPlainManifest(PLAIN[3][1]), [{ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'team-a', name: "it's" }]);
});

/** A small deterministic generator of YAML-ish text mixing the plain subset with everything around it. */
function generator(seed: number) {
  const rnd = mulberry32(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)];
  // Mostly distinct keys; now and then one that repeats an identity field or is not a string.
  const KEYS = ['a', 'b', 'name', 'namespace', 'apiVersion', 'kind', 'metadata', 'data', 'x.y/z', '_k', 'true', 'k-1', 'null'];
  const key = () => (rnd() < 0.85 ? `k${Math.floor(rnd() * 1000)}` : pick(KEYS));
  const SAFE = ['v1', 'apps/v1', 'ConfigMap', 'x', 'team-a', 'team-b', '1', '-1', "''", '""', "'a''b'", '"a b"', 'a #c', 'a#b', 'a:b', 'x y', '{}', '[]', 'a, b', 'a[1]', '-a', '/p', '_u'];
  const TRICKY = ['0x1F', '0o7', '1e3', '.inf', '.5', '~', 'null', 'True', 'false', '"a\\nb"', "'a", 'a: b', 'a:', '&x a', '*x', '!t a', '{{ x }}', "'{{ x }}'", 'a, b', 'a[1]', '- a', '-a', '@a', '%a', '`a', 'x y', '/p', '_u', '(p)', '$v', '=', '<a>', '+1', '{}', '[]', '{a: 1}', '[1, 2]', '|', '>-', '|2', '? a', ': a', 'a\tb', 'caf\u00e9', 'a ', '"x" #c', "'x'#c", '{', ']'];
  const scalar = () => (rnd() < 0.9 ? pick(SAFE) : pick(TRICKY));
  const indentOf = (n: number) => ' '.repeat(Math.max(0, n));
  const jitter = () => (rnd() < 0.02 ? pick([-1, 1, 2]) : 0);
  function block(indent: number, depth: number, out: string[], asSeq: boolean): void {
    const n = 1 + Math.floor(rnd() * 4);
    for (let i = 0; i < n; i++) {
      if (rnd() < 0.1) out.push(indentOf(Math.floor(rnd() * 8)) + pick(['# c', '', '   ', '#']));
      const lead = asSeq ? indentOf(indent + jitter()) + '- ' : indentOf(indent + jitter());
      const inner = asSeq ? indent + 2 : indent;
      const k = asSeq && rnd() < 0.4 ? '' : key() + ':';
      const r = rnd();
      if (k === '') {
        out.push(lead + scalar());
      } else if (depth < 3 && r < 0.25) {
        out.push(lead + k + (rnd() < 0.1 ? ' # c' : ''));
        block(inner + pick([2, 2, 4, 1]), depth + 1, out, false);
      } else if (depth < 3 && r < 0.4) {
        out.push(lead + k);
        block(inner + pick([0, 0, 2]), depth + 1, out, true);
      } else if (r < 0.5) {
        out.push(lead + k + ' ' + pick(['|', '>', '|-', '>+', '|2', '| # c']));
        const c = inner + pick([2, 2, 1, 0, 4]);
        for (let j = Math.floor(rnd() * 3); j >= 0; j--) out.push(rnd() < 0.15 ? indentOf(Math.floor(rnd() * 6)) : indentOf(c + pick([0, 0, 0, 2, -1])) + scalar());
      } else {
        out.push(lead + k + ' ' + scalar());
      }
    }
  }
  function manifest(): string {
    const id = (): string[] => [
      `apiVersion: ${rnd() < 0.85 ? pick(['v1', 'apps/v1', '"v1"']) : scalar()}`,
      `kind: ${rnd() < 0.85 ? pick(['ConfigMap', 'Secret', "'ConfigMap'"]) : scalar()}`,
      'metadata:',
      `  name: ${rnd() < 0.8 ? pick(['x', 'y', 'a-b']) : scalar()}`,
      ...(rnd() < 0.7 ? [`  namespace: ${rnd() < 0.8 ? pick(['team-a', 'team-b']) : scalar()}`] : []),
    ];
    const docs: string[] = [];
    const count = rnd() < 0.7 ? 1 : 1 + Math.floor(rnd() * 3);
    for (let d = 0; d < count; d++) {
      const lines = rnd() < 0.8 ? id() : [];
      block(0, 0, lines, false);
      if (rnd() < 0.1) lines.reverse();
      docs.push(lines.join('\n'));
    }
    let text = (rnd() < 0.2 ? '---\n' : '') + docs.join(rnd() < 0.9 ? '\n---\n' : pick(['\n---\n---\n', '\n--- \n'])) + (rnd() < 0.9 ? pick(['\n', '', '\n---\n']) : '\n...\n');
    if (rnd() < 0.03) text = text.replace(/\n/g, '\r\n');
    if (rnd() < 0.03) text = '\uFEFF' + text;
    return text;
  }
  return manifest;
}

test('generated files: identical findings wherever the plain reader answers', (t) => {
  const manifest = generator(20261201);
  let answered = 0;
  let objects = 0;
  const N = 6000;
  for (let i = 0; i < N; i++) {
    const text = manifest();
    const plain = readPlainManifest(text);
    if (plain) {
      answered++;
      objects += plain.filter((d) => typeof d === 'object').length;
      same(text, `generated file ${i}`);
    }
  }
  t.diagnostic(`the plain reader answered for ${answered} of ${N} generated files (${objects} objects)`);
  // The generator reaches the plain reader often enough for this test to mean something.
  assert.ok(answered > N / 10, `the plain reader answered ${answered} of ${N}`);
  assert.ok(objects > N / 20, `the plain reader found ${objects} objects`);
});
