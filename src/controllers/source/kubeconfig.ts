// kubeconfig Secrets (docs/configuration.md#mirroring-and-source-clusters): which key holds the kubeconfig,
// and what a kubeconfig from a Secret may not contain. A refusal is a verdict (Validated=False with
// one of the reasons below), never an exception that crashes or loops.
//
// Why these refusals: the kubeconfig comes from a tenant's Secret but is used by the server process.
// `exec` and `auth-provider` would run programs (or plug-ins) inside the server; file references
// (client-certificate, client-key, certificate-authority, tokenFile) would read the server's own
// files and send them to whatever server the kubeconfig names; `insecure-skip-tls-verify` would
// hand the credentials to anyone on the path.
import { KubeConfig } from '@kubernetes/client-node';
import { parse } from 'yaml';

export type KubeConfigRefusalReason =
  | 'KubeConfigSecretNotFound'
  | 'KubeConfigKeyNotFound'
  | 'KubeConfigInvalid'
  | 'KubeConfigExecNotAllowed'
  | 'KubeConfigInsecureTLSNotAllowed'
  | 'KubeConfigFileReferenceNotAllowed';

export interface KubeConfigRefusal {
  reason: KubeConfigRefusalReason;
  message: string;
}

export type KubeConfigVerdict = { ok: true; config: KubeConfig } | ({ ok: false } & KubeConfigRefusal);

/** The part of a Secret this module reads: `data` (base64, as the API serves it) or `stringData`. */
export interface SecretData {
  data?: Record<string, string>;
  stringData?: Record<string, string>;
}

export const DEFAULT_KUBECONFIG_KEYS = ['value', 'value.yaml'];

/**
 * The kubeconfig text in the Secret: an explicit key is the only one tried; otherwise `value`, then
 * `value.yaml` (Flux's order). An empty value counts as absent.
 */
export function kubeconfigFromSecret(secret: SecretData, secretName: string, key?: string): { text: string } | KubeConfigRefusal {
  const keys = key ? [key] : DEFAULT_KUBECONFIG_KEYS;
  for (const k of keys) {
    const b64 = secret.data?.[k];
    const text = typeof b64 === 'string' ? Buffer.from(b64, 'base64').toString('utf8') : secret.stringData?.[k];
    if (typeof text === 'string' && text.trim() !== '') return { text };
  }
  const named = key ? `"${key}"` : '"value" or "value.yaml"';
  return {
    reason: 'KubeConfigKeyNotFound',
    message: `Secret "${secretName}" has no kubeconfig under key ${named}${key ? '' : ' (set spec.source.kubeConfig.secretRef.key)'}`,
  };
}

type Obj = Record<string, unknown>;

function firstLine(e: unknown): string {
  return String((e as Error)?.message ?? e).split('\n')[0]!.slice(0, 200);
}
const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);

function namedEntries(doc: Obj, list: string, field: string): Array<{ name: string; body: Obj }> {
  const items = doc[list];
  if (items === undefined || items === null) return [];
  if (!Array.isArray(items)) throw new Error(`"${list}" must be a list`);
  return items.map((it, i) => {
    if (!isObj(it)) throw new Error(`${list}[${i}] must be a mapping`);
    const body = it[field] ?? {};
    if (!isObj(body)) throw new Error(`${list}[${i}].${field} must be a mapping`);
    return { name: typeof it.name === 'string' ? it.name : `#${i}`, body };
  });
}

const FILE_FIELDS: Array<{ list: 'clusters' | 'users'; field: string; key: string; instead: string }> = [
  { list: 'clusters', field: 'cluster', key: 'certificate-authority', instead: 'certificate-authority-data' },
  { list: 'users', field: 'user', key: 'client-certificate', instead: 'client-certificate-data' },
  { list: 'users', field: 'user', key: 'client-key', instead: 'client-key-data' },
  { list: 'users', field: 'user', key: 'tokenFile', instead: 'an inline token' },
];

/**
 * Parses and vets a kubeconfig taken from a Secret. Every cluster and user entry is checked, not
 * only the current context's: a later context switch must not slip a refused entry in.
 */
export function vetKubeconfig(text: string, secretName: string): KubeConfigVerdict {
  const where = `the kubeconfig in Secret "${secretName}"`;
  let doc: unknown;
  try {
    doc = parse(text);
  } catch (e) {
    return { ok: false, reason: 'KubeConfigInvalid', message: `${where} is not valid YAML: ${firstLine(e)}` };
  }
  if (!isObj(doc)) return { ok: false, reason: 'KubeConfigInvalid', message: `${where} is not a kubeconfig (not a mapping)` };
  let clusters: Array<{ name: string; body: Obj }>;
  let users: Array<{ name: string; body: Obj }>;
  try {
    clusters = namedEntries(doc, 'clusters', 'cluster');
    users = namedEntries(doc, 'users', 'user');
    namedEntries(doc, 'contexts', 'context');
  } catch (e) {
    return { ok: false, reason: 'KubeConfigInvalid', message: `${where} is not a kubeconfig: ${(e as Error).message}` };
  }
  for (const u of users) {
    for (const k of ['exec', 'auth-provider']) {
      if (u.body[k] !== undefined && u.body[k] !== null) {
        return { ok: false, reason: 'KubeConfigExecNotAllowed', message: `${where}: user "${u.name}" uses ${k}, which would run code in the server; use a token or a client certificate (*-data)` };
      }
    }
  }
  for (const c of clusters) {
    if (c.body['insecure-skip-tls-verify'] === true) {
      return { ok: false, reason: 'KubeConfigInsecureTLSNotAllowed', message: `${where}: cluster "${c.name}" sets insecure-skip-tls-verify; give certificate-authority-data instead` };
    }
  }
  for (const f of FILE_FIELDS) {
    for (const e of f.list === 'clusters' ? clusters : users) {
      if (e.body[f.key] !== undefined && e.body[f.key] !== null) {
        return {
          ok: false,
          reason: 'KubeConfigFileReferenceNotAllowed',
          message: `${where}: ${f.list === 'clusters' ? 'cluster' : 'user'} "${e.name}" reads a file (${f.key}) from the server's disk; use ${f.instead}`,
        };
      }
    }
  }
  const config = new KubeConfig();
  try {
    config.loadFromString(text);
  } catch (e) {
    // First line only: parser messages go on to quote the text, and the text holds credentials.
    return { ok: false, reason: 'KubeConfigInvalid', message: `${where} is not a kubeconfig: ${firstLine(e)}` };
  }
  const cluster = config.getCurrentCluster();
  if (!cluster) {
    return { ok: false, reason: 'KubeConfigInvalid', message: `${where} names no usable current-context (with a cluster)` };
  }
  if (typeof cluster.server !== 'string' || !/^https?:\/\/[^/]/.test(cluster.server)) {
    return { ok: false, reason: 'KubeConfigInvalid', message: `${where}: cluster "${cluster.name}" has no https:// or http:// server URL` };
  }
  return { ok: true, config };
}
