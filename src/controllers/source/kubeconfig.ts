// kubeconfig Secrets (docs/configuration.md#mirroring-and-source-clusters): which key holds the kubeconfig,
// and what a kubeconfig from a Secret may not contain. A refusal is a verdict (Validated=False with
// one of the reasons below), never an exception that crashes or loops.
//
// Why these refusals: the kubeconfig comes from a tenant's Secret but is used by the server process.
// `exec` and `auth-provider` would run programs (or plug-ins) inside the server; file references
// would read the server's own files and send them to whatever server the kubeconfig names;
// `insecure-skip-tls-verify` or an http:// server would hand the credentials to anyone on the path;
// a link-local server is the cloud metadata service. The allowlist is in kubeconfig-allowlist.ts;
// the client is built from its result with loadFromOptions, never from the Secret's text.
import { KubeConfig } from '../../kubeconfig/kubeconfig.js';
import { EgressPolicy, builtinEgressRefusal } from '../../net/egress.js';
import { allowlistKubeconfig, type AllowlistRefusalReason } from './kubeconfig-allowlist.js';

export type KubeConfigRefusalReason =
  | AllowlistRefusalReason
  | 'KubeConfigSecretNotFound'
  | 'KubeConfigKeyNotFound'
  | 'KubeConfigInsecureCredentials'
  | 'KubeConfigEgressDenied';

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

export interface VetOptions {
  /** --allow-insecure-credentials: a token may go to an http:// server (development only). */
  allowInsecureCredentials?: boolean;
  /** The operator's egress rules (--egress-*), applied on every connection; default: the built-in link-local rule. */
  egress?: EgressPolicy;
}

const BUILTIN_EGRESS = new EgressPolicy();

/**
 * A KubeConfig whose every connection obeys an egress policy: the server's literal address is
 * checked before each request, and a name is checked on each address it resolves to when a
 * connection is made (the shared transport connects with `egress.lookup`, transport.ts; an agent
 * passed to applyToHTTPSOptions gets it too). Its presence also keeps a tenant's connections apart
 * from the operator's (transportKey).
 */
export class EgressKubeConfig extends KubeConfig {
  constructor(readonly egress: EgressPolicy) {
    super();
  }

  override async applyToHTTPSOptions(opts: Parameters<KubeConfig['applyToHTTPSOptions']>[0]): Promise<void> {
    const server = this.getCurrentCluster()?.server;
    if (server) this.egress.assertHost(new URL(server).hostname);
    await super.applyToHTTPSOptions(opts);
    // node's Agent merges its `options` into every connection it creates (lib/_http_agent.js createSocket).
    const agent = (opts as { agent?: { options?: Record<string, unknown> } }).agent;
    if (agent?.options) agent.options.lookup = this.egress.lookup;
  }
}

/**
 * Parses, allowlists and builds the client configuration of a kubeconfig taken from a Secret. The
 * returned KubeConfig holds only what the allowlist let through (loadFromOptions), so nothing the
 * text says beyond it (a merge key, an exec plugin, a file path) can reach the client.
 */
export function vetKubeconfig(text: string, secretName: string, opts: VetOptions = {}): KubeConfigVerdict {
  const where = `the kubeconfig in Secret "${secretName}"`;
  const checked = allowlistKubeconfig(text);
  if (!checked.ok) return { ok: false, reason: checked.reason, message: `${where}${/^(is|uses|nests|has|cannot) /.test(checked.message) ? ' ' : ': '}${checked.message}` };
  const kc = checked.kubeconfig;
  const ctx = kc.contexts.find((c) => c.name === kc.currentContext)!;
  const cluster = kc.clusters.find((c) => c.name === ctx.cluster)!;
  const user = kc.users.find((u) => u.name === ctx.user)!;
  let url: URL;
  try {
    url = new URL(cluster.server);
  } catch {
    url = new URL('invalid:');
  }
  if ((url.protocol !== 'https:' && url.protocol !== 'http:') || !url.hostname || url.username || url.password || url.search || url.hash) {
    return { ok: false, reason: 'KubeConfigInvalid', message: `${where}: cluster "${cluster.name}" needs an https:// server URL without credentials, query or fragment` };
  }
  if (url.protocol === 'http:' && user.token && !opts.allowInsecureCredentials) {
    return {
      ok: false,
      reason: 'KubeConfigInsecureCredentials',
      message: `${where}: cluster "${cluster.name}" is plain http://, which would send user "${user.name}"'s token in cleartext; use https:// (the server's --allow-insecure-credentials is for development only)`,
    };
  }
  for (const c of kc.clusters) {
    let host = '';
    try {
      host = new URL(c.server).hostname;
    } catch {
      // Checked for the current context above; other entries are never connected to.
    }
    const why = host && builtinEgressRefusal(host);
    if (why) return { ok: false, reason: 'KubeConfigEgressDenied', message: `${where}: cluster "${c.name}" server ${why}` };
  }
  const config = new EgressKubeConfig(opts.egress ?? BUILTIN_EGRESS);
  config.loadFromOptions({
    clusters: kc.clusters.map((c) => ({ name: c.name, server: c.server, caData: c.caData, tlsServerName: c.tlsServerName, skipTLSVerify: false })),
    users: kc.users.map((u) => ({ name: u.name, token: u.token, certData: u.certData, keyData: u.keyData })),
    contexts: kc.contexts.map((c) => ({ name: c.name, cluster: c.cluster, user: c.user, namespace: c.namespace })),
    currentContext: kc.currentContext,
  });
  return { ok: true, config };
}
