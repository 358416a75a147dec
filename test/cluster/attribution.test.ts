// Per-edit attribution (docs/attribution.md) against the real control plane: kube-apiserver runs with the
// audit policy we ship (apiservice/audit/policy.yaml) and a webhook kubeconfig pointing at our
// server's audit listener (batch mode, --audit-webhook-batch-max-wait=1s, mTLS with a client
// certificate from the audit CA our server is given). People edit ConfigMaps with kubectl against
// kube-apiserver; our server mirrors them into a real `git http-backend` remote and each commit is
// authored by the person who made the edit, committed by the server identity.
//
// A GitTarget reading another audit route gets none of the hosting cluster's facts.
// kube-apiserver reaches our listener through a TCP relay (relay.ts), so a test can cut the posts
// (unresolved author, AuditAttribution False), restart our server, or hand the posts to another
// replica without restarting kube-apiserver (it reads its webhook kubeconfig once).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { Kubectl, kubectlBinary, succeeded } from '../support/kubectl.js';
import { gitDir } from '../git/git-cli.js';
import { startGitServer, type GitServer } from '../support/git-server.js';
import { startRedis, type RedisServer } from '../support/redis.js';
import { freePort } from '../support/net.js';
import { startControlPlane, until, type ControlPlane } from './fixture.js';
import { deploy, generateServingTLS, SERVICE_DNS, type Deployment, type Reverser } from './reverser.js';
import { startRelay, type Relay } from './relay.js';

const COMMITTER = 'Reverser Bot <bot@reverser.test>';
const UNRESOLVED = 'unknown (attribution unresolved) <attribution-unresolved@configbutler.invalid>';
const GRACE_S = 3;
const NO_FACTS_GRACE_S = 5;
/** Source namespaces: "work" feeds the Auto GitTarget, "desk" the OnRequest one. */
const WORK = 'work';
const DESK = 'desk';
const GT_NS = 'gitops';
/** Source of the GitTarget that reads another audit route. */
const OTHER = 'other';

let cp: ControlPlane;
let relay: Relay;
let redis: RedisServer;
let remote: GitServer;
let deployment: Deployment;
let srv: Reverser;
let auditPort: number;
let tlsRoot: string | undefined;
let admin: Kubectl;
const kubectls: Kubectl[] = [];

function kubectl(kubeconfig: string): Kubectl {
  const k = new Kubectl(kubectlBinary(), kubeconfig);
  kubectls.push(k);
  return k;
}

/** `%an <%ae>|%cn <%ce>|%s` of every commit on main, oldest first ([] before the first push). */
async function log(repo: string): Promise<string[]> {
  try {
    return (await gitDir(join(remote.root, `${repo}.git`), 'log', '--reverse', '--format=%an <%ae>|%cn <%ce>|%s', 'main')).split('\n').filter(Boolean);
  } catch {
    return [];
  }
}

/** Waits until `repo` has `n` commits and returns them (oldest first). */
async function commits(repo: string, n: number, ms = 60_000): Promise<string[]> {
  await until(`${n} commits on ${repo}`, async () => (await log(repo)).length >= n, ms, 100);
  const l = await log(repo);
  assert.equal(l.length, n, l.join('\n'));
  return l;
}

async function changedFiles(repo: string, rev = 'main'): Promise<string> {
  return gitDir(join(remote.root, `${repo}.git`), 'show', '--format=', '--name-status', rev);
}

const gitTarget = (name: string, sourceNamespace: string, commit: Record<string, unknown>, extra: Record<string, unknown> = {}) => JSON.stringify({
  apiVersion: 'configbutler.ai/v1alpha1', kind: 'GitTarget', metadata: { name, namespace: GT_NS },
  spec: {
    repository: { url: remote.url(name) }, branch: 'main', path: 'live', commit,
    resources: [{ group: '', version: 'v1', resource: 'configmaps', namespaces: [sourceNamespace] }],
    ...extra,
  },
});

async function condition(target: string, type: string): Promise<{ status: string; reason: string; message: string } | undefined> {
  const r = await cp.api('GET', `/apis/configbutler.ai/v1alpha1/namespaces/${GT_NS}/gittargets/${target}`);
  return r.body?.status?.conditions?.find((c: { type: string }) => c.type === type);
}

/** For failure messages: what the remote and the GitTarget's status say now. */
async function state(target: string): Promise<string> {
  const r = await cp.api('GET', `/apis/configbutler.ai/v1alpha1/namespaces/${GT_NS}/gittargets/${target}`);
  return `\ncommits of ${target}:\n${(await log(target)).join('\n')}\nstatus: ${JSON.stringify(r.body?.status)}\nour server's last log lines:\n${srv.logs().split('\n').slice(-15).join('\n')}`;
}

async function pendingChanges(target: string): Promise<number> {
  const r = await cp.api('GET', `/apis/configbutler.ai/v1alpha1/namespaces/${GT_NS}/gittargets/${target}`);
  return r.body?.status?.pendingChanges ?? 0;
}

/** A kubeconfig for `name` (client certificate from the cluster CA), optionally impersonating someone. */
function userKubeconfig(name: string, impersonate?: { as: string; extra: Record<string, string[]> }): string {
  const u = cp.user(name);
  if (!impersonate) return u.kubeconfig;
  const text = JSON.stringify({
    apiVersion: 'v1', kind: 'Config', 'current-context': 'test',
    clusters: [{ name: 'test', cluster: { server: cp.url, 'certificate-authority-data': Buffer.from(cp.ca.certPem).toString('base64') } }],
    users: [{ name: 'user', user: {
      'client-certificate-data': Buffer.from(u.cert.certPem).toString('base64'),
      'client-key-data': Buffer.from(u.cert.keyPem).toString('base64'),
      as: impersonate.as, 'as-user-extra': impersonate.extra,
    } }],
    contexts: [{ name: 'test', context: { cluster: 'test', user: 'user' } }],
  });
  const p = join(cp.dir, `${name}-as-${impersonate.as}.kubeconfig`);
  writeFileSync(p, text, { mode: 0o600 });
  return p;
}

before(async () => {
  redis = await startRedis();
  remote = await startGitServer({ anonymous: true });
  for (const r of ['people', 'requests', 'replicas', 'staging']) remote.createBareRepo(r);
  // Our serving certificate exists before kube-apiserver starts: the webhook kubeconfig trusts its CA.
  tlsRoot = mkdtempSync(join(tmpdir(), 'reverser-attribution-tls-'));
  const tls = await generateServingTLS(join(tlsRoot, 'tls'));
  relay = await startRelay();
  cp = await startControlPlane({ audit: { port: relay.port, serverCAPem: tls.caPem, serverName: SERVICE_DNS } });
  admin = kubectl(cp.admin.kubeconfig);

  // People: alice, bob and carol edit ConfigMaps in both source namespaces and may save with
  // CommitRequests (the edit role aggregates ours); a ServiceAccount too; "imp" may impersonate
  // dora, with her display name and email as extras (as an OIDC authenticator would set them).
  for (const ns of [WORK, DESK, GT_NS]) succeeded(await admin.run(['create', 'namespace', ns]));
  for (const ns of [WORK, DESK, GT_NS]) {
    succeeded(await admin.run(['-n', ns, 'create', 'rolebinding', 'people-edit', '--clusterrole=edit', '--user=alice', '--user=bob', '--user=carol', '--user=dora', `--serviceaccount=${WORK}:deployer`]));
  }
  succeeded(await admin.run(['-n', WORK, 'create', 'serviceaccount', 'deployer']));
  succeeded(await admin.run(['apply', '-f', '-'], {
    stdin: JSON.stringify({
      apiVersion: 'v1', kind: 'List', items: [
        {
          apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'impersonate-dora' },
          rules: [
            { apiGroups: [''], resources: ['users'], resourceNames: ['dora'], verbs: ['impersonate'] },
            { apiGroups: ['authentication.k8s.io'], resources: ['userextras/configbutler.ai/claims/display-name', 'userextras/configbutler.ai/claims/email'], verbs: ['impersonate'] },
          ],
        },
        {
          apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: 'imp-impersonates-dora' },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'impersonate-dora' },
          subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'imp' }],
        },
      ],
    }),
  }));
  for (const n of ['a', 'b', 'c', 'd', 'e']) succeeded(await admin.run(['-n', WORK, 'create', 'configmap', n, `--from-literal=key=${n}-0`]));
  for (const n of ['x', 'y', 'z']) succeeded(await admin.run(['-n', DESK, 'create', 'configmap', n, `--from-literal=key=${n}-0`]));

  auditPort = await freePort();
  deployment = await deploy(cp, {
    tls,
    // Every replica gets the same flags, as from one Deployment: Redis, the committer, the audit
    // listener (each on its own port here, one host) and the grace.
    args: [
      '--storage=redis', `--redis-url=${redis.url}`,
      '--committer-name=Reverser Bot', '--committer-email=bot@reverser.test',
      `--audit-client-ca-file=${cp.audit!.caFile}`, '--audit-bind-address=127.0.0.1', `--attribution-grace=${GRACE_S}s`,
      // AuditAttribution turns False this long after a change waited in vain (default 60 s).
      `--attribution-no-facts-grace=${NO_FACTS_GRACE_S}s`,
    ],
    serverArgs: [`--audit-port=${auditPort}`, '--controllers=all'],
  });
  srv = deployment.server;
  relay.to(auditPort);
  // The aggregated edit role must hold our rules before alice may create CommitRequests.
  await until('edit aggregates our rules', async () => {
    const r = await cp.api('GET', '/apis/rbac.authorization.k8s.io/v1/clusterroles/edit');
    return r.body?.rules?.some((x: any) => x.apiGroups?.includes('configbutler.ai') && x.verbs.includes('create'));
  }, 60_000, 250);

  succeeded(await admin.run(['apply', '-f', '-'], { stdin: gitTarget('people', WORK, { idleSeconds: 1 }) }));
  succeeded(await admin.run(['apply', '-f', '-'], { stdin: gitTarget('requests', DESK, { mode: 'OnRequest', idleSeconds: 1, maxAgeSeconds: 3600 }) }));
  for (const t of ['people', 'requests']) succeeded(await admin.run(['-n', GT_NS, 'wait', '--for=condition=Ready', `gittarget/${t}`, '--timeout=90s'], { timeoutMs: 100_000 }));
  assert.deepEqual(await commits('people', 1), [`${COMMITTER}|${COMMITTER}|Snapshot of ${GT_NS}/people: 5 objects`]);
  assert.deepEqual(await commits('requests', 1), [`${COMMITTER}|${COMMITTER}|Snapshot of ${GT_NS}/requests: 3 objects`]);
});

after(async () => {
  for (const k of kubectls) k.cleanup();
  await srv?.stop();
  await cp?.stop();
  await relay?.close();
  await redis?.stop();
  await remote?.close();
  if (tlsRoot) rmSync(tlsRoot, { recursive: true, force: true });
});

describe('every edit authored by the person who made it', { concurrency: false }, () => {
  test('alice and bob edit one ConfigMap each: two commits, authored alice and bob, committed by the server', { timeout: 120_000 }, async () => {
    const alice = kubectl(userKubeconfig('alice'));
    const bob = kubectl(userKubeconfig('bob'));
    succeeded(await alice.run(['-n', WORK, 'patch', 'configmap', 'a', '-p', '{"data":{"key":"a-alice"}}']));
    succeeded(await bob.run(['-n', WORK, 'patch', 'configmap', 'b', '-p', '{"data":{"key":"b-bob"}}']));
    const l = await commits('people', 3);
    assert.deepEqual(l.slice(1), [
      `alice <alice@noreply.cluster.local>|${COMMITTER}|Update configmaps ${WORK}/a`,
      `bob <bob@noreply.cluster.local>|${COMMITTER}|Update configmaps ${WORK}/b`,
    ]);
    assert.equal(await changedFiles('people', 'main~1'), `M\tlive/${WORK}/configmaps/a.yaml\n`);
    assert.equal(await changedFiles('people'), `M\tlive/${WORK}/configmaps/b.yaml\n`);
  });

  // A deletion looks for delete evidence first; the object's last writer (bob here, whose fact is
  // known: his commit names him) is only the fallback once the grace has run out.
  test('carol\'s delete is authored carol, not the object\'s last writer', { timeout: 120_000 }, async () => {
    const bob = kubectl(userKubeconfig('bob'));
    succeeded(await bob.run(['-n', WORK, 'patch', 'configmap', 'c', '-p', '{"data":{"key":"c-bob"}}']));
    assert.equal((await commits('people', 4))[3], `bob <bob@noreply.cluster.local>|${COMMITTER}|Update configmaps ${WORK}/c`);
    const carol = kubectl(userKubeconfig('carol'));
    succeeded(await carol.run(['-n', WORK, 'delete', 'configmap', 'c']));
    const l = await commits('people', 5);
    assert.equal(l[4], `carol <carol@noreply.cluster.local>|${COMMITTER}|Delete configmaps ${WORK}/c`);
    assert.equal(await changedFiles('people'), `D\tlive/${WORK}/configmaps/c.yaml\n`);
  });

  test('a ServiceAccount\'s edit is authored system:serviceaccount:<namespace>:<name>', { timeout: 120_000 }, async () => {
    const token = succeeded(await admin.run(['-n', WORK, 'create', 'token', 'deployer'])).trim();
    const sa = kubectl(cp.tokenKubeconfig('deployer', token));
    succeeded(await sa.run(['-n', WORK, 'patch', 'configmap', 'd', '-p', '{"data":{"key":"d-sa"}}']));
    const l = await commits('people', 6);
    assert.equal(l[5], `system:serviceaccount:${WORK}:deployer <systemserviceaccountworkdeployer@noreply.cluster.local>|${COMMITTER}|Update configmaps ${WORK}/d`);
  });

  test('an impersonated edit is authored by the impersonated user, named by her display-name and email extras', { timeout: 120_000 }, async () => {
    const imp = kubectl(userKubeconfig('imp', {
      as: 'dora', extra: { 'configbutler.ai/claims/display-name': ['Dora Explorer'], 'configbutler.ai/claims/email': ['dora@example.com'] },
    }));
    succeeded(await imp.run(['-n', WORK, 'patch', 'configmap', 'e', '-p', '{"data":{"key":"e-dora"}}']));
    const l = await commits('people', 7);
    assert.equal(l[6], `Dora Explorer <dora@example.com>|${COMMITTER}|Update configmaps ${WORK}/e`);
  });
});

describe('audit posts blocked', { concurrency: false }, () => {
  test('an edit is committed after the grace as the unresolved author, and AuditAttribution turns False', { timeout: 180_000 }, async () => {
    const before = await condition('people', 'AuditAttribution');
    assert.equal(before?.status, 'True', JSON.stringify(before));
    relay.block();
    const alice = kubectl(userKubeconfig('alice'));
    const t0 = Date.now();
    succeeded(await alice.run(['-n', WORK, 'patch', 'configmap', 'a', '-p', '{"data":{"key":"a-unseen"}}']));
    const l = await commits('people', 8);
    const took = Date.now() - t0;
    assert.equal(l[7], `${UNRESOLVED}|${COMMITTER}|Update configmaps ${WORK}/a`);
    assert.ok(took >= GRACE_S * 1000, `committed ${took} ms after the edit: before the grace of ${GRACE_S} s ran out`);
    await until('AuditAttribution False', async () => (await condition('people', 'AuditAttribution'))?.status === 'False', 60_000, 250);
    const c = await condition('people', 'AuditAttribution');
    assert.equal(c?.status, 'False', JSON.stringify(c));
    // The posts come back (kube-apiserver retries the batch it could not deliver): the late fact
    // never rewrites the pushed commit, and the next edit is attributed again.
    const head = (await gitDir(join(remote.root, 'people.git'), 'rev-parse', 'main')).trim();
    relay.to(auditPort);
    succeeded(await alice.run(['-n', WORK, 'patch', 'configmap', 'a', '-p', '{"data":{"key":"a-seen"}}']));
    const after = await commits('people', 9);
    assert.equal(after[8], `alice <alice@noreply.cluster.local>|${COMMITTER}|Update configmaps ${WORK}/a`);
    assert.equal((await gitDir(join(remote.root, 'people.git'), 'rev-parse', 'main~1')).trim(), head, 'the unresolved commit is kept as pushed');
    await until('AuditAttribution True again', async () => (await condition('people', 'AuditAttribution'))?.status === 'True', 60_000, 250);
  });
});

describe('audit routes', { concurrency: false }, () => {
  test('facts are per route: a GitTarget reading another route gets none of the hosting cluster\'s facts', { timeout: 120_000 }, async () => {
    succeeded(await admin.run(['create', 'namespace', OTHER]));
    succeeded(await admin.run(['-n', OTHER, 'create', 'rolebinding', 'alice-edit', '--clusterrole=edit', '--user=alice']));
    succeeded(await admin.run(['-n', OTHER, 'create', 'configmap', 'o', '--from-literal=key=o-0']));
    succeeded(await admin.run(['apply', '-f', '-'], { stdin: gitTarget('staging', OTHER, { idleSeconds: 1 }, { attribution: { auditRoute: 'staging' } }) }));
    succeeded(await admin.run(['-n', GT_NS, 'wait', '--for=condition=Ready', 'gittarget/staging', '--timeout=90s'], { timeoutMs: 100_000 }));
    await commits('staging', 1);
    const alice = kubectl(userKubeconfig('alice'));
    succeeded(await alice.run(['-n', OTHER, 'patch', 'configmap', 'o', '-p', '{"data":{"key":"o-alice"}}']));
    assert.equal((await commits('staging', 2))[1], `${UNRESOLVED}|${COMMITTER}|Update configmaps ${OTHER}/o`);
    await until('AuditAttribution False on route staging', async () => (await condition('staging', 'AuditAttribution'))?.status === 'False', 60_000, 250);
    // The condition speaks only of facts that named this GitTarget's own changes (docs/api.md, AuditAttribution).
    assert.match((await condition('staging', 'AuditAttribution'))!.message, /no audit fact on route "staging" named them within \d+s \(no fact has named one yet\)/);
  });
});

describe('CommitRequests attach to their own author\'s window', { concurrency: false }, () => {
  test('bob\'s CommitRequest does not close alice\'s pending window; alice\'s does, with her message', { timeout: 180_000 }, async () => {
    // (An edit by bob would close alice's window: windows never mix authors. His request must not.)
    const alice = kubectl(userKubeconfig('alice'));
    const bob = kubectl(userKubeconfig('bob'));
    succeeded(await alice.run(['-n', DESK, 'patch', 'configmap', 'x', '-p', '{"data":{"key":"x-alice"}}']));
    await until('alice\'s change pending on requests', async () => (await pendingChanges('requests')) === 1, 30_000, 250).catch(async (e) => {
      throw new Error(`${(e as Error).message}${await state('requests')}`);
    });
    const save = (k: Kubectl, name: string, message: string) => k.run(['-n', GT_NS, 'create', '-f', '-'], {
      stdin: JSON.stringify({ apiVersion: 'configbutler.ai/v1alpha1', kind: 'CommitRequest', metadata: { name, namespace: GT_NS }, spec: { targetRef: { name: 'requests' }, message } }),
    });

    succeeded(await save(bob, 'bob-save', 'Bob: ship it'));
    succeeded(await admin.run(['-n', GT_NS, 'wait', '--for=condition=Ready', 'creq/bob-save', '--timeout=60s'], { timeoutMs: 70_000 }));
    const bobReason = succeeded(await admin.run(['-n', GT_NS, 'get', 'creq/bob-save', '-o', 'jsonpath={.status.conditions[?(@.type=="Ready")].reason}']));
    assert.equal(bobReason, 'NothingToCommit');
    // alice's change is still pending, uncommitted, well past idleSeconds.
    await new Promise((r) => setTimeout(r, 3000));
    assert.equal((await log('requests')).length, 1, await state('requests'));
    assert.equal(await pendingChanges('requests'), 1);

    succeeded(await save(alice, 'alice-save', 'Alice: x, as discussed'));
    succeeded(await admin.run(['-n', GT_NS, 'wait', '--for=condition=Ready', 'creq/alice-save', '--timeout=60s'], { timeoutMs: 70_000 }));
    assert.deepEqual((await commits('requests', 2)).slice(1), [`alice <alice@noreply.cluster.local>|${COMMITTER}|Alice: x, as discussed`]);
    assert.equal(await changedFiles('requests'), `M\tlive/${DESK}/configmaps/x.yaml\n`);
    const reason = succeeded(await admin.run(['-n', GT_NS, 'get', 'creq/alice-save', '-o', 'jsonpath={.status.conditions[?(@.type=="Ready")].reason}']));
    assert.equal(reason, 'Committed');
  });
});

describe('restarts and replicas (Redis store)', { concurrency: false }, () => {
  test('our server killed between the edit and the commit: the commit still names the right author', { timeout: 180_000 }, async () => {
    const carol = kubectl(userKubeconfig('carol'));
    succeeded(await carol.run(['-n', DESK, 'patch', 'configmap', 'z', '-p', '{"data":{"key":"z-carol"}}']));
    await until('carol\'s change pending', async () => (await pendingChanges('requests')) === 1, 30_000, 250).catch(async (e) => {
      throw new Error(`${(e as Error).message}${await state('requests')}`);
    });
    srv = await srv.restart('SIGKILL');
    succeeded(await carol.run(['-n', GT_NS, 'create', '-f', '-'], {
      stdin: JSON.stringify({ apiVersion: 'configbutler.ai/v1alpha1', kind: 'CommitRequest', metadata: { name: 'carol-save', namespace: GT_NS }, spec: { targetRef: { name: 'requests' }, message: 'Carol: z after a restart' } }),
    }));
    succeeded(await admin.run(['-n', GT_NS, 'wait', '--for=condition=Ready', 'creq/carol-save', '--timeout=90s'], { timeoutMs: 100_000 }));
    assert.equal((await commits('requests', 3))[2], `carol <carol@noreply.cluster.local>|${COMMITTER}|Carol: z after a restart`);
  });

  test('two replicas share facts: one receives the audit posts, the other commits with the author they name', { timeout: 240_000 }, async () => {
    // The relay hands every audit post to the first process, which now runs no controllers; the
    // second runs them (and has a listener of its own that nothing posts to), so it learns who
    // made the edit only from the facts the first stored in Redis.
    await srv.stop();
    srv = await deployment.start({ port: srv.port, dataDir: srv.dataDir, args: [`--audit-port=${auditPort}`, '--controllers=none'] });
    const committerReplica = await deployment.start({ args: ['--audit-port=0', '--controllers=all'] });
    try {
      succeeded(await admin.run(['apply', '-f', '-'], { stdin: gitTarget('replicas', WORK, { idleSeconds: 1 }) }));
      succeeded(await admin.run(['-n', GT_NS, 'wait', '--for=condition=Ready', 'gittarget/replicas', '--timeout=90s'], { timeoutMs: 100_000 }));
      await commits('replicas', 1);
      const bob = kubectl(userKubeconfig('bob'));
      succeeded(await bob.run(['-n', WORK, 'patch', 'configmap', 'b', '-p', '{"data":{"key":"b-replicas"}}']));
      assert.equal((await commits('replicas', 2))[1], `bob <bob@noreply.cluster.local>|${COMMITTER}|Update configmaps ${WORK}/b`);
    } finally {
      await committerReplica.stop();
    }
  });
});
