// Small truths kubectl shows: a GitTarget that mirrors nothing says what it waits for (Ready True,
// reason NothingToMirror) instead of looking mirrored, a CommitRequest against one ends
// NothingToCommit (also when created together with it), and docs/api.md's column table is what
// kubectl prints. Real server (--sandbox, every controller), real kubectl, git CLI.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer, type StartedServer } from '../support/server.js';
import { Kubectl, kubectlBinary, succeeded } from '../support/kubectl.js';
import { until } from '../support/deadline.js';
import { git } from '../git/git-cli.js';

const API_MD = fileURLToPath(new URL('../../../docs/api.md', import.meta.url));

const gitTarget = (name: string, repo: string, resources?: unknown[]) => ({
  apiVersion: 'configbutler.ai/v1alpha1',
  kind: 'GitTarget',
  metadata: { name, namespace: 'default' },
  spec: { repository: { url: `local:${repo}` }, branch: 'main', path: 'live', commit: { idleSeconds: 1 }, ...(resources ? { resources } : {}) },
});
const commitRequest = (name: string, target: string) => ({ apiVersion: 'configbutler.ai/v1alpha1', kind: 'CommitRequest', metadata: { name, namespace: 'default' }, spec: { targetRef: { name: target }, message: 'save' } });

describe('small truths', { concurrency: false, timeout: 180_000 }, () => {
  let server: StartedServer;
  let k: Kubectl;
  const ready = async (kind: string, name: string) => {
    const o = JSON.parse(succeeded(await k.run(['get', kind, name, '-o', 'json'])));
    const c = (o.status?.conditions ?? []).find((x: { type: string }) => x.type === 'Ready');
    return c ? `${c.status}/${c.reason}: ${c.message}` : undefined;
  };

  before(async () => {
    server = await startServer(['--sandbox', '--controllers=all']);
    k = new Kubectl(kubectlBinary(), server.kubeconfig);
  });
  after(async () => {
    k?.cleanup();
    await server?.stop();
  });

  test('a GitTarget over a namespace that does not exist says what it waits for; the first object makes the first commit', async () => {
    succeeded(await k.run(['apply', '-f', '-'], { stdin: JSON.stringify(gitTarget('ghost', 'ghost', [{ group: '', resource: 'configmaps', namespaces: ['nope'] }])) }));
    succeeded(await k.run(['wait', '--for=condition=Ready', 'gittarget/ghost', '--timeout=40s']));
    const waiting = 'True/NothingToMirror: no object of the source matches spec.resources yet (configmaps in namespace nope): nothing is committed, and no branch is created, until one does';
    await until(async () => (await ready('gittarget', 'ghost')) === waiting, 'ghost: NothingToMirror', 20_000, 100);
    const bare = join(server.dataDir, 'git', 'default', 'ghost.git');
    assert.equal(existsSync(bare) ? await git(bare, 'for-each-ref') : '', '', 'no branch');
    succeeded(await k.run(['create', 'namespace', 'nope']));
    succeeded(await k.run(['create', 'configmap', 'a', '-n', 'nope', '--from-literal=k=v']));
    await until(async () => (await ready('gittarget', 'ghost')) === 'True/Ready: the source is mirrored into the repository', 'ghost: Ready', 20_000, 100);
    await until(async () => existsSync(bare) && (await git(bare, 'for-each-ref')).includes('refs/heads/main'), 'the first commit', 20_000, 100);
    assert.equal(await git(bare, 'log', '--format=%s', 'main'), 'Update configmaps nope/a\n');
  });

  test('a GitTarget with no spec.resources is Ready (NothingToMirror); a CommitRequest created with it ends NothingToCommit', async () => {
    succeeded(await k.run(['apply', '-f', '-'], { stdin: [gitTarget('empty', 'empty'), commitRequest('save', 'empty')].map((o) => JSON.stringify(o)).join('\n') }));
    succeeded(await k.run(['wait', '--for=condition=Ready', 'gittarget/empty', '--timeout=40s']));
    assert.equal(await ready('gittarget', 'empty'), 'True/NothingToMirror: spec.resources is empty: nothing is read from the source, mirrored or committed');
    await until(async () => (await ready('commitrequest', 'save'))?.startsWith('True/') ?? false, 'the CommitRequest to finish', 30_000, 200);
    assert.match((await ready('commitrequest', 'save'))!, /^True\/NothingToCommit: /);
    assert.equal(existsSync(join(server.dataDir, 'git', 'default', 'empty.git')) ? await git(join(server.dataDir, 'git', 'default', 'empty.git'), 'for-each-ref') : '', '');
  });

  test("docs/api.md's column table is what kubectl prints", async () => {
    const doc = readFileSync(API_MD, 'utf8');
    const table = doc.slice(doc.indexOf('<!-- columns:begin -->'), doc.indexOf('<!-- columns:end -->'));
    const rows = [...table.matchAll(/^\| `kubectl ([^`]+)` \| `([^`]+)` \|$/gm)].map((m) => [m[1]!, m[2]!.split(/\s{2,}/)] as const);
    assert.deepEqual(rows.map(([cmd]) => cmd), ['get gt', 'get gt -o wide', 'get creq', 'get creq -o wide']);
    for (const [cmd, columns] of rows) {
      const out = succeeded(await k.run([...cmd.split(' '), '-n', 'default']));
      assert.deepEqual(out.split('\n')[0]!.trim().split(/\s{2,}/), columns, `kubectl ${cmd}:\n${out}`);
    }
  });
});
