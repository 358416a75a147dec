// The direct YAML writer (src/git/yaml-direct.ts) must write exactly what the yaml Document path
// writes, byte for byte, whenever it answers at all. Thousands of generated objects — keys, plain,
// quoted, ambiguous and block strings, numbers, nesting — are written both ways and compared.
// Randomized: the seed is printed; REPRODUCE with YAML_DIRECT_SEED=<seed>.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { encodeDocument, encodeObject, orderForWriting } from '../../src/git/manifest-yaml.js';
import { writeDirect } from '../../src/git/yaml-direct.js';
import { mulberry32 } from '../support/mulberry32.js';


const WORDS = ['--port', '-', '--', '-1x', 'y', 'n', 'yes', 'No', 'ON', 'off', 'true', 'False', 'null', '~', 'Null', '0', '007', '1.5', '-1', '+1', '1e3', '0x1F', '1_000', '1:30', '.inf', '.nan', '2024-01-01', '=', '<<', '', ' ', 'a ', ' a', 'x:', 'a: b', 'a #b', 'a#b', '#a', '- a', '-a', '?a', '? a', '*a', '&a', '!a', '%a', '@a', '`a', '"a"', "'a'", 'a"b', 'a\\b', '[a]', '{a}', 'a, b', 'a,b', '|a', '>a', 'http://h:8080/p', 'a=b', 'a+b', 'f(x)', 'é', 'a\tb', 'app.kubernetes.io/name', 'cm-00001', 'value of cm-00001', '.hidden', '_x', '/abs'];
const CHARS = 'ab Z09_-./:#=,+@()"\'\\!?*&%`[]{}|>~é\t';
const LINES = ['a: 1', 'b: [x, y]', '', '  indented', 'trailing ', 'key: value', '# comment', '- item', 'é', '\ttab', '---', '...'];

const FRIENDLY = ['cm-00001', 'value of cm-00001', 'yes', 'n', 'ON', 'null', '0', '1.5', '2024-01-01', '--port', 'nginx:1.27', 'http://h:8080/p', 'a=b', '', 'f(x)', '.hidden'];
const FRIENDLY_LINES = ['a: 1', 'b: [x, y]', '', '  indented', '- item', '# comment', 'key: "v"'];

function gen(r: () => number, friendly: boolean) {
  const pick = <T>(xs: T[]) => xs[Math.floor(r() * xs.length)]!;
  const str = (): string => {
    const k = r();
    if (friendly) {
      if (k < 0.8) return pick(FRIENDLY);
      if (k < 0.95) return [pick(['x', 'a: 1', 'key=v']), ...Array.from({ length: Math.floor(r() * 4) }, () => pick(FRIENDLY_LINES))].join('\n') + pick(['', '\n']);
    }
    if (k < 0.45) return pick(WORDS);
    if (k < 0.75) return Array.from({ length: 1 + Math.floor(r() * 10) }, () => pick([...CHARS])).join('');
    const lines = Array.from({ length: 1 + Math.floor(r() * 4) }, () => pick(LINES));
    return lines.join('\n') + pick(['', '\n', '\n\n']);
  };
  const scalar = (): unknown => pick([str, str, str, () => Math.floor(r() * 2000) - 1000, () => Math.round(r() * 1e4) / 100, () => r() < 0.5, () => null, ...(friendly ? [] : [() => 1e21, () => -0])])();
  const value = (depth: number): unknown => {
    const k = r();
    if (depth > 3 || k < 0.55) return scalar();
    if (k < 0.8) return Object.fromEntries(Array.from({ length: Math.floor(r() * 4) }, () => [str(), value(depth + 1)]));
    return Array.from({ length: Math.floor(r() * 4) }, () => value(depth + 1));
  };
  return {
    apiVersion: pick(['v1', 'apps/v1']),
    kind: pick(['ConfigMap', 'Deployment']),
    metadata: { name: pick(['cm-1', 'yes', 'a.b', 'x']), namespace: pick(['team-a', 'n', 'on']), ...(r() < 0.5 ? { labels: { [pick(WORDS)]: str(), app: str() } } : {}) },
    data: value(0),
    spec: value(0),
  };
}

test('the direct writer writes exactly what the Document path writes, or declines', () => {
  const seed = Number(process.env.YAML_DIRECT_SEED ?? Date.now() % 1_000_000);
  console.log(`YAML_DIRECT_SEED=${seed}`);
  const r = mulberry32(seed);
  let direct = 0;
  const N = 10_000;
  for (let i = 0; i < N; i++) {
    const obj = gen(r, i % 2 === 0);
    const ordered = orderForWriting(obj as never);
    const fast = writeDirect(ordered);
    if (fast === undefined) continue;
    direct++;
    assert.equal(fast, encodeDocument(ordered), `seed ${seed}, object ${i}: ${JSON.stringify(obj)}`);
  }
  // The generator is hostile on purpose; still, a good share must take the direct path, or the test proves little.
  console.log(`${direct} of ${N} generated objects were written directly`);
  assert.ok(direct > N / 6, `only ${direct} of ${N} objects were written directly`);
});

test('typical manifests take the direct path, with the same bytes', () => {
  const objs = [
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm-00001', namespace: 'bench', labels: { app: 'bench' } }, data: { index: '1', value: 'value of cm-00001', config: 'a: 1\nb: [x, y]\n' } },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web', namespace: 'shop', labels: { 'app.kubernetes.io/name': 'web' } },
      spec: {
        replicas: 3,
        selector: { matchLabels: { app: 'web' } },
        template: {
          metadata: { labels: { app: 'web' } },
          spec: { containers: [{ name: 'web', image: 'nginx:1.27', ports: [{ containerPort: 80, protocol: 'TCP' }], args: ['--port', '80'], env: [{ name: 'DEBUG', value: 'false' }] }] },
        },
      },
    },
  ];
  for (const o of objs) {
    const ordered = orderForWriting(o as never);
    const fast = writeDirect(ordered);
    assert.notEqual(fast, undefined, JSON.stringify(o));
    assert.equal(fast, encodeDocument(ordered));
    assert.equal(encodeObject(o as never), fast);
  }
});
