// version.Info as kube-apiserver reports it at /version.
import { readFileSync } from 'node:fs';

/** The Kubernetes API level served (list/watch semantics, WatchList, discovery): kube 1.33. */
export const KUBERNETES_API_LEVEL = '1.33';

let cached: Record<string, string> | undefined;

/** The server's own version (package.json), e.g. "0.1.0". */
export function ownVersion(): string {
  return versionInfo().gitVersion.replace(/^.*\+reverser-apiserver-v/, '');
}

export function versionInfo(): Record<string, string> {
  if (cached) return cached;
  let version = '0.0.0';
  // package.json is three levels up from dist/src/cli/, two from the bundle (dist/bundle/,
  // scripts/bundle.mjs); ours is the one that names this package.
  for (const rel of ['../../../package.json', '../../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(rel, import.meta.url), 'utf8'));
      if (pkg.name !== 'reverser-apiserver') continue;
      version = pkg.version;
      break;
    } catch {
      /* not there: try the next layout, else keep the placeholder */
    }
  }
  // /version describes the Kubernetes API the server implements, as kube-apiserver's does: kubectl
  // compares its own minor with `minor` and warns about skew beyond one. The server's own version
  // goes into gitVersion's semver build metadata, as kcp does (v1.31.0+kcp-v0.26.0).
  const [major, minor] = KUBERNETES_API_LEVEL.split('.') as [string, string];
  cached = {
    major,
    minor,
    gitVersion: `v${KUBERNETES_API_LEVEL}.0+reverser-apiserver-v${version}`,
    gitCommit: process.env.REVERSER_GIT_COMMIT ?? 'unknown',
    gitTreeState: 'clean',
    buildDate: process.env.REVERSER_BUILD_DATE ?? '1970-01-01T00:00:00Z',
    goVersion: `node${process.versions.node}`,
    compiler: 'tsc',
    platform: `${process.platform}/${process.arch === 'x64' ? 'amd64' : process.arch}`,
  };
  return cached;
}
