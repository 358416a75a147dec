// The development PKI `npm start` creates under <cert-dir>: a CA, a serving certificate, an admin
// client certificate (O=system:masters) and an admin kubeconfig. Existing files are reused, so a
// restart keeps working with kubeconfigs handed out earlier.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createCA, issueCertificate, selfSignedServerCertificate, type KeyPair } from './pki.js';

export interface DevPKI {
  caFile: string;
  caPem: string;
  serving: KeyPair;
  servingCertFile: string;
  servingKeyFile: string;
  adminCertFile: string;
  adminKeyFile: string;
}

function load(dir: string, name: string): KeyPair | undefined {
  const c = join(dir, `${name}.crt`);
  const k = join(dir, `${name}.key`);
  if (!existsSync(c) || !existsSync(k)) return undefined;
  return { certPem: readFileSync(c, 'utf8'), keyPem: readFileSync(k, 'utf8') };
}

function save(dir: string, name: string, kp: KeyPair): void {
  writeFileSync(join(dir, `${name}.crt`), kp.certPem, { mode: 0o644 });
  writeFileSync(join(dir, `${name}.key`), kp.keyPem, { mode: 0o600 });
}

export function ensureDevPKI(certDir: string, hosts: { dnsNames: string[]; ipAddresses: string[] }): DevPKI {
  mkdirSync(certDir, { recursive: true, mode: 0o700 });
  let ca = load(certDir, 'ca');
  if (!ca) {
    ca = createCA('reverser-apiserver-dev-ca');
    save(certDir, 'ca', ca);
  }
  let serving = load(certDir, 'apiserver');
  if (!serving) {
    serving = issueCertificate(ca, { commonName: 'reverser-apiserver', usage: 'server', ...hosts });
    save(certDir, 'apiserver', serving);
  }
  if (!load(certDir, 'admin')) {
    save(certDir, 'admin', issueCertificate(ca, { commonName: 'admin', organizations: ['system:masters'], usage: 'client' }));
  }
  return {
    caFile: join(certDir, 'ca.crt'),
    caPem: ca.certPem,
    serving,
    servingCertFile: join(certDir, 'apiserver.crt'),
    servingKeyFile: join(certDir, 'apiserver.key'),
    adminCertFile: join(certDir, 'admin.crt'),
    adminKeyFile: join(certDir, 'admin.key'),
  };
}

/**
 * The loopback client's serving certificate (src/auth/loopback.ts): self-signed for `servername`,
 * in memory only and new on every start; the client trusts exactly this certificate.
 */
export function loopbackServingCertificate(servername: string): KeyPair {
  return selfSignedServerCertificate(servername, [servername]);
}

/**
 * A kubeconfig for a client certificate user (or a bearer token: the in-memory loopback client,
 * src/auth/loopback.ts); certificate data is embedded so the file stands alone.
 */
export function kubeconfigYAML(
  opts: { server: string; caPem: string; user: string; namespace?: string; name?: string; tlsServerName?: string } & ({ certPem: string; keyPem: string } | { token: string }),
): string {
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  const name = opts.name ?? 'reverser';
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    `- name: ${name}`,
    '  cluster:',
    `    server: ${opts.server}`,
    `    certificate-authority-data: ${b64(opts.caPem)}`,
    ...(opts.tlsServerName ? [`    tls-server-name: ${opts.tlsServerName}`] : []),
    'users:',
    `- name: ${opts.user}`,
    '  user:',
    ...('token' in opts ? [`    token: ${opts.token}`] : [`    client-certificate-data: ${b64(opts.certPem)}`, `    client-key-data: ${b64(opts.keyPem)}`]),
    'contexts:',
    `- name: ${name}`,
    '  context:',
    `    cluster: ${name}`,
    `    user: ${opts.user}`,
    `    namespace: ${opts.namespace ?? 'default'}`,
    `current-context: ${name}`,
    '',
  ].join('\n');
}
