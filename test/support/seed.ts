// Seeds for randomized tests: a fixed default so every run (and every CI run) sends the same
// inputs, printed by the test, and overridable by an environment variable to explore or to
// reproduce another run.

/** The seed randomized tests use when none is given. */
export const DEFAULT_SEED = 20_240_601;

/** The seed from `env[name]` (a non-negative integer below 2^32), else DEFAULT_SEED. */
export function seedFrom(name: string, env: NodeJS.ProcessEnv = process.env): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return DEFAULT_SEED;
  const n = Number(raw);
  if (!/^\d+$/.test(raw.trim()) || !Number.isSafeInteger(n) || n >= 2 ** 32) {
    throw new Error(`${name} must be an integer from 0 to ${2 ** 32 - 1}, got ${JSON.stringify(raw)}`);
  }
  return n;
}
