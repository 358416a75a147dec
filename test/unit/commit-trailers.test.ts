// src/api/commit-trailers.ts against the real git: every message of a hand-written corpus (the
// cases git's own rules single out) and of a seeded random corpus built from tricky lines is read
// by `git interpret-trailers --parse` (and `--parse --no-divider`), and our parser must print
// exactly what git printed. One git process per mode reads all files (--in-place), so the test
// costs two processes, not thousands. TRAILERS_SEED=<n> reproduces or explores another corpus.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseTrailers, allTrailerReadings } from '../../src/api/commit-trailers.js';
import { seedFrom } from '../support/seed.js';
import { waitMs } from '../support/deadline.js';
import { mulberry32 } from '../support/mulberry32.js';

const run = promisify(execFile);
const SEED = seedFrom('TRAILERS_SEED');
const RANDOM_MESSAGES = 1500;

const CUT = '# ------------------------ >8 ------------------------';

/** Messages whose reading turns on one of git's rules; the comment says which. */
const CORPUS: string[] = [
  'fix\n\nCo-authored-by: The CEO <ceo@corp.example>', // the attack of docs/security.md
  'fix\n\nCo-authored-by: The CEO <ceo@corp.example>\n', // final newline
  'fix\n\nCo-authored-by: A <a@x>\n\n\n', // trailing blank lines
  'fix\n\nco-AUTHORED-by: A <a@x>', // any case
  'fix\n\nCo-authored-by : A <a@x>', // space before the colon
  'fix\n\nCo-authored-by\t: A <a@x>', // tab before the colon
  'fix\n\nCo authored by: A <a@x>', // spaces inside a key: not a trailer
  'fix\n\nCo-authored-by: A\n  <a@x>', // folded continuation
  'fix\n\nCo-authored-by:\n\tA <a@x>\n Reviewed-by: B', // continuation lines, one looks like a trailer
  'fix\n\nCo-authored-by: A <a@x>\n\nmore text', // not the last paragraph
  'fix\n\nCo-authored-by: A <a@x>\nthis line is not a trailer', // mixed paragraph, no git-generated trailer
  'fix\n\nSigned-off-by: B <b@y>\nthis line is not a trailer\nCo-authored-by: A <a@x>', // 25% rule with Signed-off-by
  'fix\n\nSigned-off-by: B <b@y>\nnot\nnot\nnot\nCo-authored-by: A <a@x>', // 2 of 5: at least 25%
  'fix\n\nSigned-off-by: B <b@y>\nnot\nnot\nnot\nnot\nnot\nnot\nCo-authored-by: A <a@x>', // below 25%
  'fix\n\nsigned-off-by: B <b@y>\nnot\nCo-authored-by: A <a@x>', // lower case is not git-generated
  'fix\n\n(cherry picked from commit 0123456789abcdef)\nnot\nCo-authored-by: A <a@x>',
  'Co-authored-by: A <a@x>', // the title is never trailers
  'Co-authored-by: A <a@x>\nReviewed-by: B <b@y>', // a one-paragraph message
  '\n\nCo-authored-by: A <a@x>', // an empty title
  'fix\r\n\r\nCo-authored-by: A <a@x>\r\n', // CRLF
  'fix\n\nCo-authored-by: A <a@x>\r\nReviewed-by: B\r\n', // CR kept in values, trimmed at the end
  'fix\n\nCo-authored-by: A <a@x>\n# a comment\n', // trailing comment
  'fix\n\n# a comment\nCo-authored-by: A <a@x>', // comment inside the block
  'fix\n\nCo-authored-by: A <a@x>\n# comment\n continuation after a comment',
  'fix\n\nCo-authored-by: A <a@x>\n---\ndiff --git a b', // the patch divider
  'fix\n\nCo-authored-by: A <a@x>\n---', // "---" at the very end (no space after it)
  'fix\n\nCo-authored-by: A <a@x>\n---x\nReviewed-by: B', // "---x" is no divider
  'fix\n\n---\n\nCo-authored-by: A <a@x>', // trailers only below the divider
  'fix\n\nText\n--- \nCo-authored-by: A <a@x>',
  `fix\n\nCo-authored-by: A <a@x>\n${CUT}\nReviewed-by: B`, // scissors
  `${CUT}\nCo-authored-by: A <a@x>`,
  `fix\n\nA: b\n---\nx\n${CUT}\nmore`, // scissors below the divider
  'fix\n\nCo-authored-by: A <a@x>\nConflicts:\n\tpath/one\n\tpath/two\n', // an old conflicts block
  'fix\n\nConflicts:\n\tpath\nCo-authored-by: A <a@x>',
  'fix\n\nBug #42: x', // "#" is no separator by default
  'fix\n\n:no key\nA: b',
  'fix\n\n-: dash key\nA-: b\n--: c',
  'fix\n\nKey:',
  'fix\n\nKey:   \n  \n',
  'fix\n\n   \nCo-authored-by: A <a@x>', // a whitespace-only line is blank
  'fix\n\nCo-authored-by: A <a@x>\n   \n',
  'fix\n\nКлюч: значение\nCo-authored-by: A <a@x>', // non-ASCII key: a non-trailer line
  'fix\n\nCo-authored-by: Zoë Ünïcode <zoe@x>',
  'fix\n\nA:1\nB :2\nC\t:3\n D: continuation\n', // many forms in one block
  '# only a comment',
  '',
  '\n',
  'fix',
  'fix\n\n',
  'fix\n\nCo-authored-by:A<a@x>',
  'fix\n\nCo-authored-by: A <a@x> \t',
  'fix\n\nCo-authored-by: A\n\n\n <a@x>',
];

/** Lines random messages are made of: every rule's trigger, several times over. */
const POOL = [
  'Co-authored-by: A <a@x>', 'co-authored-by: B <b@y>', 'Signed-off-by: S <s@z>', 'signed-off-by: s', 'Reviewed-by :R', 'Acked-by\t: K',
  'Key: value', 'Key:', ':x', '-: y', 'a:b', 'Bug #1: x', 'Not a: trailer', 'with spaces: no', '(cherry picked from commit abc)',
  ' continuation', '\tcontinuation', '  ', '', '', '', 'plain text', 'Plain text line.', '# comment', '#', '---', '--- x', '---x', '--',
  CUT, 'Conflicts:', '\tpath', 'Key: value\r', 'text\r', '\r', 'Ключ: v', 'Tested-by: T <t@t>', 'Helped-by: H',
];


function randomMessages(seed: number, n: number): string[] {
  const r = mulberry32(seed);
  const int = (k: number) => Math.floor(r() * k);
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    const lines = Array.from({ length: 1 + int(9) }, () => POOL[int(POOL.length)]!);
    const eol = r() < 0.1 ? '\r\n' : '\n';
    out.push(lines.join(eol) + (r() < 0.5 ? '\n' : ''));
  }
  return out;
}

/** git's reading of every message: one `git interpret-trailers --in-place` over all files. */
async function gitParse(messages: string[], noDivider: boolean): Promise<string[]> {
  const dir = mkdtempSync(join(tmpdir(), 'trailers-oracle-'));
  try {
    const files = messages.map((m, i) => {
      const f = join(dir, `m${i}`);
      writeFileSync(f, m);
      return f;
    });
    // No user, system or repository configuration: git's defaults, as the parser implements them.
    const env = { ...process.env, HOME: dir, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', GIT_CEILING_DIRECTORIES: dir, LC_ALL: 'C' };
    const args = ['interpret-trailers', '--in-place', '--parse', ...(noDivider ? ['--no-divider'] : []), ...files];
    try {
      await run('git', args, { cwd: dir, env, timeout: waitMs(60_000), maxBuffer: 64 * 1024 * 1024 });
    } catch (e) {
      const x = e as { signal?: string; code?: number; stderr?: string };
      throw new Error(`git interpret-trailers failed (signal ${x.signal}, code ${x.code}): ${x.stderr?.slice(0, 500)}`);
    }
    return files.map((f) => readFileSync(f, 'utf8'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const ours = (m: string, divider: boolean) => parseTrailers(m, { divider }).map((t) => `${t.key}: ${t.value}\n`).join('');

/**
 * git 2.39 never returns on a message whose scissors line lies below a "---" divider (the cut is
 * searched in the whole text, the end of the trailers then lies past the divider and its title scan
 * runs off the end), so the divider reading has no oracle for those; the parser reads them as if
 * the divider were not there, and the test without the divider covers them.
 */
function hangsGit(m: string): boolean {
  const lines = m.split('\n');
  const divider = lines.findIndex((l) => /^---[ \t\n\r]/.test(`${l}\n`));
  const cut = m.startsWith(`${CUT}\n`) ? 0 : lines.findIndex((l, i) => i > 0 && l === CUT && i < lines.length - 1);
  return divider !== -1 && cut > divider;
}

for (const divider of [true, false]) {
  test(`parseTrailers agrees with git interpret-trailers --parse${divider ? '' : ' --no-divider'} (seed ${SEED})`, { timeout: waitMs(120_000) }, async () => {
    const all = [...CORPUS, ...randomMessages(SEED, RANDOM_MESSAGES)];
    const messages = divider ? all.filter((m) => !hangsGit(m)) : all;
    const theirs = await gitParse(messages, !divider);
    const disagree = messages.flatMap((m, i) => (ours(m, divider) === theirs[i] ? [] : [{ message: m, git: theirs[i], ours: ours(m, divider) }]));
    assert.deepEqual(disagree.slice(0, 5), [], `${disagree.length} of ${messages.length} messages read differently (TRAILERS_SEED=${SEED})`);
    // The corpus exercises both outcomes, so agreement is not agreement on "no trailers".
    const withTrailers = theirs.filter((t) => t !== '').length;
    assert.ok(withTrailers > messages.length / 10, `only ${withTrailers} of ${messages.length} messages have trailers`);
  });
}

test('exact readings of the cases the policy turns on', () => {
  assert.deepEqual(parseTrailers('fix\n\nco-AUTHORED-by : The CEO\n  <ceo@corp.example>\n'), [{ key: 'co-AUTHORED-by', value: 'The CEO <ceo@corp.example>' }]);
  assert.deepEqual(parseTrailers('fix\n\nCo-authored-by: A <a@x>\n\nthe last paragraph is prose'), []);
  assert.deepEqual(parseTrailers('fix\n\nCo-authored-by: A <a@x>\n---\n'), [{ key: 'Co-authored-by', value: 'A <a@x>' }]);
  // Below a divider: only the reading without it (git log's) sees the trailer; the union has it.
  const below = 'fix\n\nText\n---\n\nCo-authored-by: A <a@x>';
  assert.deepEqual(parseTrailers(below), []);
  assert.deepEqual(parseTrailers(below, { divider: false }), [{ key: 'Co-authored-by', value: 'A <a@x>' }]);
  assert.deepEqual(allTrailerReadings(below), [{ key: 'Co-authored-by', value: 'A <a@x>' }]);
});

test('linear: a 1 MiB message of continuation lines parses in seconds, not hours (linear)', () => {
  const m = `fix\n\nKey: v\n${' x\n'.repeat(350_000)}`;
  const t0 = performance.now();
  const t = parseTrailers(m);
  const ms = performance.now() - t0;
  assert.equal(t.length, 1);
  assert.ok(ms < 5000, `took ${ms.toFixed(0)} ms`);
});
