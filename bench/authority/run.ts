// What the source-authority check (src/registry/gittarget-strategy.ts) adds to a GitTarget
// create: `npm run bench -- authority [--n 200]`. One `serve --sandbox` under
// --authorization-mode=RBAC; a tenant (client certificate, `edit`-like RoleBinding in team-a, not
// system:masters, so nothing short-circuits) creates GitTargets one after the other, alternating two
// specs that differ only in what the check must ask: none (no resources, no Secret: zero questions,
// the baseline) and one resource in one namespace (`list` + `watch`: two questions), and a third
// over five namespaces (ten questions). Prints p50/p99 per spec.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cleanup, freePort, startChild, tempDir } from '../common/proc.js';
import { agentFor, quantile, request, type Target } from '../common/load.js';
import { issueCertificate } from '../../src/certs/pki.js';

const MAIN = fileURLToPath(new URL('../../src/cli/main.js', import.meta.url));
const n = Number(process.argv[process.argv.indexOf('--n') + 1]) || 200;
const NAMESPACES = ['team-a', 'ns-1', 'ns-2', 'ns-3', 'ns-4'];

const POLICY = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: tenant-edit}
rules:
- {apiGroups: [""], resources: ["configmaps"], verbs: ["get", "list", "watch"]}
- {apiGroups: ["configbutler.ai"], resources: ["gittargets"], verbs: ["create", "get", "list"]}
${NAMESPACES.map((ns) => `---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: bench, namespace: ${ns}}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: tenant-edit}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: bench-tenant}`).join('\n')}
`;

async function main(): Promise<void> {
  const dir = tempDir('bench-authority-');
  writeFileSync(join(dir, 'policy.yaml'), POLICY);
  const port = await freePort();
  const server = await startChild('server', process.execPath, [MAIN, 'serve', '--sandbox', '--controllers=none', '--log-level=warn', '--data-dir', join(dir, 'data'),
    '--secure-port', String(port), '--authorization-mode=RBAC', `--authorization-policy-file=${join(dir, 'policy.yaml')}`], /kubectl --kubeconfig/);
  try {
    const certs = join(dir, 'data', 'certs');
    const ca = { certPem: readFileSync(join(certs, 'ca.crt'), 'utf8'), keyPem: readFileSync(join(certs, 'ca.key'), 'utf8') };
    const admin: Target = { host: '127.0.0.1', port, tls: { ca: ca.certPem, cert: readFileSync(join(certs, 'admin.crt'), 'utf8'), key: readFileSync(join(certs, 'admin.key'), 'utf8') } };
    const tenantCert = issueCertificate(ca, { commonName: 'bench-tenant', usage: 'client' });
    const tenant: Target = { ...admin, tls: { ca: ca.certPem, cert: tenantCert.certPem, key: tenantCert.keyPem } };
    const adminAgent = agentFor(admin, 1);
    for (const ns of NAMESPACES) {
      await request(admin, adminAgent, { method: 'POST', path: '/api/v1/namespaces', body: JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } }), contentType: 'application/json' });
    }
    const agent = agentFor(tenant, 1);
    const specs: Record<string, (name: string) => unknown> = {
      'no questions (baseline)': (name) => ({ resources: undefined, name }),
      '2 questions (1 namespace)': (name) => ({ resources: [{ group: '', resource: 'configmaps', namespaces: ['team-a'] }], name }),
      '10 questions (5 namespaces)': (name) => ({ resources: [{ group: '', resource: 'configmaps', namespaces: NAMESPACES }], name }),
    };
    const lat: Record<string, number[]> = Object.fromEntries(Object.keys(specs).map((k) => [k, []]));
    let seq = 0;
    const create = async (label: string, record: boolean) => {
      const name = `gt-${++seq}`;
      const { resources } = specs[label]!(name) as { resources?: unknown };
      const body = JSON.stringify({ apiVersion: 'configbutler.ai/v1alpha1', kind: 'GitTarget', metadata: { name, namespace: 'team-a' }, spec: { repository: { url: `https://git.example.com/${name}.git` }, branch: 'main', path: 'live', ...(resources ? { resources } : {}) } });
      const t0 = process.hrtime.bigint();
      const r = await request(tenant, agent, { method: 'POST', path: '/apis/configbutler.ai/v1alpha1/namespaces/team-a/gittargets', body, contentType: 'application/json' });
      const ms = Number(process.hrtime.bigint() - t0) / 1e6;
      if (r.status !== 201) throw new Error(`create ${name} (${label}): ${r.status} ${r.body}`);
      if (record) lat[label]!.push(ms);
    };
    for (let i = 0; i < 20; i++) for (const label of Object.keys(specs)) await create(label, false); // warm-up
    // Interleaved, so drift of a shared machine hits every spec alike.
    for (let i = 0; i < n; i++) for (const label of Object.keys(specs)) await create(label, true);
    console.log(`GitTarget create latency, RBAC mode, ${n} creates per spec (sequential, one keep-alive connection):`);
    for (const [label, xs] of Object.entries(lat)) {
      console.log(`  ${label.padEnd(28)} p50 ${quantile(xs, 0.5).toFixed(2)} ms  p99 ${quantile(xs, 0.99).toFixed(2)} ms`);
    }
    adminAgent.destroy();
    agent.destroy();
  } finally {
    await server.stop();
    await cleanup([dir]);
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
