// Flags of APIService self-registration. The CLI appends them to serve's flags and passes the
// parsed values on; nothing here talks to a cluster.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

export interface RegistrationFlagDef {
  name: string;
  description: string;
  default?: string;
}

export const DEFAULT_SERVICE_NAME = 'reverser-apiserver';
export const DEFAULT_SERVICE_NAMESPACE = 'reverser-system';
/** Where a Pod finds its own namespace (the Service is assumed to live beside the Pod). */
const POD_NAMESPACE_FILE = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';

/**
 * The re-check's default period. Each one is a discovery GET to the hosting cluster (and a GET of
 * the APIService when the API is served), usually over a new TLS connection (API servers close an
 * idle one within seconds): every 30 s that was the costliest thing a server at rest did
 * (docs/architecture.md "At rest and at start-up"). The CA bundle changing is published at once
 * (server/registration.ts follows --apiservice-ca-file), so the period only bounds how long a
 * removed APIService or grant, or an API that appears later, waits.
 */
export const DEFAULT_DISCOVERY_REFRESH = '5m';

export const REGISTRATION_FLAGS: RegistrationFlagDef[] = [
  { name: 'register-apiservice', description: 'true: create/update the APIService v1alpha1.configbutler.ai in the hosting cluster and keep its caBundle current (default true when a hosting cluster is configured).' },
  { name: 'apiservice-service-name', description: 'Service the APIService points at.', default: DEFAULT_SERVICE_NAME },
  { name: 'apiservice-service-namespace', description: `Namespace of that Service (default: the Pod's namespace in a cluster, else ${DEFAULT_SERVICE_NAMESPACE}).` },
  { name: 'apiservice-service-port', description: 'Port of that Service.', default: '443' },
  { name: 'apiservice-group-priority-minimum', description: 'spec.groupPriorityMinimum of the APIService.', default: '1000' },
  { name: 'apiservice-version-priority', description: 'spec.versionPriority of the APIService.', default: '15' },
  { name: 'apiservice-ca-file', description: 'PEM CA bundle published as the APIService caBundle (default: ca.crt beside --tls-cert-file, else the generated CA, else the serving certificate itself); re-read when it changes.' },
  { name: 'discovery-refresh-interval', description: 'How often the hosting cluster\'s discovery is re-checked for apiregistration.k8s.io and the APIService kept current (a changed --apiservice-ca-file is published at once).', default: DEFAULT_DISCOVERY_REFRESH },
];

export interface RegistrationOptions {
  enabled: boolean;
  service: { name: string; namespace: string; port: number };
  groupPriorityMinimum: number;
  versionPriority: number;
  /** Explicit --apiservice-ca-file; serve() fills in the default it can only know after TLS setup. */
  caFile?: string;
  refreshMs: number;
}

export class RegistrationFlagError extends Error {}

function intFlag(values: Record<string, string | undefined>, name: string, min: number, max: number): number {
  const v = values[name] ?? '';
  if (!/^\d+$/.test(v) || Number(v) < min || Number(v) > max) {
    throw new RegistrationFlagError(`--${name}: must be an integer between ${min} and ${max}, got ${JSON.stringify(v)}`);
  }
  return Number(v);
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/**
 * `values` holds every flag (defaults filled in); `hostingConfigured` says whether --kubeconfig or an
 * in-cluster config exists. `parseDurationMs` is the CLI's Go-style duration parser.
 */
export function parseRegistrationFlags(
  values: Record<string, string | undefined>,
  hostingConfigured: boolean,
  parseDurationMs: (t: string) => number | undefined,
): RegistrationOptions {
  const reg = values['register-apiservice'];
  if (reg !== undefined && reg !== '' && reg !== 'true' && reg !== 'false') {
    throw new RegistrationFlagError(`--register-apiservice: expected true or false, got ${JSON.stringify(reg)}`);
  }
  const enabled = reg === undefined || reg === '' ? hostingConfigured : reg === 'true';
  if (enabled && !hostingConfigured) {
    throw new RegistrationFlagError('--register-apiservice: needs a hosting cluster: set --kubeconfig, or run in a cluster');
  }
  const name = values['apiservice-service-name'] ?? DEFAULT_SERVICE_NAME;
  const namespace = values['apiservice-service-namespace'] || podNamespace() || DEFAULT_SERVICE_NAMESPACE;
  for (const [flag, v] of [['apiservice-service-name', name], ['apiservice-service-namespace', namespace]] as const) {
    if (v.length > 63 || !DNS_LABEL.test(v)) throw new RegistrationFlagError(`--${flag}: must be a DNS label (lower-case letters, digits, "-"), got ${JSON.stringify(v)}`);
  }
  const refreshText = values['discovery-refresh-interval'] ?? DEFAULT_DISCOVERY_REFRESH;
  const refreshMs = parseDurationMs(refreshText);
  if (refreshMs === undefined || refreshMs < 1000 || refreshMs > 24 * 3600_000) {
    throw new RegistrationFlagError(`--discovery-refresh-interval: must be a duration between 1s and 24h, got ${JSON.stringify(refreshText)}`);
  }
  const caFile = values['apiservice-ca-file'] || undefined;
  if (caFile && !existsSync(caFile)) throw new RegistrationFlagError(`--apiservice-ca-file: ${caFile} does not exist`);
  return {
    enabled,
    service: { name, namespace, port: intFlag(values, 'apiservice-service-port', 1, 65535) },
    groupPriorityMinimum: intFlag(values, 'apiservice-group-priority-minimum', 1, 20000),
    versionPriority: intFlag(values, 'apiservice-version-priority', 1, 1000),
    caFile,
    refreshMs,
  };
}

function podNamespace(): string | undefined {
  if (!process.env.KUBERNETES_SERVICE_HOST) return undefined;
  try {
    return readFileSync(POD_NAMESPACE_FILE, 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
}

/** cert-manager and `kubectl create secret tls` with a CA put ca.crt beside tls.crt. */
export function caFileBesideCert(certFile: string): string | undefined {
  const p = join(dirname(certFile), 'ca.crt');
  return existsSync(p) ? p : undefined;
}
