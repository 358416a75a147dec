#!/usr/bin/env node
// Generates a CA and a serving certificate for the in-cluster Service, for use with
// apiservice/ (kustomize) or charts/. Usage (after `npm install`, which builds dist/):
//   node certs/generate.mjs --out ./tls --service reverser-apiserver --namespace reverser-system
// Writes ca.crt, ca.key, tls.crt, tls.key and prints the caBundle value and the kubectl
// command that creates the Secret <service>-tls (tls.crt, tls.key and ca.crt, which the server
// publishes as the APIService caBundle). Existing files are not overwritten.
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

const USAGE = `Usage: node certs/generate.mjs [--out DIR] [--service NAME] [--namespace NS] [--days N]

Generates a CA and a serving certificate for the Service <service>.<namespace>.svc and writes
ca.crt, ca.key, tls.crt and tls.key into --out (existing files are not overwritten). Prints the
APIService caBundle and the kubectl command that creates the Secret <service>-tls.

  --out DIR        where to write the files (default ./tls)
  --service NAME   the Service's name (default reverser-apiserver)
  --namespace NS   the Service's namespace (default reverser-system)
  --days N         validity of the serving certificate in days (default 365)
  -h, --help       this text
`;

let values;
try {
  ({ values } = parseArgs({
    options: {
      out: { type: 'string', default: './tls' },
      service: { type: 'string', default: 'reverser-apiserver' },
      namespace: { type: 'string', default: 'reverser-system' },
      days: { type: 'string', default: '365' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  }));
} catch (e) {
  process.stderr.write(`certs/generate.mjs: ${e.message}\n\n${USAGE}`);
  process.exit(2);
}
if (values.help) {
  process.stdout.write(USAGE);
  process.exit(0);
}
if (!/^[1-9]\d{0,4}$/.test(values.days)) {
  console.error(`certs/generate.mjs: --days must be a whole number of days (1..99999), got ${JSON.stringify(values.days)}`);
  process.exit(2);
}
const out = values.out;
if (existsSync(join(out, 'tls.crt'))) {
  console.error(`${out}/tls.crt exists; refusing to overwrite`);
  process.exit(1);
}
// Loaded after the flags, so --help works before `npm install` built dist/.
const { createCA, issueCertificate } = await import('../dist/src/certs/pki.js');
mkdirSync(out, { recursive: true, mode: 0o700 });
const svc = values.service;
const ns = values.namespace;
const ca = createCA(`${svc}-ca`);
const serving = issueCertificate(ca, {
  commonName: `${svc}.${ns}.svc`,
  dnsNames: [svc, `${svc}.${ns}`, `${svc}.${ns}.svc`, `${svc}.${ns}.svc.cluster.local`],
  usage: 'server',
  days: Number(values.days),
});
writeFileSync(join(out, 'ca.crt'), ca.certPem);
writeFileSync(join(out, 'ca.key'), ca.keyPem, { mode: 0o600 });
writeFileSync(join(out, 'tls.crt'), serving.certPem);
writeFileSync(join(out, 'tls.key'), serving.keyPem, { mode: 0o600 });
console.log(`caBundle: ${Buffer.from(ca.certPem).toString('base64')}`);
// ca.crt goes into the Secret too: the server publishes it as the APIService caBundle.
console.log(`kubectl -n ${ns} create secret generic ${svc}-tls --type=kubernetes.io/tls --from-file=tls.crt=${join(out, 'tls.crt')} --from-file=tls.key=${join(out, 'tls.key')} --from-file=ca.crt=${join(out, 'ca.crt')}`);
