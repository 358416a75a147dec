// The whole loop on one machine for mirror tests: a standalone sandbox cluster
// (`reverser-apiserver sandbox`, a real child process with its own data dir), the main server
// mirroring it (--kubeconfig <sandbox>/sandbox.kubeconfig, every controller on), kubectl for both,
// and the git CLI to read what landed.
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { KubeConfig } from '../../src/kubeconfig/kubeconfig.js';
import { freePort, startServer, type StartedServer } from '../support/server.js';
import { Kubectl, kubectlBinary } from '../support/kubectl.js';
import { until } from '../support/deadline.js';
import { SourceClient } from '../../src/controllers/source/client.js';

const MAIN = fileURLToPath(new URL('../../src/cli/main.js', import.meta.url));
const run = promisify(execFile);
const GIT_ENV = { ...process.env, GIT_CONFIG_NOSYSTEM: '1', HOME: tmpdir(), GIT_TERMINAL_PROMPT: '0' };

export interface Sandbox {
  dataDir: string;
  port: number;
  kubeconfig: string;
  kubectl: Kubectl;
  /** Stops the process (SIGTERM); the data dir stays. */
  stop(): Promise<void>;
  /** Starts it again on the same port and data dir. */
  start(): Promise<void>;
  /** Stops it and removes the data dir. */
  destroy(): Promise<void>;
}

export async function startSandbox(): Promise<Sandbox> {
  const dataDir = mkdtempSync(join(tmpdir(), 'reverser-sandbox-'));
  const port = await freePort();
  const kubeconfig = join(dataDir, 'sandbox.kubeconfig');
  let child: ChildProcess | undefined;
  let err = '';
  const start = async () => {
    err = '';
    const c = spawn(process.execPath, [MAIN, 'sandbox', '--secure-port', String(port), '--data-dir', dataDir, '--log-level', 'warn'], { stdio: ['ignore', 'ignore', 'pipe'] });
    child = c;
    c.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    let exited = false;
    c.once('exit', () => (exited = true));
    await until(
      async () => {
        if (exited) throw new Error(`sandbox exited before it was ready:\n${err}`);
        if (!existsSync(kubeconfig)) return false;
        const kc = new KubeConfig();
        try {
          kc.loadFromFile(kubeconfig);
        } catch {
          return false; // not written yet (the server renames it into place; older files may be partial)
        }
        const client = new SourceClient(kc, { requestTimeoutMs: 2_000 });
        try {
          await client.getJSON('/api/v1/namespaces');
          return true;
        } catch {
          return false;
        } finally {
          client.close();
        }
      },
      'the sandbox to serve /api/v1/namespaces',
      30_000,
      100,
    );
  };
  const stop = async () => {
    const c = child;
    child = undefined;
    if (!c || c.exitCode !== null) return;
    const gone = new Promise<void>((r) => c.once('exit', () => r()));
    c.kill('SIGTERM');
    const t = setTimeout(() => c.kill('SIGKILL'), 5_000);
    await gone;
    clearTimeout(t);
  };
  await start();
  const kubectl = new Kubectl(kubectlBinary(), kubeconfig);
  return {
    dataDir,
    port,
    kubeconfig,
    kubectl,
    stop,
    start,
    async destroy() {
      await stop();
      kubectl.cleanup();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** The main server mirroring `sandbox` (its default source is the sandbox). */
export async function startMirroringServer(sandbox: Sandbox, extra: string[] = []): Promise<StartedServer & { kubectl: Kubectl }> {
  const server = await startServer(['--controllers=all', '--kubeconfig', sandbox.kubeconfig, '--authentication-tolerate-lookup-failure=true', ...extra]);
  const kubectl = new Kubectl(kubectlBinary(), server.kubeconfig);
  const stop = server.stop;
  return Object.assign(server, {
    kubectl,
    async stop() {
      kubectl.cleanup();
      await stop();
    },
  });
}

export async function git(gitDir: string, ...args: string[]): Promise<string> {
  const { stdout } = await run('git', ['--git-dir', gitDir, ...args], { env: GIT_ENV, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  return stdout;
}

/** Commits on `branch`, newest first, as "subject" lines (empty when the branch does not exist). */
export async function commits(gitDir: string, branch = 'main'): Promise<string[]> {
  if (!existsSync(gitDir)) return [];
  try {
    return (await git(gitDir, 'log', '--format=%s', branch)).split('\n').filter(Boolean);
  } catch {
    return [];
  }
}

/** Files of the tree at `rev` under `folder`. */
export async function files(gitDir: string, rev = 'main', folder = ''): Promise<string[]> {
  const out = await git(gitDir, 'ls-tree', '-r', '--name-only', rev, ...(folder ? ['--', folder] : []));
  return out.split('\n').filter(Boolean);
}

/** A kubectl call that must succeed; returns stdout. */
export async function ok(k: Kubectl, args: string[], stdin?: string): Promise<string> {
  const r = await k.run(args, { stdin });
  if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')} failed (${r.code}):\n${r.stderr}${r.stdout}`);
  return r.stdout;
}
