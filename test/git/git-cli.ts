// What the tests check with the real git CLI: a fresh clone, fsck --strict, the exact tree and log.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const ENV = { ...process.env, GIT_CONFIG_NOSYSTEM: '1', HOME: tmpdir(), GIT_TERMINAL_PROMPT: '0' };

const run = promisify(execFile);

// Async on purpose: the test's Git server runs in this same process, so a blocking call would hang it.
export async function git(cwd: string, ...args: string[]): Promise<string> {
  const { stdout } = await run('git', args, { cwd, env: ENV, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  return stdout;
}

/** `git --git-dir=<gitDir> ...`: read a bare repository (such as the server's own) in place. */
export async function gitDir(dir: string, ...args: string[]): Promise<string> {
  const { stdout } = await run('git', [`--git-dir=${dir}`, ...args], { cwd: tmpdir(), env: ENV, encoding: 'utf8', timeout: 15_000, maxBuffer: 256 * 1024 * 1024 });
  return stdout;
}

export interface Checked {
  dir: string;
  files: string[];
  log: string[];
  read(path: string): Promise<string>;
  cleanup(): void;
}

/** Clones `url` at `branch`, runs fsck --strict (throws on any problem), and reads tree and log. */
export async function cloneAndCheck(url: string, branch: string): Promise<Checked> {
  const dir = mkdtempSync(join(tmpdir(), 'git-check-'));
  await git(dir, 'clone', '--quiet', '--branch', branch, url, 'repo');
  const repo = join(dir, 'repo');
  await git(repo, 'fsck', '--strict', '--no-dangling');
  const files = (await git(repo, 'ls-tree', '-r', '--name-only', 'HEAD')
    ).split('\n').filter(Boolean);
  const log = (await git(repo, 'log', '--format=%an <%ae>|%cn <%ce>|%s')).split('\n').filter(Boolean);
  return {
    dir: repo,
    files,
    log,
    read: (p) => git(repo, 'show', `HEAD:${p}`),
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}

export function configMap(name: string, namespace: string, data: Record<string, string>) {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace }, data };
}
