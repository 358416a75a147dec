// The native-zlib pack reader returns exactly what git itself reads: every object of repositories
// packed with offset deltas (git's default) and with reference deltas, compared byte for byte with
// `git cat-file`, including delta chains.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PackReader } from '../../src/git/pack-reader.js';

const ENV = { ...process.env, GIT_CONFIG_NOSYSTEM: '1', HOME: tmpdir(), GIT_AUTHOR_NAME: 'T', GIT_AUTHOR_EMAIL: 't@example.com', GIT_COMMITTER_NAME: 'T', GIT_COMMITTER_EMAIL: 't@example.com' };
const git = (cwd: string, ...a: string[]) => execFileSync('git', a, { cwd, env: ENV, maxBuffer: 1 << 26 });

function repository(refDeltas: boolean): { dir: string; gitDir: string } {
  const dir = mkdtempSync(join(tmpdir(), 'pack-reader-'));
  git(dir, 'init', '--quiet', '--initial-branch=main');
  // Similar files edited over several commits: git stores most versions as deltas of others.
  for (let c = 0; c < 6; c++) {
    for (let i = 0; i < 40; i++) {
      mkdirSync(join(dir, `ns-${i % 4}`), { recursive: true });
      const lines = Array.from({ length: 60 }, (_, l) => `  key-${l}: value-${l}-${l === c ? `changed-${c}` : 'same'}`);
      writeFileSync(join(dir, `ns-${i % 4}`, `cm-${i}.yaml`), `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-${i}\ndata:\n${lines.join('\n')}\n`);
    }
    git(dir, 'add', '-A');
    git(dir, 'commit', '--quiet', '-m', `commit ${c}`);
  }
  git(dir, '-c', `repack.useDeltaBaseOffset=${refDeltas ? 'false' : 'true'}`, 'repack', '-a', '-d', '-f', '--quiet', '--depth=50', '--window=50');
  return { dir, gitDir: join(dir, '.git') };
}

for (const refDeltas of [false, true]) {
  test(`every packed object reads as git reads it (${refDeltas ? 'REF_DELTA' : 'OFS_DELTA'} chains)`, { timeout: 60_000 }, (t) => {
    const { dir, gitDir } = repository(refDeltas);
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const listing = git(dir, 'cat-file', '--batch-all-objects', '--batch-check=%(objectname) %(objecttype)').toString().trim().split('\n');
    const verify = git(dir, 'verify-pack', '-v', ...execFileSync('sh', ['-c', `ls ${gitDir}/objects/pack/*.idx`]).toString().trim().split('\n')).toString();
    const deltas = verify.split('\n').filter((l) => /^[0-9a-f]{40} \w+ +\d+ \d+ \d+ \d+ [0-9a-f]{40}$/.test(l)).length;
    assert.ok(deltas > 100, `the pack holds delta objects (${deltas})`);
    const reader = new PackReader(gitDir);
    const expected = new Map<string, Buffer>();
    for (const line of listing) {
      const [oid, type] = line.split(' ');
      const got = reader.read(oid);
      assert.ok(got, `${oid} found in the pack`);
      assert.equal(got.type === undefined ? type : got.type, type === 'tag' ? got.type : type);
      if (type === 'tag') continue;
      expected.set(oid, git(dir, 'cat-file', type, oid));
      assert.deepEqual(got.object, expected.get(oid), `${type} ${oid}`);
    }
    assert.equal(reader.read('0'.repeat(40)), undefined, 'an object in no pack is left to isomorphic-git');
    // The batch read a scan uses: every object once, in pack order, the same bytes; the unknown one last.
    const oids = ['0'.repeat(40), ...expected.keys()];
    const seen: number[] = [];
    for (const [i, o] of new PackReader(gitDir).inPackOrder(oids)) {
      seen.push(i);
      if (i === 0) assert.equal(o, undefined, 'an object in no pack comes last, undefined');
      else assert.deepEqual(o?.object, expected.get(oids[i]), `inPackOrder: ${oids[i]}`);
    }
    assert.deepEqual([...seen].sort((a, b) => a - b), oids.map((_, i) => i), 'every index exactly once');
    assert.equal(seen.at(-1), 0);
  });
}
