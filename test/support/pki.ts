// Test PKI: CAs and leaf certificates made with node-forge (keys from node's native generator,
// which is fast). Nothing here is for production.
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import forge from 'node-forge';

export interface KeyPair {
  certPem: string;
  keyPem: string;
}

export interface CA extends KeyPair {
  cert: forge.pki.Certificate;
  key: forge.pki.rsa.PrivateKey;
}

interface IssueOpts {
  cn: string;
  orgs?: string[];
  /** Extended key usages; default clientAuth for client certs, serverAuth for server certs. null = no EKU extension. */
  eku?: Array<'clientAuth' | 'serverAuth'> | null;
  dns?: string[];
  ips?: string[];
  /** Validity window relative to now, in days (notBefore = -1 day by default). */
  notBeforeDays?: number;
  notAfterDays?: number;
  isCA?: boolean;
  /** For isCA: the basicConstraints CA flag (default true), its pathLenConstraint, keyCertSign (default true). */
  caFlag?: boolean;
  pathLen?: number;
  keyCertSign?: boolean;
}

function newKeys(): { pub: forge.pki.rsa.PublicKey; priv: forge.pki.rsa.PrivateKey; keyPem: string } {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const keyPem = privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();
  const priv = forge.pki.privateKeyFromPem(keyPem) as forge.pki.rsa.PrivateKey;
  const pub = forge.pki.setRsaPublicKey(priv.n, priv.e);
  return { pub, priv, keyPem };
}

function build(subjectKey: forge.pki.rsa.PublicKey, o: IssueOpts, issuer: CA | undefined, signKey: forge.pki.rsa.PrivateKey): forge.pki.Certificate {
  const cert = forge.pki.createCertificate();
  cert.publicKey = subjectKey;
  cert.serialNumber = '01' + randomBytes(8).toString('hex');
  const day = 86_400_000;
  cert.validity.notBefore = new Date(Date.now() + (o.notBeforeDays ?? -1) * day);
  cert.validity.notAfter = new Date(Date.now() + (o.notAfterDays ?? 365) * day);
  const attrs: forge.pki.CertificateField[] = [{ shortName: 'CN', value: o.cn }];
  for (const org of o.orgs ?? []) attrs.push({ shortName: 'O', value: org });
  cert.setSubject(attrs);
  cert.setIssuer(issuer ? issuer.cert.subject.attributes : attrs);
  const exts: unknown[] = [];
  if (o.isCA) {
    const bc: Record<string, unknown> = { name: 'basicConstraints', cA: o.caFlag ?? true, critical: true };
    if (o.pathLen !== undefined) bc.pathLenConstraint = o.pathLen;
    exts.push(bc);
    exts.push({ name: 'keyUsage', keyCertSign: o.keyCertSign ?? true, cRLSign: true, digitalSignature: true, critical: true });
  } else {
    exts.push({ name: 'basicConstraints', cA: false });
    exts.push({ name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true });
  }
  if (o.eku !== null && o.eku !== undefined) {
    const eku: Record<string, unknown> = { name: 'extKeyUsage' };
    for (const u of o.eku) eku[u] = true;
    exts.push(eku);
  }
  if (o.dns?.length || o.ips?.length) {
    exts.push({
      name: 'subjectAltName',
      altNames: [...(o.dns ?? []).map((v) => ({ type: 2, value: v })), ...(o.ips ?? []).map((ip) => ({ type: 7, ip }))],
    });
  }
  exts.push({ name: 'subjectKeyIdentifier' });
  cert.setExtensions(exts as never[]);
  cert.sign(signKey, forge.md.sha256.create());
  return cert;
}

export function makeCA(cn: string, opts: Partial<IssueOpts> = {}): CA {
  const k = newKeys();
  const cert = build(k.pub, { cn, isCA: true, notAfterDays: 3650, eku: null, ...opts }, undefined, k.priv);
  return { cert, key: k.priv, certPem: forge.pki.certificateToPem(cert), keyPem: k.keyPem };
}

/** An intermediate CA signed by `parent` (`opts` make defective ones for verification tests). */
export function makeIntermediate(parent: CA, cn: string, opts: Partial<IssueOpts> = {}): CA {
  const k = newKeys();
  const cert = build(k.pub, { cn, isCA: true, notAfterDays: 3650, eku: null, ...opts }, parent, parent.key);
  return { cert, key: k.priv, certPem: forge.pki.certificateToPem(cert), keyPem: k.keyPem };
}

export function issueClientCert(ca: CA, cn: string, orgs: string[] = [], extra: Partial<IssueOpts> = {}): KeyPair {
  const k = newKeys();
  const cert = build(k.pub, { cn, orgs, eku: ['clientAuth'], ...extra }, ca, ca.key);
  return { certPem: forge.pki.certificateToPem(cert), keyPem: k.keyPem };
}

export function issueServerCert(ca: CA, cn: string, dns: string[] = ['localhost'], ips: string[] = ['127.0.0.1']): KeyPair {
  const k = newKeys();
  const cert = build(k.pub, { cn, dns, ips, eku: ['serverAuth'] }, ca, ca.key);
  return { certPem: forge.pki.certificateToPem(cert), keyPem: k.keyPem };
}
