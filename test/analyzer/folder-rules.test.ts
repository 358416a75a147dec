// fileFindings (src/analyzer/folder-rules.ts) counts path segments instead of splitting paths,
// because a repository scan runs it for every file in every folder above it. This compares it with
// the splitting version it replaced (kept here as the reference) over every combination of folder,
// layout, file name and object that matters: the cluster folder, core and named groups, names that
// match or not, .yaml and .yml, namespaces that match, differ or are absent.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileFindings, normalizeFolder } from '../../src/analyzer/folder-rules.js';
import type { Finding, ObjectIdentity } from '../../src/analyzer/types.js';

const NAMESPACE_SEGMENT = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

function referenceLayoutNamespace(file: string, folder: string, o: ObjectIdentity): string | undefined {
  const f = normalizeFolder(folder);
  const rel = (f ? file.slice(f.length + 1) : file).split('/');
  if (rel[0] === '_cluster') return '';
  if (!/\.ya?ml$/.test(rel[rel.length - 1]) || rel[rel.length - 1].replace(/\.ya?ml$/, '') !== o.name) return undefined;
  const slash = o.apiVersion.indexOf('/');
  const group = slash < 0 ? '' : o.apiVersion.slice(0, slash);
  const placed = group === '' ? rel.length === 3 : rel.length === 4 && rel[1] === group;
  return placed && NAMESPACE_SEGMENT.test(rel[0]) ? rel[0] : undefined;
}

function referenceFileFindings(path: string, folder: string, objects: ObjectIdentity[]): Finding[] {
  const out: Finding[] = [];
  for (const o of objects) {
    const implied = referenceLayoutNamespace(path, folder, o);
    if (implied === undefined || o.namespace === undefined || o.namespace === implied) continue;
    const place = implied === '' ? 'the cluster-scoped folder _cluster' : `namespace folder ${implied}`;
    out.push({ reason: 'NamespaceMismatch', message: `is in the ${place} but holds ${o.kind} ${o.name} of namespace ${o.namespace}`, file: path, permanent: true });
  }
  return out;
}

test('fileFindings: the same NamespaceMismatch findings as splitting the path', () => {
  const folders = ['', 'a/b/', 'tenants'];
  const segments = ['_cluster', 'team-a', 'Team_B', 'apps', 'configmaps', 'x.yml', 'web.yaml', '.yaml', 'x.YAML'];
  const objects: ObjectIdentity[] = [];
  for (const apiVersion of ['v1', 'apps/v1', 'x.io/v1'])
    for (const name of ['x', 'web'])
      for (const namespace of ['team-a', 'other']) objects.push(namespace ? { apiVersion, kind: 'K', namespace, name } : { apiVersion, kind: 'K', name });
  let compared = 0;
  let mismatches = 0;
  const rels: string[] = [];
  const grow = (prefix: string[], depth: number) => {
    if (prefix.length) rels.push(prefix.join('/'));
    if (depth === 0) return;
    for (const s of segments) grow([...prefix, s], depth - 1);
  };
  grow([], 4);
  for (const folder of folders) {
    const base = normalizeFolder(folder);
    for (const rel of rels) {
      const path = base ? `${base}/${rel}` : rel;
      for (const o of objects) {
        const expected = referenceFileFindings(path, folder, [o]);
        assert.deepEqual(fileFindings(path, folder, { objects: [o], findings: [] }), expected, `${path} in ${folder || "''"} holding ${JSON.stringify(o)}`);
        compared++;
        mismatches += expected.length;
      }
    }
  }
  assert.ok(mismatches > 500, `the combinations reach NamespaceMismatch (${mismatches} of ${compared})`);
});
