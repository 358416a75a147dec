// prune: Always removes files whose objects are gone even when the mirror never saw them: a file
// another commit put in the folder, for an object the source does not hold, goes with the snapshot
// (the git worker lists the folder at the branch head). OnEvent and Never keep it. Documentation
// and files outside the folder are never touched. (A folder holding a file that does not parse
// fails the acceptance gate and gets no commit at all: test/analyzer/writer-gate.test.ts.)
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { commits, files, git, ok, startMirroringServer, startSandbox, type Sandbox } from './harness.js';
import type { StartedServer } from '../support/server.js';
import type { Kubectl } from '../support/kubectl.js';

const run = promisify(execFile);
const GIT_ENV = { ...process.env, GIT_CONFIG_NOSYSTEM: '1', HOME: tmpdir(), GIT_TERMINAL_PROMPT: '0' };

let sandbox: Sandbox;
let server: StartedServer & { kubectl: Kubectl };

const cm = (name: string, value: string) => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n  namespace: team-p\ndata:\n  key: ${value}\n`;

/** What another tool committed before the mirror ran, as one commit on main of a new bare repository. */
const FOREIGN: Record<string, string> = {
  'clusters/dev/team-p/configmaps/stray.yaml': cm('stray', 'left-behind'),
  // The same object the source holds, under a hand-picked name: found by content and rewritten in place.
  'clusters/dev/team-p/keep-by-hand.yaml': cm('keep', 'old'),
  'clusters/dev/README.md': '# dev\n',
  'clusters/other/team-p/configmaps/outside.yaml': cm('outside', 'x'),
};

async function seed(gitDir: string): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), 'prune-seed-'));
  try {
    const g = (...args: string[]) => run('git', ['-C', work, ...args], { env: GIT_ENV });
    await run('git', ['init', '--quiet', '--bare', '--initial-branch=main', gitDir], { env: GIT_ENV });
    await g('init', '--quiet', '--initial-branch=main');
    for (const [path, text] of Object.entries(FOREIGN)) {
      mkdirSync(dirname(join(work, path)), { recursive: true });
      writeFileSync(join(work, path), text);
    }
    await g('add', '-A');
    await g('-c', 'user.name=Someone Else', '-c', 'user.email=else@example.com', 'commit', '--quiet', '-m', 'hand-made');
    await g('push', '--quiet', gitDir, 'main');
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

function gitTarget(name: string, prune: string): string {
  return JSON.stringify({
    apiVersion: 'configbutler.ai/v1alpha1',
    kind: 'GitTarget',
    metadata: { name, namespace: 'default' },
    spec: {
      repository: { url: `local:${name}` },
      branch: 'main',
      path: 'clusters/dev',
      commit: { idleSeconds: 1 },
      prune: { mode: prune },
      resources: [{ group: '', resource: 'configmaps', namespaces: ['team-p'] }],
    },
  });
}

before(async () => {
  sandbox = await startSandbox();
  server = await startMirroringServer(sandbox);
  await ok(sandbox.kubectl, ['create', 'namespace', 'team-p']);
  await ok(sandbox.kubectl, ['create', 'configmap', 'keep', '-n', 'team-p', '--from-literal=key=new']);
  await ok(sandbox.kubectl, ['create', 'configmap', 'fresh', '-n', 'team-p', '--from-literal=key=fresh']);
});

after(async () => {
  await server?.stop();
  await sandbox?.destroy();
});

const untouched = ['clusters/dev/README.md', 'clusters/other/team-p/configmaps/outside.yaml'];

for (const [prune, strayKept] of [
  ['Always', false],
  ['OnEvent', true],
  ['Never', true],
] as const) {
  test(`prune ${prune}: a file for an object the source does not hold is ${strayKept ? 'kept' : 'removed'} by the snapshot`, { timeout: 90_000 }, async () => {
    const name = `prune-${prune.toLowerCase()}`;
    const repo = join(server.dataDir, 'git', 'default', `${name}.git`);
    await seed(repo);
    await ok(server.kubectl, ['apply', '-f', '-'], gitTarget(name, prune));
    await ok(server.kubectl, ['wait', '--for=condition=Ready', `gittarget/${name}`, '--timeout=60s']);
    assert.deepEqual(await commits(repo), [`Snapshot of default/${name}: 2 objects${strayKept ? '' : ', 1 removed'}`, 'hand-made']);
    const expected = [
      ...untouched,
      'clusters/dev/team-p/configmaps/fresh.yaml',
      ...(strayKept ? ['clusters/dev/team-p/configmaps/stray.yaml'] : []),
      'clusters/dev/team-p/keep-by-hand.yaml',
    ].sort();
    assert.deepEqual(await files(repo), expected);
    assert.equal(await git(repo, 'show', 'main:clusters/dev/team-p/keep-by-hand.yaml'), cm('keep', 'new'));
    for (const f of untouched) assert.equal(await git(repo, 'show', `main:${f}`), FOREIGN[f], f);
  });
}
