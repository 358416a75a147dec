#!/usr/bin/env node
// Entry point of the `reverser-apiserver` binary.
// Only what every command needs is imported here; `serve` loads the server when it runs, so
// `version` and `--help` start in a fraction of the time and never load the git engine.
import { FlagError, helpText, parseServeFlags } from './options.js';
import { preflightServe } from './preflight.js';
import { KUBERNETES_API_LEVEL, ownVersion, versionInfo } from './version.js';

async function main(argv: string[]): Promise<number> {
  const [cmd, ...rest] = argv;
  if (cmd === undefined || cmd === '--help' || cmd === '-h' || cmd === 'help' || ((cmd === 'serve' || cmd === 'sandbox') && (rest.includes('--help') || rest.includes('-h')))) {
    process.stdout.write(helpText());
    return cmd === undefined ? 1 : 0;
  }
  if (cmd === 'version' || cmd === '--version') {
    process.stdout.write(`v${ownVersion()} (Kubernetes API ${KUBERNETES_API_LEVEL}; /version gitVersion ${versionInfo().gitVersion})\n`);
    return 0;
  }
  if (cmd === 'kubeconfig') {
    const { runKubeconfig } = await import('./kubeconfig.js');
    try {
      return runKubeconfig(rest);
    } catch (e) {
      if (e instanceof FlagError) {
        process.stderr.write(`error: ${e.message}\n`);
        return 2;
      }
      throw e;
    }
  }
  if (cmd !== 'serve' && cmd !== 'sandbox') {
    process.stderr.write(`unknown command ${JSON.stringify(cmd)}; run reverser-apiserver --help\n`);
    return 2;
  }
  let opts;
  try {
    opts = parseServeFlags(rest, cmd);
    preflightServe(opts);
  } catch (e) {
    if (e instanceof FlagError) {
      process.stderr.write(`error: ${e.message}\n`);
      return 2;
    }
    throw e;
  }
  const [{ serve }, { createLogger }] = await Promise.all([import('./serve.js'), import('../metrics/logger.js')]);
  const log = createLogger(opts.logLevel);
  const running = await serve(opts, log);
  await new Promise<void>((resolve) => {
    const stop = (sig: string) => {
      log.info('shutting down', { signal: sig });
      void running.stop().then(resolve, resolve);
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  });
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (e) => {
    process.stderr.write(`error: ${(e as Error).message}\n`);
    // Start-up refusals (locked or damaged data directory) carry their own exit code (2).
    const code = (e as { exitCode?: unknown }).exitCode;
    process.exit(typeof code === 'number' ? code : 1);
  },
);
