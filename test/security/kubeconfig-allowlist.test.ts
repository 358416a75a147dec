// The kubeconfig allowlist on its own, every spelling with its exact verdict: what a tenant's Secret
// may say, and that the client built from an accepted one holds nothing else (no exec, no file, no
// proxy). Also the outsider's inputs: huge, deeply nested and alias-bomb kubeconfigs are refused
// quickly and without a crash (the numbers go to docs/security.md).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { vetKubeconfig } from '../../src/controllers/source/kubeconfig.js';

const b64 = (s: string) => Buffer.from(s).toString('base64');
const CLUSTER = `clusters:\n- name: c\n  cluster: {server: "https://127.0.0.1:6443", certificate-authority-data: ${b64('ca')}}\n`;
const TAIL = 'contexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n';
const withUser = (user: string, extra = '') => `apiVersion: v1\nkind: Config\n${extra}${CLUSTER}users:\n- name: u\n  user: ${user}\n${TAIL}`;
const withCluster = (cluster: string) => `clusters:\n- name: c\n  cluster: ${cluster}\nusers:\n- name: u\n  user: {token: t}\n${TAIL}`;

function verdict(text: string, opts = {}): string {
  const v = vetKubeconfig(text, 's', opts);
  return v.ok ? 'ok' : `${v.reason}: ${v.message.replace('the kubeconfig in Secret "s"', '')}`;
}

const FEATURE = 'YAML merge keys, anchors, aliases and tags are refused in a kubeconfig Secret';

test('every spelling of exec, a file or a YAML trick is refused with its reason and message', () => {
  const cases: Array<[string, string]> = [
    [withUser('{<<: {exec: {command: /bin/sh}}}'), `KubeConfigYAMLFeatureNotAllowed:  uses a merge key (<<); ${FEATURE}`],
    [withUser('{"<<": {token-file: /t}}'), `KubeConfigYAMLFeatureNotAllowed:  uses a merge key (<<); ${FEATURE}`],
    [withUser('*u', 'x: &u {exec: {command: /bin/sh}}\n'), `KubeConfigYAMLFeatureNotAllowed:  uses an anchor (&u); ${FEATURE}`],
    [withUser('{token: !!binary dA==}'), `KubeConfigYAMLFeatureNotAllowed:  uses a tag (!!binary); ${FEATURE}`],
    [withUser('{token: !!str t}'), `KubeConfigYAMLFeatureNotAllowed:  uses a tag (!!str); ${FEATURE}`],
    [withUser('!custom {token: t}'), `KubeConfigYAMLFeatureNotAllowed:  uses a tag (!custom); ${FEATURE}`],
    [withUser('{exec: {command: /bin/sh}}'), 'KubeConfigExecNotAllowed: : user "u" uses exec, which would run code in the server; use a token or a client certificate (*-data)'],
    [withUser('{auth-provider: {name: gcp}}'), 'KubeConfigExecNotAllowed: : user "u" uses auth-provider, which would run code in the server; use a token or a client certificate (*-data)'],
    [withUser('{token-file: /var/run/secrets/kubernetes.io/serviceaccount/token}'), `KubeConfigFileReferenceNotAllowed: : user "u" reads a file (token-file) from the server's disk; use an inline token`],
    [withUser('{tokenFile: /t}'), `KubeConfigFileReferenceNotAllowed: : user "u" reads a file (tokenFile) from the server's disk; use an inline token`],
    [withUser('{client-certificate: /c, client-key-data: a2V5}'), `KubeConfigFileReferenceNotAllowed: : user "u" reads a file (client-certificate) from the server's disk; use client-certificate-data`],
    [withUser('{client-certificate-data: Y2VydA==, client-key: /k}'), `KubeConfigFileReferenceNotAllowed: : user "u" reads a file (client-key) from the server's disk; use client-key-data`],
    [withCluster('{server: "https://127.0.0.1:6443", certificate-authority: /etc/ca.crt}'), `KubeConfigFileReferenceNotAllowed: : cluster "c" reads a file (certificate-authority) from the server's disk; use certificate-authority-data`],
    [withCluster('{server: "https://127.0.0.1:6443", proxy-url: "http://127.0.0.1:3128"}'), 'KubeConfigFieldNotAllowed: : clusters[0].cluster.proxy-url is not allowed in a kubeconfig Secret (allowed: server, certificate-authority-data, tls-server-name, insecure-skip-tls-verify)'],
    [withCluster('{server: "https://127.0.0.1:6443", insecure-skip-tls-verify: true}'), 'KubeConfigInsecureTLSNotAllowed: : cluster "c" sets insecure-skip-tls-verify; give certificate-authority-data instead'],
    [withCluster('{server: "https://127.0.0.1:6443", insecure-skip-tls-verify: yes}'), 'KubeConfigInvalid: : cluster "c": insecure-skip-tls-verify must be false when given'],
    [withUser('{username: a, password: b}'), 'KubeConfigFieldNotAllowed: : users[0].user.username is not allowed in a kubeconfig Secret (allowed: token, client-certificate-data, client-key-data)'],
    [withUser('{token: t, as: admin}'), 'KubeConfigFieldNotAllowed: : users[0].user.as is not allowed in a kubeconfig Secret (allowed: token, client-certificate-data, client-key-data)'],
    [withUser('{token: a, token: b}'), 'KubeConfigInvalid:  is not valid YAML: Map keys must be unique'],
    [withUser('{token: t}', 'extensions: []\n'), 'KubeConfigFieldNotAllowed: : the top level.extensions is not allowed in a kubeconfig Secret (allowed: apiVersion, kind, clusters, users, contexts, current-context, preferences)'],
    [withUser('{__proto__: {exec: {command: x}}}'), 'KubeConfigFieldNotAllowed: : users[0].user.__proto__ is not allowed in a kubeconfig Secret (allowed: token, client-certificate-data, client-key-data)'],
    [withCluster('{server: "http://127.0.0.1:6443"}'), `KubeConfigInsecureCredentials: : cluster "c" is plain http://, which would send user "u"'s token in cleartext; use https:// (the server's --allow-insecure-credentials is for development only)`],
    [withCluster('{server: "https://169.254.169.254"}'), 'KubeConfigEgressDenied: : cluster "c" server 169.254.169.254 is a link-local (cloud metadata) address; the server never connects there'],
    [withCluster('{server: "https://[::ffff:a9fe:a9fe]"}'), 'KubeConfigEgressDenied: : cluster "c" server 169.254.169.254 is a link-local (cloud metadata) address; the server never connects there'],
    [withCluster('{server: "https://metadata.google.internal."}'), 'KubeConfigEgressDenied: : cluster "c" server "metadata.google.internal" is a cloud metadata service name; the server never connects there'],
    [withCluster('{server: "https://2852039166"}'), 'KubeConfigEgressDenied: : cluster "c" server 169.254.169.254 is a link-local (cloud metadata) address; the server never connects there'],
  ];
  for (const [text, want] of cases) assert.equal(verdict(text), want, text);
  // The JSON form is the same document: the same refusals.
  const json = (user: Record<string, unknown>) =>
    JSON.stringify({ clusters: [{ name: 'c', cluster: { server: 'https://127.0.0.1:6443' } }], users: [{ name: 'u', user }], contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }], 'current-context': 'x' });
  assert.equal(verdict(json({ 'token-file': '/t' })), `KubeConfigFileReferenceNotAllowed: : user "u" reads a file (token-file) from the server's disk; use an inline token`);
  assert.equal(verdict(json({ exec: { command: 'sh' } })), 'KubeConfigExecNotAllowed: : user "u" uses exec, which would run code in the server; use a token or a client certificate (*-data)');
  assert.equal(verdict(json({ '\u003c\u003c': { exec: {} } }).replace('"<<"', '"\\u003c\\u003c"')), `KubeConfigYAMLFeatureNotAllowed:  uses a merge key (<<); ${FEATURE}`);
  assert.equal(verdict(json({ token: 'a' }).replace('{"token":"a"}', '{"token":"a","token":"b"}')), 'KubeConfigInvalid:  is not valid YAML: Map keys must be unique');
  // The opt-in lets a token go to http:// (development).
  assert.equal(verdict(withCluster('{server: "http://127.0.0.1:6443"}'), { allowInsecureCredentials: true }), 'ok');
});

test('an accepted kubeconfig builds a client holding only the allowed fields', () => {
  const v = vetKubeconfig(withUser(`{client-certificate-data: ${b64('cert')}, client-key-data: ${b64('key')}}`), 's');
  assert.equal(v.ok, true);
  if (!v.ok) return;
  assert.deepEqual(v.config.getCurrentCluster(), { name: 'c', server: 'https://127.0.0.1:6443', caData: b64('ca'), tlsServerName: undefined, skipTLSVerify: false });
  assert.deepEqual(v.config.getCurrentUser(), { name: 'u', token: undefined, certData: b64('cert'), keyData: b64('key') });
});

test('an outsider\'s kubeconfig: huge, deep and alias bombs are refused quickly', () => {
  const timed = (text: string) => {
    const t0 = performance.now();
    const v = verdict(text);
    return { v, ms: performance.now() - t0 };
  };
  const huge = timed(withUser(`{token: "${'a'.repeat(1024 * 1024)}"}`));
  assert.equal(huge.v, 'KubeConfigInvalid:  is larger than 65536 bytes');
  const deep = timed(withUser('{token: t}', `x: ${'['.repeat(30_000)}${']'.repeat(30_000)}\n`));
  assert.equal(deep.v, 'KubeConfigInvalid:  nests deeper than 32 levels');
  // Billion laughs within the size limit: the first anchor is refused before anything expands.
  const lines = ['a0: &a0 [x, x, x, x, x, x, x, x, x, x]'];
  for (let i = 1; i < 30; i++) lines.push(`a${i}: &a${i} [${Array(10).fill(`*a${i - 1}`).join(', ')}]`);
  const bomb = timed(withUser('{token: t}', lines.join('\n') + '\n'));
  const megAliases = timed(withUser('{token: t}', `a: &a x\nb: [${Array(350_000).fill('*a').join(',')}]\n`));
  assert.equal(megAliases.v, 'KubeConfigInvalid:  is larger than 65536 bytes');
  assert.equal(bomb.v, `KubeConfigYAMLFeatureNotAllowed:  uses an anchor (&a0); ${FEATURE}`);
  // 60 KiB of aliases (about the most the size limit lets in); 1 MiB is refused by its size.
  const aliases = timed(withUser('{token: t}', `a: &a x\nb: [${Array(20_000).fill('*a').join(',')}]\n`));
  assert.equal(aliases.v, `KubeConfigYAMLFeatureNotAllowed:  uses an anchor (&a); ${FEATURE}`);
  // 60 KiB of ordinary keys: refused on the token count before the (slow) parse.
  const wide = timed(withUser('{token: t}', `preferences: {${Array.from({ length: 6_000 }, (_, i) => `k${i}: v`).join(', ')}}\n`));
  assert.equal(wide.v, 'KubeConfigInvalid:  has more than 4096 YAML tokens');
  // The most that parses: just under the token limit (400 keys): refused by the allowlist, after a full parse.
  const widest = timed(withUser('{token: t}', `preferences: {${Array.from({ length: 400 }, (_, i) => `k${i}: v`).join(', ')}}\n`));
  assert.equal(widest.v, 'KubeConfigFieldNotAllowed: : preferences must be empty in a kubeconfig Secret');
  // A 2-core machine shared with other work: generous bounds, each well under a second.
  for (const [what, r] of Object.entries({ huge, deep, bomb, megAliases, aliases, wide, widest })) {
    process.stdout.write(`# ${what}: ${r.ms.toFixed(1)} ms\n`);
    assert.ok(r.ms < 1_000, `${what} took ${r.ms} ms`);
  }
});
