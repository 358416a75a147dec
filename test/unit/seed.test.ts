// Randomized tests are reproducible: a fixed default seed, printed, overridable by FUZZ_SEED.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { DEFAULT_SEED, seedFrom } from '../support/seed.js';

const REPO = fileURLToPath(new URL('../../../', import.meta.url));

test('seedFrom: the fixed default without the variable, the given integer with it, a clear error otherwise', () => {
  assert.equal(seedFrom('FUZZ_SEED', {}), DEFAULT_SEED);
  assert.equal(seedFrom('FUZZ_SEED', { FUZZ_SEED: '' }), DEFAULT_SEED);
  assert.equal(seedFrom('FUZZ_SEED', { FUZZ_SEED: '42' }), 42);
  assert.equal(seedFrom('FUZZ_SEED', { FUZZ_SEED: '4294967295' }), 4294967295);
  for (const bad of ['x', '-1', '1.5', '4294967296', '0x10']) {
    assert.throws(() => seedFrom('FUZZ_SEED', { FUZZ_SEED: bad }), { message: `FUZZ_SEED must be an integer from 0 to 4294967295, got ${JSON.stringify(bad)}` });
  }
});

/** Runs the fuzz test file with a handful of requests and returns what it printed. */
function fuzzRun(env: Record<string, string>): Promise<string> {
  const { NODE_TEST_CONTEXT: _inside, ...base } = process.env;
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ['--test', '--test-reporter=spec', 'dist/test/protocol/fuzz.test.js'],
      { cwd: REPO, timeout: 90_000, killSignal: 'SIGKILL', env: { ...base, FUZZ_COUNT: '5', ...env } },
      (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stdout}\n${stderr}`)) : resolve(stdout + stderr)),
    );
  });
}

test('the fuzz test prints its seed: the default twice in a row, FUZZ_SEED when given', async () => {
  const first = await fuzzRun({});
  const second = await fuzzRun({});
  assert.match(first, new RegExp(`fuzz seed: FUZZ_SEED=${DEFAULT_SEED}\\n`));
  assert.match(second, new RegExp(`fuzz seed: FUZZ_SEED=${DEFAULT_SEED}\\n`));
  assert.match(await fuzzRun({ FUZZ_SEED: '7' }), /fuzz seed: FUZZ_SEED=7\n/);
});
