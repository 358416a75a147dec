// kubeconfig Secrets: key fallback and every refusal reason, with the exact message shape.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { kubeconfigFromSecret, vetKubeconfig } from '../../src/controllers/source/kubeconfig.js';

const b64 = (s: string) => Buffer.from(s).toString('base64');

function kubeconfig(opts: { cluster?: Record<string, unknown>; user?: Record<string, unknown>; current?: string } = {}): string {
  const cluster = { server: 'https://10.0.0.1:6443', 'certificate-authority-data': b64('ca'), ...(opts.cluster ?? {}) };
  const user = opts.user ?? { token: 'abc' };
  const lines = ['apiVersion: v1', 'kind: Config', 'clusters:', '- name: c', '  cluster:'];
  for (const [k, v] of Object.entries(cluster)) lines.push(`    ${k}: ${JSON.stringify(v)}`);
  lines.push('users:', '- name: u', '  user:');
  for (const [k, v] of Object.entries(user)) lines.push(`    ${k}: ${JSON.stringify(v)}`);
  if (Object.keys(user).length === 0) lines[lines.length - 1] = '  user: {}';
  lines.push('contexts:', '- name: x', '  context: {cluster: c, user: u}', `current-context: ${opts.current ?? 'x'}`);
  return lines.join('\n') + '\n';
}

test('key fallback: value, then value.yaml; an explicit key is the only one tried; empty counts as absent', () => {
  assert.deepEqual(kubeconfigFromSecret({ data: { value: b64('A'), 'value.yaml': b64('B') } }, 's'), { text: 'A' });
  assert.deepEqual(kubeconfigFromSecret({ data: { value: b64('  \n'), 'value.yaml': b64('B') } }, 's'), { text: 'B' });
  assert.deepEqual(kubeconfigFromSecret({ stringData: { 'value.yaml': 'C' } }, 's'), { text: 'C' });
  assert.deepEqual(kubeconfigFromSecret({ data: { config: b64('D'), value: b64('A') } }, 's', 'config'), { text: 'D' });
  assert.deepEqual(kubeconfigFromSecret({ data: { value: b64('A') } }, 's', 'config'), {
    reason: 'KubeConfigKeyNotFound',
    message: 'Secret "s" has no kubeconfig under key "config"',
  });
  assert.deepEqual(kubeconfigFromSecret({ data: { other: b64('A') } }, 's'), {
    reason: 'KubeConfigKeyNotFound',
    message: 'Secret "s" has no kubeconfig under key "value" or "value.yaml" (set spec.source.kubeConfig.secretRef.key)',
  });
});

test('a valid kubeconfig with inline credentials is accepted', () => {
  const v = vetKubeconfig(kubeconfig(), 's');
  assert.equal(v.ok, true);
  if (v.ok) assert.equal(v.config.getCurrentCluster()?.server, 'https://10.0.0.1:6443');
  assert.equal(vetKubeconfig(kubeconfig({ user: { 'client-certificate-data': b64('c'), 'client-key-data': b64('k') } }), 's').ok, true);
});

test('each refused shape gets its reason', () => {
  const reason = (text: string) => {
    const v = vetKubeconfig(text, 's');
    return v.ok ? 'ok' : v.reason;
  };
  assert.equal(reason('{{{ not yaml'), 'KubeConfigInvalid');
  assert.equal(reason('just a string'), 'KubeConfigInvalid');
  assert.equal(reason('clusters: 3\n'), 'KubeConfigInvalid');
  assert.equal(reason(kubeconfig({ current: 'missing' })), 'KubeConfigInvalid');
  assert.equal(reason(kubeconfig({ cluster: { server: 'ftp://x' } })), 'KubeConfigInvalid');
  assert.equal(reason(kubeconfig({ user: { exec: { command: '/bin/sh', apiVersion: 'client.authentication.k8s.io/v1' } } })), 'KubeConfigExecNotAllowed');
  assert.equal(reason(kubeconfig({ user: { 'auth-provider': { name: 'gcp' } } })), 'KubeConfigExecNotAllowed');
  assert.equal(reason(kubeconfig({ cluster: { 'insecure-skip-tls-verify': true } })), 'KubeConfigInsecureTLSNotAllowed');
  assert.equal(reason(kubeconfig({ cluster: { 'certificate-authority': '/etc/ssl/ca.crt' } })), 'KubeConfigFileReferenceNotAllowed');
  assert.equal(reason(kubeconfig({ user: { 'client-certificate': '/c', 'client-key-data': b64('k') } })), 'KubeConfigFileReferenceNotAllowed');
  assert.equal(reason(kubeconfig({ user: { 'client-certificate-data': b64('c'), 'client-key': '/k' } })), 'KubeConfigFileReferenceNotAllowed');
  assert.equal(reason(kubeconfig({ user: { tokenFile: '/var/run/secrets/kubernetes.io/serviceaccount/token' } })), 'KubeConfigFileReferenceNotAllowed');
});

test('messages name the entry and the remedy, never the credential', () => {
  const v = vetKubeconfig(kubeconfig({ user: { token: 'sekret-token', tokenFile: '/t' } }), 'tenant-a');
  assert.equal(v.ok, false);
  if (!v.ok) {
    assert.equal(v.message, 'the kubeconfig in Secret "tenant-a": user "u" reads a file (tokenFile) from the server\'s disk; use an inline token');
    assert.doesNotMatch(v.message, /sekret/);
  }
  const e = vetKubeconfig(kubeconfig({ user: { exec: { command: 'x' } } }), 'tenant-a');
  assert.equal(!e.ok && e.message, 'the kubeconfig in Secret "tenant-a": user "u" uses exec, which would run code in the server; use a token or a client certificate (*-data)');
});
