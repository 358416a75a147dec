#!/usr/bin/env node
// Entry point of the `reverser-apiserver` binary.
// Only what every command needs is imported here; `serve` loads the server when it runs, so
// `version` and `--help` start in a fraction of the time and never load the git engine.
import { FlagError, helpText, parseServeFlags } from './options.js';
import { preflightServe } from './preflight.js';
import { KUBERNETES_API_LEVEL, ownVersion, versionInfo } from './version.js';

/** The longest a SIGTERM or SIGINT shutdown may take (docs/configuration.md, "Shutdown"). */
const SHUTDOWN_BOUND_MS = 10_000;

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
  // Handlers before the server starts: a signal during start-up (the kubectl line is printed
  // before serve() returns) waits for it and then shuts down, instead of killing the process with
  // the data directory's lock still held.
  let early: string | undefined;
  let onSignal: (sig: string) => void = (sig) => {
    early ??= sig;
  };
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  process.on('SIGINT', () => onSignal('SIGINT'));
  const running = await serve(opts, log);
  return new Promise<number>((resolve) => {
    let stopping = false;
    const stop = (sig: string) => {
      // Any number of signals make one shutdown (one Ctrl-C under `npm start` arrives twice: from
      // the terminal to the process group, and forwarded by npm); running.stop() is idempotent too.
      if (stopping) return;
      stopping = true;
      log.info('shutting down', { signal: sig });
      // Shutdown abandons remote work (serve.ts), so it ends well within a Pod's default grace
      // (30 s); should anything still hang, the process exits at the bound rather than be killed.
      const bound = setTimeout(() => {
        log.warn('shutdown did not finish in time; exiting', { boundMs: SHUTDOWN_BOUND_MS });
        resolve(1);
      }, SHUTDOWN_BOUND_MS);
      bound.unref();
      void running.stop().then(
        () => resolve(0),
        (e: Error) => {
          log.warn('shutdown failed', { error: e?.message ?? String(e) });
          resolve(1);
        },
      );
    };
    onSignal = stop;
    if (early) stop(early);
  });
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
