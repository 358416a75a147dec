// The server process's start-up, as k8s.io/apiserver and sample-apiserver split it: validated
// options (src/server/options.ts, parsed from flags by src/cli/options.ts) → config (config.ts
// newConfig: derived, reads files only) → completed config (config.ts complete: defaults filled)
// → run (run.ts: listeners, controllers, registration; one ordered shutdown). cli/ calls this;
// nothing here imports cli/.
import { mkdirSync } from 'node:fs';
import { lockDataDir } from '../storage/data-dir-lock.js';
import type { Logger } from '../metrics/logger.js';
import { complete, newConfig } from './config.js';
import { run, type Running } from './run.js';
import type { ServeOptions } from './options.js';

export type { Running } from './run.js';
export type { AuditOptions, ServeMode, ServeOptions } from './options.js';

export async function startServer(opts: ServeOptions, deps: { version: Record<string, string>; log: Logger }): Promise<Running> {
  const config = newConfig(opts, deps.version);
  mkdirSync(opts.dataDir, { recursive: true, mode: 0o700 });
  // Before anything is written into the directory (certificates, store, kubeconfig).
  const lock = lockDataDir(opts.dataDir);
  if (lock.tookOver) deps.log.warn('took over a stale data directory lock', { lock: lock.path, previousPid: lock.tookOver.pid, previousHost: lock.tookOver.host });
  try {
    return await run(complete(config), deps.log, lock.release);
  } catch (e) {
    lock.release();
    throw e;
  }
}
