// Runs `reverser-apiserver serve` as a child process that is expected to refuse to start, and
// returns its exit code and output (bounded by a deadline).
import { controllersDefault } from '../support/server.js';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { freePort } from '../support/net.js';

export const MAIN = fileURLToPath(new URL('../../src/cli/main.js', import.meta.url));

export interface Exited {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Starts serve with these flags on a free port and waits (at most `timeoutMs`) for it to exit. */
export async function serveUntilExit(flags: string[], timeoutMs = 20_000): Promise<Exited> {
  const port = await freePort();
  const child = spawn(process.execPath, [MAIN, 'serve', '--secure-port', String(port), '--authorization-mode=AlwaysAllow', '--log-level', 'warn', ...controllersDefault(flags), ...flags], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`serve did not exit within ${timeoutMs} ms:\n${stdout}\n${stderr}`));
    }, timeoutMs);
    // 'close' fires after the exit and once stdout and stderr are drained.
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}
