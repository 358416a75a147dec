// The attack run (`npm run bench -- attack [--quick] [--as=tenant] [--only=cardinality,idle,patch,nesting,lists,lists-smp,remote,kubeconfig,...]`):
// starts the built server (embedded storage, dev PKI, AlwaysAllow) and runs the attacks one after
// the other. For each it prints, before, during and after the attack: the number of metric series,
// the server's RSS and open file descriptors, the event-loop delay (prom-client's
// monitorEventLoopDelay gauges, reset at every scrape) and the latency of /healthz from a separate
// client. Each attack's raw samples and summary go to bench/results/ (attack.<name>), from which
// `npm run bench:report` generates the attack table of docs/security.md.
//
// The attacks are entries (bench/attack/harness.ts Attack) listed below: add a module of them and
// one line here.
//
// `--as=tenant` attacks as a tenant would: the server authorizes with RBAC
// (`--authorization-mode=RBAC`, a policy file holding the documented `reverser-apiserver:edit`
// ClusterRole of apiservice/user-roles.yaml bound in namespace `default`, and a Role for the
// sandbox's ConfigMaps, Deployments and Secrets there) and the attacks send with a client certificate for
// the user `tenant` issued by the dev CA, so authentication, RBAC and the GitTarget authority
// checks are on their path. Attacks that run before authentication (idle connections) are left
// out. Records are scenarios of their own (attack.<name>-as-tenant).
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cleanup, freePort, startChild, tempDir } from '../common/proc.js';
import { type Attack, type Context, type Params, bystander, reconnecting, sampler } from './harness.js';
import { issueCertificate } from '../../src/certs/pki.js';
import { httpAttacks } from './attacks-http.js';
import { listAttacks } from './attacks-lists.js';
import { remoteAttacks } from './attacks-remotes.js';
import { kubeconfigAttacks } from './attacks-kubeconfig.js';

const ATTACKS: Attack[] = [...httpAttacks, ...listAttacks, ...remoteAttacks, ...kubeconfigAttacks].sort((a, b) => a.order - b.order);

const argv = process.argv.slice(2);
const only = argv.find((a) => a.startsWith('--only='))?.slice(7).split(',');
const arg = (name: string) => argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
// `--server-main=PATH --legacy` runs the same attacks against another build (e.g. one from before
// the defences, which knows none of the connection flags) for a before/after comparison; its
// records are scenarios of their own (attack.<name>-before).
const params: Params = { quick: argv.includes('--quick'), legacy: argv.includes('--legacy'), tenant: arg('as') === 'tenant', arg };
if (arg('as') !== undefined && !params.tenant) throw new Error(`--as=${arg('as')}: only --as=tenant is known`);
const phaseMs = params.quick ? 1_000 : 2_000;
const MAIN = arg('server-main') ?? join(fileURLToPath(new URL('.', import.meta.url)), '../../src/cli/main.js');
const IDLE_TIMEOUT_S = Number(arg('idle-timeout') ?? 10);
const GV = '/apis/configbutler.ai/v1alpha1';

async function main(): Promise<void> {
  // `--only=lists` selects every `lists-…` attack, `--only=lists-smp` one of them.
  const chosen = ATTACKS.filter((a) => !only || only.some((o) => a.key === o || a.key.startsWith(`${o}-`))).filter((a) => !(params.tenant && a.anonymousOnly));
  const dataDir = tempDir('reverser-attack-');
  const policyFile = join(dataDir, 'tenant-policy.yaml');
  if (params.tenant) writeFileSync(policyFile, tenantPolicy());
  try {
    const port = await freePort();
    const server = await startChild(
      'reverser server',
      process.execPath,
      // BENCH_SERVER_NODE_ARGS: node flags for the server (e.g. --trace-gc, --cpu-prof), as bench/scale takes them.
      [...(process.env.BENCH_SERVER_NODE_ARGS ?? '').split(' ').filter(Boolean), MAIN, 'serve', '--data-dir', dataDir, '--secure-port', String(port), '--authorization-mode=AlwaysAllow', '--log-level=warn',
        ...(params.legacy ? [] : [`--idle-connection-timeout=${IDLE_TIMEOUT_S}`, `--tls-handshake-timeout=${IDLE_TIMEOUT_S}`]),
        ...(params.tenant ? ['--authorization-mode=RBAC', `--authorization-policy-file=${policyFile}`] : []),
        ...new Set(chosen.flatMap((a) => a.serverArgs ?? []))],
      /kubectl --kubeconfig/,
    );
    const certs = join(dataDir, 'certs');
    const ca = readFileSync(join(certs, 'ca.crt'), 'utf8');
    const admin = { ca, cert: readFileSync(join(certs, 'admin.crt'), 'utf8'), key: readFileSync(join(certs, 'admin.key'), 'utf8') };
    const url = `https://127.0.0.1:${port}`;
    const scraper = reconnecting(url, admin);
    const pinger = await bystander(url, admin);
    // The tenant's client certificate, from the dev CA the server trusts for client certificates.
    const tenant = params.tenant ? issueCertificate({ certPem: ca, keyPem: readFileSync(join(certs, 'ca.key'), 'utf8') }, { commonName: TENANT, usage: 'client' }) : undefined;
    const attackerTLS = tenant ? { ca, cert: tenant.certPem, key: tenant.keyPem } : { ca };
    const writer = reconnecting(url, tenant ? attackerTLS : admin);
    const alive = () => server.proc.exitCode === null && server.proc.signalCode === null;
    const ctx: Context = { url, port, ca, admin, writer, attackerTLS, params, server, alive };
    console.log(`attack run: server pid ${server.pid} on :${port} (${MAIN}${params.legacy ? ', legacy flags' : ''}${params.tenant ? `, RBAC, attacking as the user ${TENANT}` : ''}), node ${process.version}, ${params.quick ? 'quick' : 'full'}, idle timeout ${IDLE_TIMEOUT_S} s; attacks: ${chosen.map((a) => a.title).join(', ')}`);
    const s = sampler(ctx, scraper, pinger, phaseMs);

    // Warm-up: the label combinations an anonymous request reaches, and the scrape's own series.
    const warm = reconnecting(url, { ca });
    for (let i = 0; i < 200; i++) await warm.request('GET', `${GV}/namespaces/x/warm-${i}`);
    warm.close();
    await s.sample();

    for (const a of chosen) await s.run(a);

    console.log(`\nserver still running at the end: ${alive() ? 'yes' : `no (exit ${server.proc.exitCode ?? server.proc.signalCode}): ${server.output().split('\n').filter((l) => /FATAL|heap|Error/.test(l)).slice(0, 2).join(' / ')}`}`);
    [scraper, writer].forEach((c) => c.close());
    await pinger.close();
  } finally {
    await cleanup([dataDir]);
  }
}

const TENANT = 'tenant';

/** The RBAC policy of `--as=tenant`: the documented edit role and the sandbox's resources, in namespace default. */
function tenantPolicy(): string {
  const roles = readFileSync(join(fileURLToPath(new URL('.', import.meta.url)), '../../../apiservice/user-roles.yaml'), 'utf8');
  const edit = roles.split(/^---$/m).find((d) => /name: reverser-apiserver:edit$/m.test(d));
  if (!edit) throw new Error('apiservice/user-roles.yaml has no reverser-apiserver:edit ClusterRole');
  const binding = (name: string, kind: string, role: string) =>
    `apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: ${name}, namespace: default}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ${kind}, name: ${role}}\nsubjects:\n- {apiGroup: rbac.authorization.k8s.io, kind: User, name: ${TENANT}}\n`;
  const sandbox =
    'apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: bench-tenant-sandbox, namespace: default}\nrules:\n' +
    '- {apiGroups: [""], resources: [configmaps], verbs: [get, list, watch, create, update, patch, delete]}\n' +
    '- {apiGroups: [apps], resources: [deployments], verbs: [get, list, watch, create, update, patch, delete]}\n' +
    // A tenant keeps its own kubeconfig Secrets (the hostile-kubeconfig attack, attacks-kubeconfig.ts).
    '- {apiGroups: [""], resources: [secrets], verbs: [get, list, watch, create, update, patch, delete]}\n';
  return [edit.trim() + '\n', binding('tenant-edit', 'ClusterRole', 'reverser-apiserver:edit'), sandbox, binding('tenant-sandbox', 'Role', 'bench-tenant-sandbox')].join('---\n');
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
