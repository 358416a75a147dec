// A GitTarget carries its author's authority, with Delegated authorization against a real
// kube-apiserver (docs/security.md): carol holds the aggregated `edit` role in team-a only. Her
// GitTarget over team-b is refused with kube's 403 naming `list configmaps in team-b`; granted
// `view` in team-b by a RoleBinding, the same GitTarget mirrors team-b; the RoleBinding deleted, the
// mirror stops within the re-verify interval (plus the SubjectAccessReview allow cache) and its
// condition names the missing permission.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { Kubectl, kubectlBinary, succeeded } from '../support/kubectl.js';
import { gitDir } from '../git/git-cli.js';
import { startControlPlane, until, type ClusterUser, type ControlPlane } from './fixture.js';
import { deployReverser, type Reverser } from './reverser.js';

const GV = '/apis/configbutler.ai/v1alpha1';
const REVERIFY_S = 2;
const ALLOW_CACHE_S = 1;

let cp: ControlPlane;
let srv: Reverser;
let admin: Kubectl;
let carol: ClusterUser;

const gitTarget = (name: string) => ({
  apiVersion: 'configbutler.ai/v1alpha1', kind: 'GitTarget', metadata: { name, namespace: 'team-a' },
  spec: {
    repository: { url: `local:${name}` }, branch: 'main', path: 'live', commit: { idleSeconds: 1 },
    resources: [{ group: '', version: 'v1', resource: 'configmaps', namespaces: ['team-b'] }],
  },
});

const condition = async (name: string, type: string) =>
  ((await cp.api('GET', `${GV}/namespaces/team-a/gittargets/${name}`)).body?.status?.conditions ?? []).find((c: { type: string }) => c.type === type);

before(async () => {
  cp = await startControlPlane();
  admin = new Kubectl(kubectlBinary(), cp.admin.kubeconfig);
  srv = await deployReverser(cp, { args: [`--authority-reverify-interval=${REVERIFY_S}s`, `--authorization-webhook-cache-authorized-ttl=${ALLOW_CACHE_S}s`] });
  carol = cp.user('carol');
  for (const ns of ['team-a', 'team-b']) succeeded(await admin.run(['create', 'namespace', ns]));
  succeeded(await admin.run(['-n', 'team-b', 'create', 'configmap', 'settings', '--from-literal=mode=blue']));
  succeeded(await admin.run(['-n', 'team-a', 'create', 'rolebinding', 'carol-edit', '--clusterrole=edit', '--user=carol']));
  // The ClusterRole aggregation controller folds reverser-apiserver:edit into edit.
  await until('edit aggregates our rules', async () => {
    const r = await cp.api('GET', '/apis/rbac.authorization.k8s.io/v1/clusterroles/edit');
    return r.body?.rules?.some((x: any) => x.apiGroups?.includes('configbutler.ai') && x.verbs.includes('create'));
  }, 60_000, 250);
});

after(async () => {
  admin?.cleanup();
  await srv?.stop();
  await cp?.stop();
});

test('edit in team-a cannot mirror team-b; granted view there it can; the grant removed, the mirror stops and says why', { timeout: 240_000 }, async () => {
  const refused = await cp.api('POST', `${GV}/namespaces/team-a/gittargets`, gitTarget('over-b'), carol);
  assert.equal(refused.status, 403, refused.text);
  assert.equal(refused.body.message, 'gittargets.configbutler.ai "over-b" is forbidden: User "carol" cannot list resource "configmaps" in API group "" in the namespace "team-b"');
  assert.equal((await cp.api('GET', `${GV}/namespaces/team-a/gittargets/over-b`)).status, 404);

  succeeded(await admin.run(['-n', 'team-b', 'create', 'rolebinding', 'carol-view', '--clusterrole=view', '--user=carol']));
  const created = await until('the GitTarget created once carol may read team-b', async () => {
    const r = await cp.api('POST', `${GV}/namespaces/team-a/gittargets`, gitTarget('over-b'), carol);
    return r.status === 201 ? r : undefined;
  }, 30_000, 500);
  assert.equal(created.body.status.authority.username, 'carol');
  await until('over-b Ready', async () => (await condition('over-b', 'Ready'))?.status === 'True', 90_000, 250);
  const repo = join(cp.dir, 'reverser-data', 'git', 'team-a', 'over-b.git'); // local: repositories are per namespace
  assert.equal(await gitDir(repo, 'ls-tree', '-r', '--name-only', 'main', 'live'), 'live/team-b/configmaps/settings.yaml\n');

  const t0 = Date.now();
  succeeded(await admin.run(['-n', 'team-b', 'delete', 'rolebinding', 'carol-view']));
  await until('the mirror stopped for AuthorityRevoked', async () => (await condition('over-b', 'Ready'))?.reason === 'AuthorityRevoked', 60_000, 250);
  const took = Date.now() - t0;
  // One interval for the next pass, one allow-cache TTL, and margins for a loaded machine.
  assert.ok(took < (2 * REVERIFY_S + ALLOW_CACHE_S) * 1000 + 10_000, `stopped after ${took} ms`);
  const v = await condition('over-b', 'Validated');
  assert.deepEqual({ status: v.status, reason: v.reason, message: v.message }, {
    status: 'False',
    reason: 'AuthorityRevoked',
    message: 'the authority of User "carol" is revoked: User "carol" cannot list resource "configmaps" in API group "" in the namespace "team-b"; nothing is mirrored until the grant returns or a user who holds it updates the spec',
  });
  // Nothing read after the stop reaches Git (bounded wait: the idle window and margins).
  succeeded(await admin.run(['-n', 'team-b', 'create', 'configmap', 'later', '--from-literal=k=v']));
  await new Promise((r) => setTimeout(r, 4_000));
  assert.equal(await gitDir(repo, 'ls-tree', '-r', '--name-only', 'main', 'live'), 'live/team-b/configmaps/settings.yaml\n');
});
