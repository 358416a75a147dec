// Client-certificate and front-proxy authentication over real TLS connections.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import https from 'node:https';
import { X509Certificate, createHash } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildAuthentication } from '../../src/auth/authentication.js';
import { peerChainFromSocket, peerVerificationFromSocket } from '../../src/auth/x509.js';
import { issueClientCert, issueServerCert, makeCA, makeIntermediate, type KeyPair } from '../support/pki.js';
import type { AuthnResult } from '../../src/auth/types.js';

const quiet = { info() {}, warn() {}, error() {} };

test('client certificates and front proxy', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'authn-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const serverCA = makeCA('serving-ca');
  const clientCA = makeCA('client-ca');
  const rhCA = makeCA('front-proxy-ca');
  const otherCA = makeCA('other-ca');
  const serving = issueServerCert(serverCA, 'localhost');
  writeFileSync(join(dir, 'client-ca.pem'), clientCA.certPem);
  writeFileSync(join(dir, 'rh-ca.pem'), rhCA.certPem);

  const built = await buildAuthentication({
    clientCAFile: join(dir, 'client-ca.pem'),
    requestHeader: { clientCAFile: join(dir, 'rh-ca.pem'), allowedNames: ['front-proxy-client'], usernameHeaders: ['X-Remote-User'],
      groupHeaders: ['X-Remote-Group'], extraHeadersPrefix: ['X-Remote-Extra-'], uidHeaders: ['X-Remote-Uid'] },
    requestHeaderFromFlags: true, skipLookup: false, tolerateLookupFailure: false, tokenCacheTTLMs: 10_000, apiAudiences: [],
  }, { logger: quiet, filePollIntervalMs: 50 });
  t.after(() => built.close());
  assert.deepEqual(built.tlsCAs(), [clientCA.certPem, rhCA.certPem]);

  const server = https.createServer({ cert: serving.certPem, key: serving.keyPem, requestCert: true, rejectUnauthorized: false, ca: built.tlsCAs() }, (req, res) => {
    const peerChain = peerChainFromSocket(req.socket as TLSSocket);
    const peerVerified = peerVerificationFromSocket(req.socket as TLSSocket);
    built.authenticator.authenticate({ peerChain, peerVerified, headers: req.headers, rawHeaders: req.rawHeaders }).then((r) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify(r));
    }, (e: Error) => { res.writeHead(500); res.end(e.message); });
  });
  let tlsChanges = 0;
  built.onTLSCAsChange(() => {
    tlsChanges++;
    server.setSecureContext({ cert: serving.certPem, key: serving.keyPem, ca: built.tlsCAs() });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  t.after(() => { server.closeAllConnections(); server.close(); });
  const port = (server.address() as AddressInfo).port;

  const call = (cert: KeyPair | undefined, headers: Record<string, string | string[]> = {}): Promise<AuthnResult> =>
    new Promise((resolve, reject) => {
      const req = https.request({ host: '127.0.0.1', port, path: '/', ca: serverCA.certPem, cert: cert?.certPem, key: cert?.keyPem, headers, agent: false }, (res) => {
        let s = '';
        res.on('data', (c) => (s += c));
        res.on('end', () => (res.statusCode === 200 ? resolve(JSON.parse(s) as AuthnResult) : reject(new Error(s))));
      });
      req.on('error', reject);
      req.end();
    });

  const fp = issueClientCert(rhCA, 'front-proxy-client');
  const fpHeaders = { 'X-Remote-User': 'alice', 'X-Remote-Group': ['devs', 'ops'], 'X-Remote-Extra-Scopes%2Fa': 'x', 'X-Remote-Uid': 'u-1' };

  await t.test('front proxy headers are believed over a requestheader-CA certificate', async () => {
    const r = await call(fp, fpHeaders);
    assert.deepEqual(r, { kind: 'user', user: { username: 'alice', uid: 'u-1', groups: ['devs', 'ops', 'system:authenticated'], extra: { 'scopes/a': ['x'] } },
      consumedHeaders: ['X-Remote-User', 'X-Remote-Group', 'X-Remote-Extra-Scopes%2Fa', 'X-Remote-Uid'] });
  });

  await t.test('the same headers over a client-CA certificate are ignored and stripped', async () => {
    const carol = issueClientCert(clientCA, 'carol', ['qa']);
    const r = await call(carol, fpHeaders);
    assert.equal(r.kind, 'user');
    if (r.kind !== 'user') return;
    // As kube-apiserver's x509 authenticator: the credential id is the certificate's SHA-256.
    const id = `X509SHA256=${createHash('sha256').update(new X509Certificate(carol.certPem).raw).digest('hex')}`;
    assert.deepEqual(r.user, { username: 'carol', groups: ['qa', 'system:authenticated'], extra: { 'authentication.kubernetes.io/credential-id': [id] } });
    assert.deepEqual(r.consumedHeaders, ['X-Remote-User', 'X-Remote-Group', 'X-Remote-Extra-Scopes%2Fa', 'X-Remote-Uid']);
  });

  await t.test('a requestheader certificate whose CN is not allowed is an error (401)', async () => {
    const r = await call(issueClientCert(rhCA, 'rogue'), fpHeaders);
    assert.equal(r.kind, 'error');
    assert.match((r as { message: string }).message, /subject with cn=rogue is not in the allowed list/);
  });

  await t.test('headers without any certificate are ignored: anonymous', async () => {
    const r = await call(undefined, { 'X-Remote-User': 'alice' });
    assert.deepEqual(r, { kind: 'anonymous', consumedHeaders: ['X-Remote-User'] });
    assert.deepEqual(await call(undefined), { kind: 'anonymous' });
  });

  await t.test('certificates from an unknown CA, expired, or without clientAuth are errors', async () => {
    for (const kp of [issueClientCert(otherCA, 'eve'), issueClientCert(clientCA, 'old', [], { notBeforeDays: -10, notAfterDays: -1 }),
      issueClientCert(clientCA, 'srv', [], { eku: ['serverAuth'] })]) {
      const r = await call(kp);
      assert.equal(r.kind, 'error', JSON.stringify(r));
    }
    // A certificate without any EKU extension is valid for client auth (as in Go).
    const r = await call(issueClientCert(clientCA, 'noeku', ['g'], { eku: null }));
    assert.equal(r.kind === 'user' && r.user.username, 'noeku');
  });

  await t.test('a chain through an intermediate presented by the client verifies', async () => {
    const inter = makeIntermediate(clientCA, 'client-intermediate');
    const leaf = issueClientCert(inter, 'dana', ['ops']);
    const r = await call({ certPem: leaf.certPem + inter.certPem, keyPem: leaf.keyPem });
    assert.equal(r.kind === 'user' && r.user.username, 'dana');
    const alone = await call(leaf);
    assert.equal(alone.kind, 'error');
  });

  await t.test('a requestheader certificate without a username header is unauthenticated (as in Kubernetes)', async () => {
    // The front proxy does not apply, and the certificate is not from the client CA: 401.
    const r = await call(fp, { 'X-Remote-Group': 'devs' });
    assert.equal(r.kind, 'error');
    assert.deepEqual(r.consumedHeaders, ['X-Remote-Group']);
  });

  await t.test('an empty allowed-names list accepts any CN from the requestheader CA', async () => {
    const cfg = built.requestHeader.config();
    built.requestHeader.setConfig({ ...cfg, allowedNames: [] });
    try {
      const r = await call(issueClientCert(rhCA, 'rogue'), fpHeaders);
      assert.equal(r.kind === 'user' && r.user.username, 'alice');
    } finally {
      built.requestHeader.setConfig(cfg);
    }
  });

  await t.test('requestheader CA file rotation is picked up without restart', async () => {
    const rhCA2 = makeCA('front-proxy-ca-2');
    const fp2 = issueClientCert(rhCA2, 'front-proxy-client');
    assert.equal((await call(fp2, fpHeaders)).kind, 'error');
    writeFileSync(join(dir, 'rh-ca.pem'), rhCA2.certPem);
    const deadline = Date.now() + 5000;
    while (!built.tlsCAs().includes(rhCA2.certPem) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(built.tlsCAs(), [clientCA.certPem, rhCA2.certPem]);
    assert.ok(tlsChanges >= 1);
    const r = await call(fp2, fpHeaders);
    assert.equal(r.kind === 'user' && r.user.username, 'alice');
    assert.equal((await call(fp, fpHeaders)).kind, 'error');
  });

});
