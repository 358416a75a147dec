// Certificates with node-forge. Keys come from node's native RSA generator (forge's pure-JS
// generator takes seconds per key); forge builds and signs the X.509 certificates.
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import type forge from 'node-forge';

let forgeModule: typeof forge | undefined;
/**
 * node-forge, loaded on the first certificate made rather than at start-up: it was ~0.18 CPU-s of
 * a server's ~1.2 CPU-s to /readyz (`--cpu-prof` of a start, docs/benchmarks.md "Side by side with
 * the Go operator"), and a server whose certificates already exist makes none. It is CommonJS, so
 * a require loads it synchronously where it is needed (as api/validation.ts loads ajv).
 */
function forgeLib(): typeof forge {
  return (forgeModule ??= createRequire(import.meta.url)('node-forge') as typeof forge);
}

export interface KeyPair {
  certPem: string;
  keyPem: string;
}

export interface IssueOptions {
  commonName: string;
  organizations?: string[];
  dnsNames?: string[];
  ipAddresses?: string[];
  usage: 'server' | 'client' | 'server+client';
  days?: number;
}

function newKey(): { forgeKey: forge.pki.rsa.PrivateKey; publicKey: forge.pki.rsa.PublicKey; keyPem: string } {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const keyPem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const forgeKey = forgeLib().pki.privateKeyFromPem(keyPem) as forge.pki.rsa.PrivateKey;
  const publicKey = forgeLib().pki.setRsaPublicKey(forgeKey.n, forgeKey.e);
  return { forgeKey, publicKey, keyPem };
}

function serial(): string {
  // Positive, 16 bytes, as hex (the high bit cleared so DER keeps it positive).
  const b = randomBytes(16);
  b[0] = b[0]! & 0x7f;
  return b.toString('hex');
}

function validity(cert: forge.pki.Certificate, days: number): void {
  const now = Date.now();
  cert.validity.notBefore = new Date(now - 5 * 60 * 1000); // tolerate small clock skew
  cert.validity.notAfter = new Date(now + days * 24 * 3600 * 1000);
}

export function createCA(commonName: string, days = 3650): KeyPair {
  const k = newKey();
  const cert = forgeLib().pki.createCertificate();
  cert.publicKey = k.publicKey;
  cert.serialNumber = serial();
  validity(cert, days);
  const attrs = [{ name: 'commonName', value: commonName }];
  cert.setSubject(attrs);
  cert.setIssuer(attrs);
  cert.setExtensions([
    { name: 'basicConstraints', cA: true, critical: true },
    { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
    { name: 'subjectKeyIdentifier' },
  ]);
  cert.sign(k.forgeKey, forgeLib().md.sha256.create());
  return { certPem: forgeLib().pki.certificateToPem(cert), keyPem: k.keyPem };
}

/** A self-signed serving certificate for `dnsNames` (one key, no CA): a client trusts exactly it. */
export function selfSignedServerCertificate(commonName: string, dnsNames: string[], days = 365): KeyPair {
  const k = newKey();
  const cert = forgeLib().pki.createCertificate();
  cert.publicKey = k.publicKey;
  cert.serialNumber = serial();
  validity(cert, days);
  const attrs = [{ name: 'commonName', value: commonName }];
  cert.setSubject(attrs);
  cert.setIssuer(attrs);
  cert.setExtensions([
    { name: 'basicConstraints', cA: false, critical: true },
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
    { name: 'extKeyUsage', serverAuth: true },
    { name: 'subjectAltName', altNames: dnsNames.map((value) => ({ type: 2, value })) },
  ]);
  cert.sign(k.forgeKey, forgeLib().md.sha256.create());
  return { certPem: forgeLib().pki.certificateToPem(cert), keyPem: k.keyPem };
}

export function issueCertificate(ca: KeyPair, opts: IssueOptions): KeyPair {
  const caCert = forgeLib().pki.certificateFromPem(ca.certPem);
  const caKey = forgeLib().pki.privateKeyFromPem(ca.keyPem);
  const k = newKey();
  const cert = forgeLib().pki.createCertificate();
  cert.publicKey = k.publicKey;
  cert.serialNumber = serial();
  validity(cert, opts.days ?? 365);
  const subject: forge.pki.CertificateField[] = [{ name: 'commonName', value: opts.commonName }];
  for (const o of opts.organizations ?? []) subject.push({ name: 'organizationName', value: o });
  cert.setSubject(subject);
  cert.setIssuer(caCert.subject.attributes);
  const altNames = [
    ...(opts.dnsNames ?? []).map((value) => ({ type: 2, value })),
    ...(opts.ipAddresses ?? []).map((ip) => ({ type: 7, ip })),
  ];
  const ext: any[] = [
    { name: 'basicConstraints', cA: false, critical: true },
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
    {
      name: 'extKeyUsage',
      serverAuth: opts.usage !== 'client',
      clientAuth: opts.usage !== 'server',
    },
    { name: 'authorityKeyIdentifier', keyIdentifier: caCert.generateSubjectKeyIdentifier().getBytes() },
  ];
  if (altNames.length) ext.push({ name: 'subjectAltName', altNames });
  cert.setExtensions(ext);
  cert.sign(caKey, forgeLib().md.sha256.create());
  return { certPem: forgeLib().pki.certificateToPem(cert), keyPem: k.keyPem };
}
