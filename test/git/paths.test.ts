// Pure functions of the git engine: paths, repository URLs and credentials.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { canonicalPath, credentialsFromSecret, validateRepositoryURL, validateTargetPath, normalizeTargetPath } from '../../src/git/index.js';

test('canonicalPath and validateTargetPath', () => {
  assert.equal(canonicalPath({ path: 'tenants/a/', namespace: 'default', group: '', resource: 'configmaps', name: 'app' }), 'tenants/a/default/configmaps/app.yaml');
  assert.equal(canonicalPath({ path: '.', namespace: 'default', group: 'apps', resource: 'deployments', name: 'app' }), 'default/apps/deployments/app.yaml');
  assert.equal(canonicalPath({ path: '', group: 'rbac.authorization.k8s.io', resource: 'clusterroles', name: 'admin' }), '_cluster/rbac.authorization.k8s.io/clusterroles/admin.yaml');
  for (const ok of ['.', 'tenants/a', 'tenants/a/', 'a.b/c']) assert.equal(validateTargetPath(ok), undefined, ok);
  assert.match(validateTargetPath('/abs')!, /leading/);
  assert.match(validateTargetPath('a\\b')!, /backslash/);
  assert.match(validateTargetPath('a/../b')!, /\.\./);
  assert.match(validateTargetPath('a..b')!, /\.\./);
  assert.match(validateTargetPath('a//b')!, /empty/);
  assert.equal(normalizeTargetPath('tenants/a/'), 'tenants/a');
  assert.equal(normalizeTargetPath('.'), '');
});

test('validateRepositoryURL', () => {
  for (const ok of ['https://git.example.com/org/config.git', 'http://127.0.0.1:8080/r.git', 'file:///srv/git/r.git', 'local:tenants']) {
    assert.equal(validateRepositoryURL(ok), undefined, ok);
  }
  assert.match(validateRepositoryURL('ssh://git@github.com/org/r.git')!, /SSH .*not supported/);
  assert.match(validateRepositoryURL('git@github.com:org/r.git')!, /SSH .*not supported/);
  assert.match(validateRepositoryURL('file://relative/r.git')!, /absolute/);
  assert.match(validateRepositoryURL('local:../x')!, /local:<name>/);
  assert.match(validateRepositoryURL('https://u:p@host/r.git')!, /Secret/);
  assert.match(validateRepositoryURL('ftp://host/r.git')!, /not supported/);
  assert.match(validateRepositoryURL('')!, /empty/);
});

test('credentialsFromSecret accepts plain, Flux- and Argo CD-shaped Secrets', () => {
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  assert.deepEqual(credentialsFromSecret({ data: { username: b64('bob'), password: b64('pw') } }), { username: 'bob', password: 'pw' });
  // Argo CD repository Secret: url/type/project ride along.
  assert.deepEqual(credentialsFromSecret({ stringData: { type: 'git', url: 'https://h/r.git', project: 'default', username: 'x', password: 'y' } }), { username: 'x', password: 'y' });
  assert.deepEqual(credentialsFromSecret({ data: { bearerToken: b64('tok\n') } }), { bearerToken: 'tok' });
  assert.deepEqual(credentialsFromSecret({ data: { token: b64('ghp_1') } }), { username: 'git', password: 'ghp_1' });
  assert.match(credentialsFromSecret({ data: { identity: b64('key') } }) as string, /SSH/);
  assert.match(credentialsFromSecret({}) as string, /no usable credentials/);
});
