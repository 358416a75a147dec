// The git engine (isomorphic-git, ~18 MB) loads on first use: commands that never commit do not
// load it. A module-resolution hook records every module the CLI process resolves.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const MAIN = fileURLToPath(new URL('../../src/cli/main.js', import.meta.url));

const HOOKS = `import { appendFileSync } from 'node:fs';
export async function resolve(specifier, context, next) {
  const r = await next(specifier, context);
  appendFileSync(process.env.MODULE_TRACE_FILE, r.url + '\\n');
  return r;
}
`;

/** Runs the CLI with `args` and returns its exit code and every module URL it resolved. */
async function traced(t: TestContext, args: string[]): Promise<{ code: number; stdout: string; modules: string[] }> {
  const dir = mkdtempSync(join(tmpdir(), 'cli-trace-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const trace = join(dir, 'modules.txt');
  writeFileSync(trace, '');
  writeFileSync(join(dir, 'hooks.mjs'), HOOKS);
  writeFileSync(join(dir, 'register.mjs'), `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(join(dir, 'hooks.mjs')).href)});\n`);
  const r = await new Promise<{ code: number; stdout: string }>((resolve) => {
    execFile(process.execPath, ['--import', pathToFileURL(join(dir, 'register.mjs')).href, MAIN, ...args],
      { timeout: 20_000, killSignal: 'SIGKILL', env: { ...process.env, MODULE_TRACE_FILE: trace } },
      (err, stdout) => resolve({ code: err ? Number((err as { code?: unknown }).code ?? 1) : 0, stdout }));
  });
  return { ...r, modules: readFileSync(trace, 'utf8').split('\n').filter(Boolean) };
}

const engineModules = (modules: string[]) => modules.filter((m) => /\/node_modules\/isomorphic-git\/|\/src\/git\/engine\.js$/.test(m));

test('`version` and `--help` do not load the git engine (isomorphic-git)', async (t) => {
  const version = await traced(t, ['version']);
  assert.equal(version.code, 0);
  assert.match(version.stdout, /^v\d/);
  assert.ok(version.modules.some((m) => m.endsWith('/src/cli/version.js')), 'the trace records the CLI modules');
  assert.deepEqual(engineModules(version.modules), []);

  const help = await traced(t, ['serve', '--help']);
  assert.equal(help.code, 0);
  assert.match(help.stdout, /--committer-name/);
  assert.deepEqual(engineModules(help.modules), []);
});
