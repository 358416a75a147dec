// Certificates with node-forge. Keys come from node's native generators (forge's pure-JS RSA
// generator takes seconds per key); forge builds the X.509 structures.
//
// Serving certificates have an ECDSA P-256 key: the server signs once per TLS handshake, before
// anyone is authenticated, and a P-256 signature costs ~0.03 ms of CPU against ~0.4 ms for
// RSA-2048 (`openssl speed rsa2048 ecdsap256` on the 2-vCPU test machine): thousands of
// connections opened at once were thousands of RSA signatures on the event loop (bench/attack
// "Idle connections"). forge cannot hold EC keys, so a serving certificate's TBSCertificate is
// built by forge around a placeholder key, its SubjectPublicKeyInfo replaced by the EC key's, and
// it is signed with node's crypto. CAs and client certificates keep RSA-2048 keys (a client's
// key costs the server a verification, which is cheap for RSA).
import { createPrivateKey, generateKeyPairSync, randomBytes, sign } from 'node:crypto';
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

/** An ECDSA P-256 key pair: the key (PKCS#8 PEM) and its SubjectPublicKeyInfo as forge ASN.1. */
function newServingKey(): { keyPem: string; spki: forge.asn1.Asn1 } {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const der = publicKey.export({ type: 'spki', format: 'der' });
  return { keyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), spki: forgeLib().asn1.fromDer(forgeLib().util.createBuffer(der.toString('binary'))) };
}

const OID_ECDSA_SHA256 = '1.2.840.10045.4.3.2';

/**
 * Signs `cert` (built by forge around any placeholder public key) for the EC key `spki`: the
 * TBSCertificate gets that key, and is signed by `signerKeyPem` (RSA: sha256WithRSAEncryption;
 * EC: ecdsa-with-SHA256, whose AlgorithmIdentifier has no parameters, RFC 5758).
 */
function signWithKey(cert: forge.pki.Certificate, spki: forge.asn1.Asn1, signerKeyPem: string): string {
  const { asn1 } = forgeLib();
  const signer = createPrivateKey(signerKeyPem);
  const ec = signer.asymmetricKeyType === 'ec';
  cert.siginfo.algorithmOid = ec ? OID_ECDSA_SHA256 : forgeLib().pki.oids.sha256WithRSAEncryption!;
  // getTBSCertificate is public in forge (lib/x509.js) but missing from its type definitions.
  const tbs = (forgeLib().pki as unknown as { getTBSCertificate(c: forge.pki.Certificate): forge.asn1.Asn1 }).getTBSCertificate(cert);
  const values = tbs.value as forge.asn1.Asn1[];
  const algorithm = ec
    ? asn1.create(asn1.Class.UNIVERSAL, asn1.Type.SEQUENCE, true, [asn1.create(asn1.Class.UNIVERSAL, asn1.Type.OID, false, asn1.oidToDer(OID_ECDSA_SHA256).getBytes())])
    : (values[2] as forge.asn1.Asn1);
  values[2] = algorithm; // signature (in the TBSCertificate)
  values[6] = spki; // subjectPublicKeyInfo
  const tbsDer = Buffer.from(asn1.toDer(tbs).getBytes(), 'binary');
  const signature = sign('sha256', tbsDer, signer);
  const certificate = asn1.create(asn1.Class.UNIVERSAL, asn1.Type.SEQUENCE, true, [
    tbs,
    algorithm,
    asn1.create(asn1.Class.UNIVERSAL, asn1.Type.BITSTRING, false, String.fromCharCode(0) + signature.toString('binary')),
  ]);
  return forgeLib().pem.encode({ type: 'CERTIFICATE', body: asn1.toDer(certificate).getBytes() });
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
  const k = newServingKey();
  const cert = forgeLib().pki.createCertificate();
  cert.publicKey = placeholderKey();
  cert.serialNumber = serial();
  validity(cert, days);
  const attrs = [{ name: 'commonName', value: commonName }];
  cert.setSubject(attrs);
  cert.setIssuer(attrs);
  cert.setExtensions([
    { name: 'basicConstraints', cA: false, critical: true },
    { name: 'keyUsage', digitalSignature: true, critical: true },
    { name: 'extKeyUsage', serverAuth: true },
    { name: 'subjectAltName', altNames: dnsNames.map((value) => ({ type: 2, value })) },
  ]);
  return { certPem: signWithKey(cert, k.spki, k.keyPem), keyPem: k.keyPem };
}

/** Any RSA public key, for forge to build a TBSCertificate whose key signWithKey then replaces. */
let placeholder: forge.pki.rsa.PublicKey | undefined;
function placeholderKey(): forge.pki.rsa.PublicKey {
  placeholder ??= forgeLib().pki.setRsaPublicKey(new (forgeLib().jsbn.BigInteger)('c5', 16), new (forgeLib().jsbn.BigInteger)('10001', 16));
  return placeholder;
}

export function issueCertificate(ca: KeyPair, opts: IssueOptions): KeyPair {
  const caCert = forgeLib().pki.certificateFromPem(ca.certPem);
  const caKey = forgeLib().pki.privateKeyFromPem(ca.keyPem);
  // Serving certificates get an ECDSA P-256 key (see the top of this file); client ones RSA.
  const serving = opts.usage === 'server';
  const k = serving ? undefined : newKey();
  const ec = serving ? newServingKey() : undefined;
  const cert = forgeLib().pki.createCertificate();
  cert.publicKey = k ? k.publicKey : placeholderKey();
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
    // keyEncipherment is for RSA key transport; an EC key only signs.
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: !ec, critical: true },
    {
      name: 'extKeyUsage',
      serverAuth: opts.usage !== 'client',
      clientAuth: opts.usage !== 'server',
    },
    { name: 'authorityKeyIdentifier', keyIdentifier: caCert.generateSubjectKeyIdentifier().getBytes() },
  ];
  if (altNames.length) ext.push({ name: 'subjectAltName', altNames });
  cert.setExtensions(ext);
  if (ec) return { certPem: signWithKey(cert, ec.spki, ca.keyPem), keyPem: ec.keyPem };
  cert.sign(caKey, forgeLib().md.sha256.create());
  return { certPem: forgeLib().pki.certificateToPem(cert), keyPem: k!.keyPem };
}
