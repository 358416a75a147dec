// The server as the container image runs it, read from the Dockerfile: its entry (ENTRYPOINT's
// main.js: the bundle scripts/bundle.mjs writes), its node flags (ENTRYPOINT's arguments before
// the entry) and its environment (the `ENV K=V` lines). Benches that compare the server with
// another system measure it as shipped (bench/peer, bench/scale's start-up part); each can be
// overridden for an experiment:
// - BENCH_SERVER_MAIN: another entry (e.g. dist/src/cli/main.js, the unbundled tsc output);
// - BENCH_SERVER_NODE_ARGS: other node flags ('' for node's defaults);
// - BENCH_SERVER_IMAGE_ENV=off: node's and glibc's default environment.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from './results.js';

const dockerfile = () => readFileSync(join(REPO_ROOT, 'Dockerfile'), 'utf8');

/** The ENTRYPOINT's argv (JSON form), or [] when the Dockerfile has none. */
function entrypoint(): string[] {
  const entry = /^ENTRYPOINT (\[.*\])$/m.exec(dockerfile())?.[1];
  return entry ? (JSON.parse(entry) as string[]) : [];
}

/** The server's entry as the image runs it, or `fallback` when the Dockerfile names none. */
export function imageMain(fallback: string): string {
  if (process.env.BENCH_SERVER_MAIN) return process.env.BENCH_SERVER_MAIN;
  const main = entrypoint().find((a) => a.endsWith('main.js'));
  return main ? join(REPO_ROOT, main) : fallback;
}

/** The server's node flags as the image passes them. */
export function imageNodeArgs(): string[] {
  if (process.env.BENCH_SERVER_NODE_ARGS !== undefined) return process.env.BENCH_SERVER_NODE_ARGS.split(' ').filter(Boolean);
  const argv = entrypoint();
  return argv.slice(1, argv.findIndex((a) => a.endsWith('main.js')));
}

/** The image's `ENV K=V` lines. */
export function imageEnv(): Record<string, string> {
  if (process.env.BENCH_SERVER_IMAGE_ENV === 'off') return {};
  return Object.fromEntries([...dockerfile().matchAll(/^ENV (\w+)=(\S+)$/gm)].map((m) => [m[1]!, m[2]!]));
}
