// The serving certificates the server makes for itself (src/certs/pki.ts: the dev PKI's serving
// certificate and the loopback client's) have ECDSA P-256 keys: the server signs once per TLS
// handshake, before anyone is authenticated, and a P-256 signature is ~15× cheaper than an
// RSA-2048 one. They must still be ordinary certificates: chained to the dev CA (node and
// `openssl verify`), with the names and usages of before, and served in a real TLS handshake.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import tls from 'node:tls';
import { ensureDevPKI, loopbackServingCertificate } from '../../src/certs/dev-pki.js';
import { withDeadline } from '../support/deadline.js';

test('the dev PKI serves with a P-256 key chained to its RSA CA; client certificates stay RSA', { timeout: 60_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'reverser-serving-key-'));
  try {
    const pki = ensureDevPKI(dir, { dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'] });
    const ca = new X509Certificate(pki.caPem);
    const serving = new X509Certificate(pki.serving.certPem);
    assert.equal(serving.publicKey.asymmetricKeyType, 'ec');
    assert.deepEqual(serving.publicKey.asymmetricKeyDetails, { namedCurve: 'prime256v1' });
    assert.equal(ca.publicKey.asymmetricKeyType, 'rsa');
    assert.equal(serving.checkIssued(ca), true);
    assert.equal(serving.verify(ca.publicKey), true);
    assert.equal(serving.subjectAltName, 'DNS:localhost, IP Address:127.0.0.1');
    assert.equal(serving.keyUsage?.join(','), '1.3.6.1.5.5.7.3.1');
    assert.equal(execFileSync('openssl', ['verify', '-CAfile', pki.caFile, pki.servingCertFile], { encoding: 'utf8' }).trim(), `${pki.servingCertFile}: OK`);
    const admin = new X509Certificate(readFileSync(pki.adminCertFile));
    assert.equal(admin.publicKey.asymmetricKeyType, 'rsa');

    // A real handshake against it, verified by the client.
    const server = tls.createServer({ cert: pki.serving.certPem, key: pki.serving.keyPem }, (s) => s.end('ok'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const port = (server.address() as { port: number }).port;
      const peer = await withDeadline(
        new Promise<{ authorized: boolean; curve: string | undefined }>((resolve, reject) => {
          const c = tls.connect({ port, host: '127.0.0.1', ca: pki.caPem, servername: 'localhost' }, () => {
            resolve({ authorized: c.authorized, curve: c.getPeerCertificate().asn1Curve });
            c.destroy();
          });
          c.on('error', reject);
        }),
        'a TLS handshake with the P-256 serving certificate',
        20_000,
      );
      assert.deepEqual(peer, { authorized: true, curve: 'prime256v1' });
    } finally {
      server.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("the loopback client's serving certificate is a self-signed P-256 certificate for its name", () => {
  const kp = loopbackServingCertificate('loopback.reverser.local');
  const c = new X509Certificate(kp.certPem);
  assert.deepEqual(c.publicKey.asymmetricKeyDetails, { namedCurve: 'prime256v1' });
  assert.equal(c.verify(c.publicKey), true);
  assert.equal(c.subjectAltName, 'DNS:loopback.reverser.local');
  assert.equal(c.checkHost('loopback.reverser.local'), 'loopback.reverser.local');
});
