// `reverser-apiserver serve` and `sandbox`: the validated options (options.ts) go to the server's
// start-up (src/server/index.ts), with this binary's version. Nothing imports this module.
import { startServer, type Running, type ServeOptions } from '../server/index.js';
import { createLogger, type Logger } from '../metrics/logger.js';
import { versionInfo } from './version.js';

export type { Running } from '../server/index.js';

export function serve(opts: ServeOptions, log: Logger = createLogger(opts.logLevel)): Promise<Running> {
  return startServer(opts, { version: versionInfo(), log });
}
