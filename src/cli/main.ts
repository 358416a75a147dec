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
  if (cmd === 'analyze') {
    const { runAnalyze } = await import('./analyze.js');
    return runAnalyze(rest);
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
  // Signals are caught from before start-up: Ctrl-C while the server starts (the default action
  // would kill it holding the data-dir lock) stops it as soon as it has started. One Ctrl-C under
  // `npm start` arrives twice (the terminal signals the process group, and npm forwards it to its
  // child): a repeat within a second is the same one. A later second signal exits at once (the lock
  // of a dead process is taken over by the next start, same host).
  let pending: string | undefined;
  let onSignal = (sig: string) => {
    pending = sig;
  };
  let firstSignalAt: number | undefined;
  const handler = (sig: string) => () => {
    if (firstSignalAt !== undefined) {
      if (Date.now() - firstSignalAt < 1000) return;
      log.warn('second signal: exiting without a clean stop', { signal: sig });
      process.exit(130);
    }
    firstSignalAt = Date.now();
    onSignal(sig);
  };
  process.on('SIGTERM', handler('SIGTERM'));
  process.on('SIGINT', handler('SIGINT'));
  const running = await serve(opts, log);
  await new Promise<void>((resolve) => {
    const stop = (sig: string) => {
      log.info('shutting down', { signal: sig });
      void running.stop().then(resolve, resolve);
    };
    if (pending) stop(pending);
    else onSignal = stop;
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
