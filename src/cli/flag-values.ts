// Values of `serve`'s flags as kube's flags (pflag) take them: booleans, bounded integers, and the
// Redis password that may come from a file or the environment. Every error is a FlagError naming
// the flag (src/cli/main.ts prints it and exits 2).
import { readFileSync } from 'node:fs';

export class FlagError extends Error {}

export function int(values: Record<string, string | undefined>, name: string, min: number, max: number): number {
  const v = values[name]!;
  if (!/^\d+$/.test(v) || Number(v) < min || Number(v) > max) throw new FlagError(`--${name}: must be an integer between ${min} and ${max}, got ${JSON.stringify(v)}`);
  return Number(v);
}

/**
 * Boolean flags: like kube's (pflag), `--flag` alone means true, and `--flag=<v>` takes what Go's
 * strconv.ParseBool takes (1, t, T, TRUE, true, True; 0, f, F, FALSE, false, False).
 */
export const BOOLEAN_FLAGS: ReadonlySet<string> = new Set([
  'sandbox', 'register-apiservice', 'authentication-skip-lookup', 'authentication-tolerate-lookup-failure', 'rbac-bootstrap-roles',
  'allow-insecure-credentials', 'allow-file-repositories',
]);
const PARSE_BOOL: Record<string, string> = Object.fromEntries([
  ...['1', 't', 'T', 'TRUE', 'true', 'True'].map((v) => [v, 'true']),
  ...['0', 'f', 'F', 'FALSE', 'false', 'False'].map((v) => [v, 'false']),
]);

/** `--flag` → `--flag=true`, `--flag=T` → `--flag=true` for BOOLEAN_FLAGS; other arguments as given. */
export function normalizeBooleanFlags(argv: string[]): string[] {
  return argv.map((a) => {
    const m = /^--([^=]+)(?:=(.*))?$/s.exec(a);
    if (!m || !BOOLEAN_FLAGS.has(m[1]!)) return a;
    if (m[2] === undefined) return `--${m[1]}=true`;
    const v = PARSE_BOOL[m[2]];
    return v ? `--${m[1]}=${v}` : a;
  });
}

export function bool(name: string, v: string): boolean {
  if (v === 'true') return true;
  if (v === 'false') return false;
  throw new FlagError(`--${name}: must be true or false, got ${JSON.stringify(v)}`);
}

/**
 * The Redis password from a file (--redis-password-file) or REDIS_PASSWORD, so it can come from a
 * Secret instead of the Deployment's args. Errors name the flag or variable, never the content.
 */
export function readRedisPassword(file: string | undefined, redisUrl: string): string | undefined {
  let password: string | undefined;
  let from: string;
  if (file) {
    from = '--redis-password-file';
    try {
      password = readFileSync(file, 'utf8').replace(/\r?\n$/, '');
    } catch (e) {
      throw new FlagError(`--redis-password-file: cannot read ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
    }
  } else {
    from = 'REDIS_PASSWORD';
    password = process.env.REDIS_PASSWORD || undefined;
  }
  if (password === undefined) return undefined;
  if (password === '' || /[\r\n]/.test(password)) throw new FlagError(`${from}: the password must be one non-empty line`);
  let inUrl = false;
  try {
    inUrl = new URL(redisUrl).password !== '';
  } catch {
    // --redis-url is checked on its own
  }
  if (inUrl) throw new FlagError(`${from}: --redis-url carries a password too; give it in one place only`);
  return password;
}
