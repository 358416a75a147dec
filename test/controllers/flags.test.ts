// --controllers: which controllers a process runs; an API-only replica commits nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseServeFlags } from '../../src/cli/options.js';

const MAIN = fileURLToPath(new URL('../../src/cli/main.js', import.meta.url));

test('--controllers: all by default, none or empty for API only, a list, unknown names refused with exit 2', { timeout: 30_000 }, async () => {
  const parse = (v?: string) => [...parseServeFlags(['--authorization-mode=AlwaysAllow', ...(v === undefined ? [] : [`--controllers=${v}`])]).controllers].sort();
  assert.deepEqual(parse(), ['commitrequests', 'mirror', 'windows']);
  assert.deepEqual(parse('all'), ['commitrequests', 'mirror', 'windows']);
  assert.deepEqual(parse('none'), []);
  assert.deepEqual(parse(''), []);
  assert.deepEqual(parse('windows'), ['windows']);
  assert.deepEqual(parse(' windows , commitrequests '), ['commitrequests', 'windows']);
  assert.deepEqual(parse('mirror,windows'), ['mirror', 'windows']);
  assert.throws(() => parse('mirror'), /--controllers: mirror needs windows in the same process; add windows to the list/);
  const r = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
    const p = execFile(process.execPath, [MAIN, 'serve', '--authorization-mode=AlwaysAllow', '--controllers=windows,bogus'], { timeout: 20_000 }, (_e, _o, stderr) => resolve({ code: p.exitCode, stderr }));
  });
  assert.equal(r.code, 2);
  assert.match(r.stderr, /--controllers: unknown controller "bogus"; use all, none, or a list of mirror, windows, commitrequests/);
});
