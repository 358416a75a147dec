import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseRequestInfo, BadClusterError } from '../../src/apiserver/request-info.js';

const q = (s = '') => new URLSearchParams(s);
const GV = '/apis/configbutler.ai/v1alpha1';

test('verbs from method and path, like k8s RequestInfoFactory', () => {
  const cases: Array<[string, string, string, Partial<ReturnType<typeof parseRequestInfo>>]> = [
    ['GET', `${GV}/namespaces/a/gittargets`, '', { verb: 'list', namespace: 'a', resource: 'gittargets', name: '' }],
    ['GET', `${GV}/namespaces/a/gittargets`, 'watch=true', { verb: 'watch' }],
    ['GET', `${GV}/namespaces/a/gittargets`, 'watch=1', { verb: 'watch' }],
    ['GET', `${GV}/namespaces/a/gittargets/x`, '', { verb: 'get', name: 'x' }],
    ['GET', `${GV}/namespaces/a/gittargets/x/status`, '', { verb: 'get', subresource: 'status' }],
    ['POST', `${GV}/namespaces/a/gittargets`, '', { verb: 'create' }],
    ['PUT', `${GV}/namespaces/a/gittargets/x`, '', { verb: 'update' }],
    ['PATCH', `${GV}/namespaces/a/gittargets/x/status`, '', { verb: 'patch', subresource: 'status' }],
    ['DELETE', `${GV}/namespaces/a/gittargets/x`, '', { verb: 'delete' }],
    ['DELETE', `${GV}/namespaces/a/gittargets`, '', { verb: 'deletecollection' }],
    ['GET', `${GV}/gittargets`, '', { verb: 'list', namespace: '', resource: 'gittargets' }],
    ['GET', `${GV}`, '', { isResourceRequest: false, verb: 'get' }],
    ['GET', '/healthz', '', { isResourceRequest: false, verb: 'get', path: '/healthz' }],
  ];
  for (const [m, p, query, want] of cases) {
    const info = parseRequestInfo(m, p, q(query));
    for (const [k, v] of Object.entries(want)) assert.equal((info as any)[k], v, `${m} ${p}?${query}: ${k}`);
  }
});

test('a list narrowed by metadata.name is authorized as that name but stays a list', () => {
  const info = parseRequestInfo('GET', `${GV}/namespaces/a/gittargets`, q('fieldSelector=metadata.name%3Ddemo&watch=true'));
  assert.equal(info.verb, 'watch');
  assert.equal(info.name, '');
  assert.equal(info.authorizationName, 'demo');
});

test('kcp logical-cluster prefix and wildcard', () => {
  const info = parseRequestInfo('GET', `/clusters/ws1${GV}/namespaces/a/gittargets/x`, q());
  assert.equal(info.cluster, 'ws1');
  assert.equal(info.path, `${GV}/namespaces/a/gittargets/x`);
  assert.equal(parseRequestInfo('GET', `/clusters/*${GV}/gittargets`, q()).cluster, '*');
  assert.throws(() => parseRequestInfo('GET', `/clusters/root:org${GV}/gittargets`, q()), BadClusterError);
});

test('a list narrowed by an escaped metadata.name is authorized as the unescaped name; one that cannot be a path segment is not', () => {
  const name = (fs: string) => parseRequestInfo('GET', `${GV}/namespaces/a/gittargets`, q(`fieldSelector=${encodeURIComponent(fs)}`)).authorizationName;
  assert.equal(name('metadata.name=a\\,b'), 'a,b');
  assert.equal(name('metadata.namespace=a,metadata.name=demo'), 'demo');
  assert.equal(name('metadata.name=a/b'), '');
  assert.equal(name('metadata.name=..'), '');
  assert.equal(name('metadata.name=\\x'), '');
  assert.equal(name('metadata.name!=demo'), '');
});

test('the deprecated /watch/ paths are watches, of one name when the path names one', () => {
  const cases: Array<[string, string, Partial<ReturnType<typeof parseRequestInfo>>]> = [
    ['GET', `${GV}/watch/namespaces/a/gittargets/x`, { verb: 'watch', legacyWatch: true, namespace: 'a', resource: 'gittargets', name: 'x', authorizationName: 'x' }],
    ['GET', `${GV}/watch/namespaces/a/gittargets`, { verb: 'watch', legacyWatch: true, namespace: 'a', resource: 'gittargets', name: '' }],
    ['GET', `${GV}/watch/gittargets`, { verb: 'watch', legacyWatch: true, namespace: '', resource: 'gittargets' }],
    ['GET', '/api/v1/watch/namespaces/default', { verb: 'watch', legacyWatch: true, namespace: 'default', resource: 'namespaces', name: 'default' }],
    ['POST', `${GV}/watch/namespaces/a/gittargets`, { verb: 'watch', legacyWatch: true }],
    ['GET', `${GV}/watch`, { legacyWatch: false, resource: 'watch' }],
  ];
  for (const [m, p, want] of cases) {
    const info = parseRequestInfo(m, p, q('watch=false'));
    for (const [k, v] of Object.entries(want)) assert.equal((info as any)[k], v, `${m} ${p}: ${k}`);
  }
});
