// Person-naming trailers through a real kube-apiserver (aggregation layer, Delegated authorization
// by SubjectAccessReview, RBAC held by kube-apiserver), with kubectl as the users run it: bob (edit
// in team-a, no assert-author) is refused 403 for `Co-authored-by: Alice <alice@example.com>`,
// nothing is stored; alice (edit and assert-author on GitTarget "tenants") gets exactly that
// trailer in the commit, read back with `git log -1 --format=%B` from the server's repository.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { Kubectl, kubectlBinary, succeeded } from '../support/kubectl.js';
import { gitDir } from '../git/git-cli.js';
import { startControlPlane, until, type ControlPlane } from './fixture.js';
import { deployReverser, type Reverser } from './reverser.js';

const GV = '/apis/configbutler.ai/v1alpha1';
const MESSAGE = 'Raise the replica count\n\nCo-authored-by: Alice <alice@example.com>';

let cp: ControlPlane;
let srv: Reverser;
let admin: Kubectl;
let alice: Kubectl;
let bob: Kubectl;

const commitRequest = (name: string) => JSON.stringify({
  apiVersion: 'configbutler.ai/v1alpha1', kind: 'CommitRequest', metadata: { name, namespace: 'team-a' },
  spec: { targetRef: { name: 'tenants' }, message: MESSAGE },
});

const condition = async (path: string, type: string) =>
  ((await cp.api('GET', `${GV}/namespaces/team-a/${path}`)).body?.status?.conditions ?? []).find((c: { type: string }) => c.type === type);

before(async () => {
  cp = await startControlPlane();
  admin = new Kubectl(kubectlBinary(), cp.admin.kubeconfig);
  srv = await deployReverser(cp);
  alice = new Kubectl(kubectlBinary(), cp.user('alice').kubeconfig);
  bob = new Kubectl(kubectlBinary(), cp.user('bob').kubeconfig);
  succeeded(await admin.run(['create', 'namespace', 'team-a']));
  succeeded(await admin.run(['-n', 'team-a', 'create', 'configmap', 'settings', '--from-literal=replicas=1']));
  for (const u of ['alice', 'bob']) succeeded(await admin.run(['-n', 'team-a', 'create', 'rolebinding', `${u}-edit`, '--clusterrole=edit', `--user=${u}`]));
  succeeded(await admin.run(['apply', '-f', '-'], {
    stdin: JSON.stringify({
      apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: 'tenants-author', namespace: 'team-a' },
      rules: [{ apiGroups: ['configbutler.ai'], resources: ['gittargets'], resourceNames: ['tenants'], verbs: ['assert-author'] }],
    }),
  }));
  succeeded(await admin.run(['-n', 'team-a', 'create', 'rolebinding', 'tenants-author', '--role=tenants-author', '--user=alice']));
  // The ClusterRole aggregation controller folds reverser-apiserver:edit into edit.
  await until('edit aggregates our rules', async () => {
    const r = await cp.api('GET', '/apis/rbac.authorization.k8s.io/v1/clusterroles/edit');
    return r.body?.rules?.some((x: any) => x.apiGroups?.includes('configbutler.ai') && x.verbs.includes('create'));
  }, 60_000, 250);
  // Commits close only on a CommitRequest (or after an hour): the edit below waits for alice's.
  const created = await cp.api('POST', `${GV}/namespaces/team-a/gittargets`, {
    apiVersion: 'configbutler.ai/v1alpha1', kind: 'GitTarget', metadata: { name: 'tenants', namespace: 'team-a' },
    spec: {
      repository: { url: 'local:tenants' }, branch: 'main', path: 'live', commit: { mode: 'OnRequest', maxAgeSeconds: 3600 },
      resources: [{ group: '', version: 'v1', resource: 'configmaps', namespaces: ['team-a'] }],
    },
  });
  assert.equal(created.status, 201, created.text);
  await until('tenants Ready', async () => (await condition('gittargets/tenants', 'Ready'))?.status === 'True', 90_000, 250);
});

after(async () => {
  for (const k of [admin, alice, bob]) k?.cleanup();
  await srv?.stop();
  await cp?.stop();
});

test('kubectl through kube-apiserver: bob 403 for a Co-authored-by naming alice; alice, granted assert-author, gets exactly that trailer in git', { timeout: 240_000 }, async () => {
  const repo = join(cp.dir, 'reverser-data', 'git', 'team-a', 'tenants.git'); // local: repositories are per namespace
  const before = await gitDir(repo, 'rev-parse', 'main');
  succeeded(await admin.run(['-n', 'team-a', 'patch', 'configmap', 'settings', '-p', '{"data":{"replicas":"3"}}']));

  const refused = await bob.run(['create', '-f', '-'], { stdin: commitRequest('by-bob') });
  assert.deepEqual(refused, {
    code: 1, stdout: '',
    stderr: 'Error from server (Forbidden): error when creating "STDIN": gittargets.configbutler.ai "tenants" is forbidden: User "bob" cannot assert-author resource "gittargets" in API group "configbutler.ai" in the namespace "team-a": '
      + 'the trailer "Co-authored-by: Alice <alice@example.com>" in spec.message names someone other than the submitter; a person-naming trailer in a CommitRequest for GitTarget "tenants" '
      + 'requires a Role rule apiGroups: ["configbutler.ai"], resources: ["gittargets"], resourceNames: ["tenants"], verbs: ["assert-author"]\n',
  });
  assert.equal((await cp.api('GET', `${GV}/namespaces/team-a/commitrequests/by-bob`)).status, 404, 'nothing stored');
  // The same answer to a server-side dry run.
  const dry = await bob.run(['create', '--dry-run=server', '-f', '-'], { stdin: commitRequest('by-bob') });
  assert.equal(dry.stderr, refused.stderr);

  assert.equal(succeeded(await alice.run(['create', '-f', '-'], { stdin: commitRequest('by-alice') })), 'commitrequest.configbutler.ai/by-alice created\n');
  succeeded(await alice.run(['-n', 'team-a', 'wait', '--for=condition=Ready', 'creq/by-alice', '--timeout=60s']));
  assert.equal(await gitDir(repo, 'log', '-1', '--format=%B', 'main'), `${MESSAGE}\n\n`);
  assert.equal(await gitDir(repo, 'log', '-1', '--format=%an <%ae>|%(trailers:key=Co-authored-by)', 'main'), 'alice <alice@noreply.cluster.local>|Co-authored-by: Alice <alice@example.com>\n\n');
  assert.equal(await gitDir(repo, 'rev-parse', 'main~1'), before, 'one commit: alice\'s');
});
