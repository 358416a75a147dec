// version.Info as kube-apiserver reports it at /version.
import { readFileSync } from 'node:fs';

let cached: Record<string, string> | undefined;

export function versionInfo(): Record<string, string> {
  if (cached) return cached;
  let version = '0.0.0';
  try {
    version = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')).version;
  } catch {
    /* running from an unusual layout: keep the placeholder */
  }
  const [major = '0', minor = '0'] = version.split('.');
  cached = {
    major,
    minor,
    gitVersion: `v${version}`,
    gitCommit: process.env.REVERSER_GIT_COMMIT ?? 'unknown',
    gitTreeState: 'clean',
    buildDate: process.env.REVERSER_BUILD_DATE ?? '1970-01-01T00:00:00Z',
    goVersion: `node${process.versions.node}`,
    compiler: 'tsc',
    platform: `${process.platform}/${process.arch === 'x64' ? 'amd64' : process.arch}`,
  };
  return cached;
}
