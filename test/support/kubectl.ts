import assert from 'node:assert/strict';
// The real kubectl binaries: the one on PATH and the pinned versions installed beside it
// (kubectl.1.27, kubectl.1.33, ...). Each Kubectl instance has its own HOME and --cache-dir so
// discovery and OpenAPI caches never leak between versions or test files.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { waitMs, withDeadline } from './deadline.js';

export function kubectlOnPath(): string {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    const p = join(dir, 'kubectl');
    if (dir && existsSync(p)) return p;
  }
  throw new Error('kubectl not found on PATH');
}

/** `kubectl` (on PATH) or `kubectl.<version>` beside its real path. */
export function kubectlBinary(version?: string): string {
  const onPath = kubectlOnPath();
  if (!version) return onPath;
  const p = join(dirname(realpathSync(onPath)), `kubectl.${version}`);
  if (!existsSync(p)) throw new Error(`${p} not found`);
  return p;
}

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** The command's stdout, after asserting it exited 0 (the failure names its exit code and both streams). */
export function succeeded(r: RunResult): string {
  assert.equal(r.code, 0, `exit ${r.code}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`);
  return r.stdout;
}

export class Kubectl {
  readonly home: string;
  readonly cacheDir: string;

  constructor(
    readonly bin: string,
    readonly kubeconfig: string,
  ) {
    this.home = mkdtempSync(join(tmpdir(), 'kubectl-home-'));
    this.cacheDir = join(this.home, 'cache');
  }

  private args(args: string[]): string[] {
    return [...args, '--kubeconfig', this.kubeconfig, '--cache-dir', this.cacheDir];
  }

  private env(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
    return { PATH: process.env.PATH, HOME: this.home, KUBECONFIG: this.kubeconfig, ...extra };
  }

  /** Runs kubectl to completion; `stdin` is written to its standard input; `env` adds variables (KUBE_EDITOR). */
  run(args: string[], opts: { stdin?: string; timeoutMs?: number; env?: Record<string, string> } = {}): Promise<RunResult> {
    return new Promise((resolve) => {
      const child = execFile(this.bin, this.args(args), { env: this.env(opts.env), timeout: waitMs(opts.timeoutMs ?? 60_000), killSignal: 'SIGKILL', maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
        const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : -1) : 0;
        resolve({ code, stdout, stderr });
      });
      // kubectl may exit before reading its input (a quick error): EPIPE then is not the test's failure.
      child.stdin?.on('error', () => {});
      child.stdin?.end(opts.stdin ?? '');
    });
  }

  /** Writes a manifest file into this kubectl's home and returns its path. */
  file(name: string, content: string | object): string {
    const p = join(this.home, name);
    writeFileSync(p, typeof content === 'string' ? content : JSON.stringify(content, null, 2));
    return p;
  }

  /** A long-running kubectl (get -w): lines of stdout arrive in `lines`. */
  start(args: string[]): LongRunning {
    return new LongRunning(spawn(this.bin, this.args(args), { env: this.env(), stdio: ['ignore', 'pipe', 'pipe'] }));
  }

  cleanup(): void {
    rmSync(this.home, { recursive: true, force: true });
  }
}

export class LongRunning {
  lines: string[] = [];
  stderr = '';
  private partial = '';
  private listeners: Array<() => void> = [];
  exited = false;

  constructor(readonly child: ChildProcess) {
    child.stdout!.setEncoding('utf8');
    child.stdout!.on('data', (c: string) => {
      this.partial += c;
      const parts = this.partial.split('\n');
      this.partial = parts.pop()!;
      this.lines.push(...parts);
      this.notify();
    });
    child.stderr!.on('data', (c: Buffer) => {
      this.stderr += c.toString();
      this.notify();
    });
    child.once('exit', () => {
      this.exited = true;
      this.notify();
    });
  }

  private notify(): void {
    for (const l of this.listeners.slice()) l();
  }

  /** Resolves once `pred(lines)` holds; rejects if the process exits first or after timeoutMs. */
  waitFor(pred: (lines: string[]) => boolean, what: string, timeoutMs = waitMs(20_000)): Promise<void> {
    return new Promise((resolve, reject) => {
      const check = () => {
        if (pred(this.lines)) {
          done();
          resolve();
        } else if (this.exited) {
          done();
          reject(new Error(`kubectl exited while waiting for ${what}; stdout:\n${this.lines.join('\n')}\nstderr:\n${this.stderr}`));
        }
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`timed out waiting for ${what}; stdout:\n${this.lines.join('\n')}\nstderr:\n${this.stderr}`));
      }, timeoutMs);
      const done = () => {
        clearTimeout(timer);
        this.listeners = this.listeners.filter((l) => l !== check);
      };
      this.listeners.push(check);
      check();
    });
  }

  async stop(): Promise<void> {
    if (this.exited) return;
    const gone = new Promise<void>((r) => this.child.once('exit', () => r()));
    this.child.kill('SIGTERM');
    const escalate = setTimeout(() => this.child.kill('SIGKILL'), 5000);
    await withDeadline(gone, 'kubectl to exit', 15_000).finally(() => clearTimeout(escalate));
  }
}
