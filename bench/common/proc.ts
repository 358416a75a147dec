// Child processes for benchmarks: free ports, a real redis-server, node children that announce
// readiness on a line of output, RSS readings. Every child is tracked so one call stops them all.
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface Child {
  proc: ChildProcess;
  pid: number;
  /** Everything the child printed so far (capped), for error messages. */
  output(): string;
  stop(): Promise<void>;
}

const children = new Set<Child>();

let childCpus: string | undefined;
/** Every child started from now on runs under `taskset -c <cpus>` (undefined: no pinning). */
export function pinChildren(cpus: string | undefined): void {
  childCpus = cpus;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/**
 * Spawns `cmd args` (under `taskset` when children are pinned), tracked so `cleanup` stops it;
 * `onOutput` sees everything it prints so far (capped). Stop: SIGTERM, then SIGKILL after 10 s.
 */
export function spawnChild(cmd: string, args: string[], opts: { env?: NodeJS.ProcessEnv; onOutput?: (out: string) => void } = {}): Child {
  // taskset execs the command, so the child's pid is the command's own.
  const [file, argv] = childCpus ? ['taskset', ['-c', childCpus, cmd, ...args]] : [cmd, args];
  const proc = spawn(file, argv, { stdio: ['ignore', 'pipe', 'pipe'], env: opts.env ?? process.env });
  let out = '';
  const child: Child = {
    proc,
    pid: proc.pid!,
    output: () => out,
    stop: () =>
      new Promise<void>((res) => {
        children.delete(child);
        if (proc.exitCode !== null || proc.signalCode !== null) return res();
        const t = setTimeout(() => proc.kill('SIGKILL'), 10_000);
        proc.once('exit', () => {
          clearTimeout(t);
          res();
        });
        proc.kill('SIGTERM');
      }),
  };
  // BENCH_CHILD_LOG=<file>: every child's whole output is appended there too (a failed scale run
  // keeps only the last 20,000 characters otherwise, and its temporary directory is removed).
  const logFile = process.env.BENCH_CHILD_LOG;
  const onData = (b: Buffer): void => {
    if (logFile) appendFileSync(logFile, b);
    out = (out + b.toString()).slice(-20_000);
    opts.onOutput?.(out);
  };
  proc.stdout!.on('data', onData);
  proc.stderr!.on('data', onData);
  proc.once('exit', () => children.delete(child));
  children.add(child);
  return child;
}

/** Spawns `cmd args` and resolves once its stdout or stderr matches `ready`. */
export function startChild(name: string, cmd: string, args: string[], ready: RegExp, timeoutMs = 30_000): Promise<Child> {
  return new Promise((resolve, reject) => {
    let done = false;
    const child = spawnChild(cmd, args, {
      onOutput: (out) => {
        if (!done && ready.test(out)) {
          done = true;
          clearTimeout(timer);
          resolve(child);
        }
      },
    });
    const { proc } = child;
    proc.once('error', (e) => {
      if (!done) reject(e);
    });
    proc.once('exit', (code, sig) => {
      if (!done) {
        done = true;
        clearTimeout(timer);
        reject(new Error(`${name} exited (${code ?? sig}) before it was ready:\n${child.output()}`));
      }
    });
    const timer = setTimeout(() => {
      if (done) return;
      done = true;
      proc.kill('SIGKILL');
      reject(new Error(`${name} not ready after ${timeoutMs} ms:\n${child.output()}`));
    }, timeoutMs);
  });
}

export async function startRedis(dir: string): Promise<{ url: string; port: number; child: Child }> {
  const port = await freePort();
  const child = await startChild(
    'redis-server',
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no', '--protected-mode', 'no', '--daemonize', 'no', '--loglevel', 'notice'],
    /Ready to accept connections/,
  );
  return { url: `redis://127.0.0.1:${port}`, port, child };
}

/** Resident set size of a process in MiB (VmRSS), and its peak (VmHWM). */
export function rssMiB(pid: number): { rss: number; hwm: number } {
  const s = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(s)?.[1] ?? NaN);
  return { rss: kb('VmRSS') / 1024, hwm: kb('VmHWM') / 1024 };
}

export function tempDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** Stops every child still running (reverse start order), then removes `dirs`. */
export async function cleanup(dirs: string[]): Promise<void> {
  for (const c of [...children].reverse()) await c.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
}
