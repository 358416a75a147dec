// A real redis-server for tests: free loopback port, its own temporary directory, stopped and
// removed by `stop()` (register it with t.after). `kill()` + `restart()` simulate an outage on the
// same port and data directory.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { freePort } from './net.js';
import { withDeadline } from './deadline.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface RedisServer {
  url: string;
  port: number;
  dir: string;
  /** Stop gracefully and remove the directory. */
  stop(): Promise<void>;
  /** SIGKILL: no shutdown save, open connections drop at once. */
  kill(): Promise<void>;
  /** Start again on the same port and directory (after kill or stop). */
  restart(): Promise<void>;
  /** SIGSTOP / SIGCONT: a server that accepts nothing and answers nothing (a hang, not a crash). */
  pause(): void;
  resume(): void;
}


/** `requirepass`: clients must AUTH with this password (the URL carries none). */
export async function startRedis(opts: { appendonly?: boolean; requirepass?: string } = {}): Promise<RedisServer> {
  const dir = await mkdtemp(join(tmpdir(), 'redis-test-'));
  let port = await freePort();
  let proc: ChildProcess | undefined;

  const launch = (): Promise<void> => {
    let started: ChildProcess | undefined;
    const ready = new Promise<void>((resolve, reject) => {
      const args = [
        '--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '',
        '--appendonly', opts.appendonly ? 'yes' : 'no', '--appendfsync', 'always',
        '--protected-mode', 'no', '--daemonize', 'no', '--loglevel', 'notice',
        ...(opts.requirepass ? ['--requirepass', opts.requirepass] : []),
      ];
      const p = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
      proc = p;
      started = p;
      let out = '';
      const onData = (b: Buffer): void => {
        out += b.toString();
        if (out.includes('Ready to accept connections')) resolve();
      };
      p.stdout!.on('data', onData);
      p.stderr!.on('data', (b: Buffer) => (out += b.toString()));
      p.once('exit', (code) => reject(new Error(`redis-server exited (${code}): ${out}`)));
      p.once('error', reject);
    });
    return withDeadline(ready, `redis-server on port ${port} to accept connections`, 15_000, () => started?.kill('SIGKILL'));
  };

  // A process that ignores the signal for 5 s gets SIGKILL; the wait itself has a deadline.
  const waitExit = (p: ChildProcess | undefined, signal: NodeJS.Signals): Promise<void> => {
    if (!p || p.exitCode !== null || p.signalCode !== null) return Promise.resolve();
    const gone = new Promise<void>((resolve) => p.once('exit', () => resolve()));
    p.kill(signal);
    const escalate = setTimeout(() => p.kill('SIGKILL'), 5000);
    return withDeadline(gone, 'redis-server to exit', 15_000).finally(() => clearTimeout(escalate));
  };

  // Retry once on a port taken between freePort() and the launch.
  try {
    await launch();
  } catch {
    port = await freePort();
    await launch();
  }
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    dir,
    async stop() {
      proc?.kill('SIGCONT');
      await waitExit(proc, 'SIGTERM');
      await rm(dir, { recursive: true, force: true });
    },
    async kill() {
      await waitExit(proc, 'SIGKILL');
    },
    async restart() {
      await waitExit(proc, 'SIGKILL');
      await launch();
    },
    pause() {
      proc?.kill('SIGSTOP');
    },
    resume() {
      proc?.kill('SIGCONT');
    },
  };
}
