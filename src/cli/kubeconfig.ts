// `reverser-apiserver kubeconfig`: a kubeconfig for a user and groups, with a client certificate
// signed by the dev CA the server generated under <cert-dir> (src/certs/dev-pki.ts). The server
// trusts that CA when it runs without --client-ca-file (npm start), so the file works at once:
// CN is the user, O each group (kube-apiserver's x509 convention, src/auth/x509.ts). It never starts
// a server and never writes into the data directory.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { kubeconfigYAML } from '../certs/dev-pki.js';
import { issueCertificate } from '../certs/pki.js';
import { FlagError } from './options.js';

export const KUBECONFIG_HELP = `Usage: reverser-apiserver kubeconfig --user NAME [--group G]... [flags]

Writes a kubeconfig for user NAME (groups G...) whose client certificate is signed by the dev CA
of a server started without --client-ca-file (npm start), under <cert-dir>.

Flags:
  --user NAME        the user name (the certificate's CN); required
  --group G          a group (the certificate's O); repeat for more
  --data-dir DIR     the server's data directory (default ./.reverser)
  --cert-dir DIR     where the dev CA is (default <data-dir>/certs)
  --server URL       the server's URL (default: the one in <data-dir>/admin.kubeconfig, else https://127.0.0.1:8443)
  --namespace NS     the context's namespace (default "default")
  --days N           validity of the certificate in days (default 365)
  -o, --output FILE  write to FILE (mode 0600) instead of standard output
`;

export interface KubeconfigOptions {
  user: string;
  groups: string[];
  dataDir: string;
  certDir: string;
  server?: string;
  namespace: string;
  days: number;
  output?: string;
}

// One name segment per certificate attribute: no control characters, and not empty.
const CONTROL = /[\x00-\x1f\x7f]/;

export function parseKubeconfigFlags(argv: string[]): KubeconfigOptions {
  const values: Record<string, string[]> = {};
  const names = new Set(['user', 'group', 'data-dir', 'cert-dir', 'server', 'namespace', 'days', 'output']);
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    let name: string;
    let value: string | undefined;
    if (arg === '-o') name = 'output';
    else if (arg.startsWith('--')) {
      const eq = arg.indexOf('=');
      name = eq < 0 ? arg.slice(2) : arg.slice(2, eq);
      if (eq >= 0) value = arg.slice(eq + 1);
    } else throw new FlagError(`unexpected argument ${JSON.stringify(arg)}; see reverser-apiserver kubeconfig --help`);
    if (!names.has(name)) throw new FlagError(`unknown flag --${name}; see reverser-apiserver kubeconfig --help`);
    if (value === undefined) {
      value = argv[++i];
      if (value === undefined) throw new FlagError(`flag --${name} needs a value`);
    }
    (values[name] ??= []).push(value);
  }
  const one = (n: string): string | undefined => {
    const v = values[n];
    if (v && v.length > 1) throw new FlagError(`--${n} given more than once`);
    return v?.[0];
  };
  const user = one('user');
  if (!user) throw new FlagError('--user is required');
  const groups = values['group'] ?? [];
  for (const [flag, v] of [['user', user], ...groups.map((g) => ['group', g])] as [string, string][]) {
    if (v === '' || CONTROL.test(v) || v.length > 64) throw new FlagError(`--${flag} ${JSON.stringify(v)}: must be 1 to 64 characters without control characters`);
  }
  const days = Number(one('days') ?? '365');
  if (!Number.isInteger(days) || days < 1 || days > 3650) throw new FlagError('--days must be an integer from 1 to 3650');
  const dataDir = resolve(one('data-dir') ?? './.reverser');
  return {
    user,
    groups,
    dataDir,
    certDir: resolve(one('cert-dir') ?? join(dataDir, 'certs')),
    server: one('server'),
    namespace: one('namespace') ?? 'default',
    days,
    output: one('output'),
  };
}

/** The server URL of an existing kubeconfig written by `serve` (its first cluster's), if any. */
function serverOf(kubeconfigFile: string): string | undefined {
  if (!existsSync(kubeconfigFile)) return undefined;
  const m = /^\s*server:\s*(\S+)\s*$/m.exec(readFileSync(kubeconfigFile, 'utf8'));
  return m?.[1];
}

/** The kubeconfig text for `opts` (throws FlagError when the dev CA is missing). */
export function userKubeconfig(opts: KubeconfigOptions): string {
  const caCert = join(opts.certDir, 'ca.crt');
  const caKey = join(opts.certDir, 'ca.key');
  if (!existsSync(caCert) || !existsSync(caKey)) {
    throw new FlagError(`no dev CA in ${opts.certDir} (ca.crt and ca.key): start the server once without --client-ca-file (npm start) to generate it, or pass --data-dir/--cert-dir`);
  }
  const ca = { certPem: readFileSync(caCert, 'utf8'), keyPem: readFileSync(caKey, 'utf8') };
  const client = issueCertificate(ca, { commonName: opts.user, organizations: opts.groups, usage: 'client', days: opts.days });
  const server = opts.server ?? serverOf(join(opts.dataDir, 'admin.kubeconfig')) ?? 'https://127.0.0.1:8443';
  return kubeconfigYAML({ server, caPem: ca.certPem, certPem: client.certPem, keyPem: client.keyPem, user: opts.user, namespace: opts.namespace });
}

export function runKubeconfig(argv: string[]): number {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(KUBECONFIG_HELP);
    return 0;
  }
  const opts = parseKubeconfigFlags(argv);
  const text = userKubeconfig(opts);
  if (opts.output) {
    writeFileSync(opts.output, text, { mode: 0o600 });
    process.stderr.write(`wrote ${opts.output} for user ${JSON.stringify(opts.user)}${opts.groups.length ? ` in groups ${opts.groups.map((g) => JSON.stringify(g)).join(', ')}` : ''}\n`);
  } else process.stdout.write(text);
  return 0;
}
