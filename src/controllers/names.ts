// The controllers `--controllers` can name (kept apart so flag parsing loads no controller code).
export const CONTROLLER_NAMES = ['mirror', 'windows', 'commitrequests'] as const;
export type ControllerName = (typeof CONTROLLER_NAMES)[number];

/** `--controllers`: `all` (default), `none` or empty for API-only, or a comma-separated list. */
export function parseControllers(value: string): Set<ControllerName> {
  const v = value.trim();
  if (v === 'all') return new Set(CONTROLLER_NAMES);
  if (v === '' || v === 'none') return new Set();
  const out = new Set<ControllerName>();
  for (const raw of v.split(',')) {
    const name = raw.trim();
    if (!(CONTROLLER_NAMES as readonly string[]).includes(name)) {
      throw new Error(`unknown controller ${JSON.stringify(name)}; use all, none, or a list of ${CONTROLLER_NAMES.join(', ')}`);
    }
    out.add(name as ControllerName);
  }
  // The mirror hands its changes to the commit windows of the same process.
  if (out.has('mirror') && !out.has('windows')) throw new Error('mirror needs windows in the same process; add windows to the list');
  return out;
}
