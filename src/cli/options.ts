// Flags of `reverser-apiserver serve`: parsing and validation. Names follow k8s.io/apiserver so
// operators recognise them. Unknown or invalid flags fail with a message naming the flag.
import { parseArgs } from 'node:util';
import { resolve } from 'node:path';
import { AUTH_FLAGS, AuthFlagError, parseAuthFlags, type AuthnOptions, type AuthzOptions } from '../auth/index.js';
import { validateKeyPrefix, DEFAULT_KEY_PREFIX, DEFAULT_EVENT_LOG_RETENTION } from '../storage/index.js';
import { LOG_LEVELS, type LogLevel } from '../metrics/logger.js';
// Not '../git/index.js': that loads the engine (isomorphic-git), which only serve needs, on first use.
import { DEFAULT_COMMITTER_EMAIL, DEFAULT_COMMITTER_NAME } from '../git/committer.js';
import { DEFAULT_MAX_RESPONSE_BYTES } from '../git/remote-limits.js';
import { MAX_DEFAULT_GIT_WORKERS, defaultGitWorkers } from '../git/worker-pool-size.js';
import { CONTROLLER_NAMES, parseControllers, type ControllerName } from '../controllers/names.js';
import { REGISTRATION_FLAGS, RegistrationFlagError, parseRegistrationFlags, type RegistrationOptions } from '../registration/index.js';
import { parseDuration } from '../auth/index.js';
// The constants only: the listener (fastify) loads when serve starts it.
import { DEFAULT_AUDIT_MAX_REQUEST_BYTES, DEFAULT_AUDIT_PORT } from '../attribution/limits.js';
import { DEFAULT_GITTARGET_QUOTAS, type GitTargetQuotas } from '../registry/quota.js';
import { REPLICA_FLAGS, ReplicaFlagError, parseReplicaFlags, type ReplicaOptions } from '../controllers/runtime/replica-flags.js';
import { DEFAULT_PERSON_TRAILERS, parsePersonTrailers } from '../registry/commit-message-policy.js';
import { TENANT_INPUT_FLAGS, TenantInputFlagError, parseTenantInputFlags, type TenantInputOptions } from '../net/flags.js';
import type { AuditOptions, ServeMode, ServeOptions } from '../server/options.js';
import { BOOLEAN_FLAGS, FlagError, bool, int, normalizeBooleanFlags, readRedisPassword } from './flag-values.js';

export type { AuditOptions, ServeMode, ServeOptions } from '../server/options.js';
export { BOOLEAN_FLAGS, FlagError } from './flag-values.js';

interface Flag {
  name: string;
  description: string;
  default?: string;
}

const SERVE_FLAGS: Flag[] = [
  { name: 'secure-port', description: 'HTTPS port.', default: '8443' },
  { name: 'bind-address', description: 'Address to listen on (the deployment manifests set 0.0.0.0).', default: '127.0.0.1' },
  { name: 'data-dir', description: 'Directory for the embedded store, generated certificates, kubeconfigs and local repositories.', default: './.reverser' },
  { name: 'cert-dir', description: 'Directory for generated certificates (default <data-dir>/certs).' },
  { name: 'tls-cert-file', description: 'Serving certificate (PEM). Generated under --cert-dir when absent.' },
  { name: 'tls-private-key-file', description: 'Private key of --tls-cert-file (PEM).' },
  { name: 'storage', description: 'Storage backend: embedded (in memory, persisted under --data-dir) or redis.', default: 'embedded' },
  { name: 'redis-url', description: 'Redis URL (redis:// or rediss://) for --storage=redis.', default: 'redis://127.0.0.1:6379' },
  {
    name: 'redis-password-file',
    description:
      'File holding the Redis password (e.g. a mounted Secret key; one trailing newline is ignored). Without it the environment variable REDIS_PASSWORD is used when set. Not both with a password in --redis-url.',
  },
  { name: 'redis-key-prefix', description: 'Prefix of every Redis key: 1..128 characters of [A-Za-z0-9._:-], trailing ":" trimmed.', default: DEFAULT_KEY_PREFIX },
  { name: 'event-log-retention', description: 'Events kept per resource for watch resumption; older resourceVersions get 410 Expired.', default: String(DEFAULT_EVENT_LOG_RETENTION) },
  { name: 'kubeconfig', description: 'kubeconfig of the hosting cluster (TokenReview, SubjectAccessReview, APIService); in-cluster config in a Pod.' },
  { name: 'max-request-bytes', description: 'Largest request body in bytes; a patch may not make an object larger either (413 RequestEntityTooLarge).', default: '3145728' },
  { name: 'max-gittargets-per-namespace', description: 'GitTargets one namespace may hold; a create beyond answers 403 "exceeded quota" (0: unlimited).', default: String(DEFAULT_GITTARGET_QUOTAS.perNamespace) },
  { name: 'max-gittargets-per-cluster', description: 'GitTargets one logical cluster (kcp workspace) may hold (0: unlimited).', default: String(DEFAULT_GITTARGET_QUOTAS.perCluster) },
  { name: 'max-streams-per-gittarget', description: 'Source list+watch streams one GitTarget may open: one per spec.resources entry, or per namespace listed in it (0: unlimited).', default: String(DEFAULT_GITTARGET_QUOTAS.streamsPerGitTarget) },
  { name: 'max-streams-per-namespace', description: "Source streams of all of one namespace's GitTargets together (0: unlimited).", default: String(DEFAULT_GITTARGET_QUOTAS.streamsPerNamespace) },
  { name: 'idle-connection-timeout', description: 'Seconds after which an HTTP/2 connection without open streams, or an HTTP/1.1 connection without a request in progress, is closed; also the time a request body has to arrive.', default: '90' },
  { name: 'tls-handshake-timeout', description: 'Seconds a client has to complete the TLS handshake.', default: '10' },
  { name: 'max-tls-handshakes-per-address', description: 'TLS handshakes in progress at once per client address; further connections from it wait their turn (closed if still waiting after --tls-handshake-timeout). 0: no bound.', default: '16' },
  { name: 'max-tls-handshakes', description: 'TLS handshakes in progress at once over all client addresses; further connections wait their turn, addresses taking turns (closed if still waiting after --tls-handshake-timeout). 0: no bound.', default: '64' },
  { name: 'http2-max-streams-per-connection', description: 'Concurrent streams an HTTP/2 client may open on one connection (SETTINGS_MAX_CONCURRENT_STREAMS).', default: '1000' },
  { name: 'min-request-timeout', description: 'Seconds a watch lasts at least when the client sets no timeoutSeconds (randomised up to twice that).', default: '1800' },
  { name: 'watch-bookmark-interval', description: 'How often a watch with allowWatchBookmarks that was sent nothing gets a BOOKMARK while the resourceVersion moves (Go duration; kube-apiserver sends one about every minute), and once more when the watch times out.', default: '1m' },
  { name: 'committer-name', description: 'Committer name of every commit the server makes (authors are the people).', default: DEFAULT_COMMITTER_NAME },
  { name: 'committer-email', description: 'Committer email of every commit the server makes.', default: DEFAULT_COMMITTER_EMAIL },
  { name: 'person-trailers', description: `Comma-separated trailer keys that name a person, besides ${DEFAULT_PERSON_TRAILERS.join(', ')}: a CommitRequest message naming someone else in one needs assert-author.` },
  {
    name: 'git-max-response-bytes',
    description: 'Largest body of one HTTP response from a git remote; a remote sending more is stopped and its GitTarget shows RepositoryReady=False (RemoteResponseTooLarge).',
    default: String(DEFAULT_MAX_RESPONSE_BYTES),
  },
  {
    name: 'git-workers',
    description: `Git engine worker threads: each repository commits on one of them, different repositories in parallel (default: the CPUs available to the process, at most ${MAX_DEFAULT_GIT_WORKERS}).`,
  },
  { name: 'controllers', description: `Controllers to run in this process: all, none (API only), or a comma-separated list of ${CONTROLLER_NAMES.join(', ')}.`, default: 'all' },
  {
    name: 'audit-client-ca-file',
    description:
      'CA bundle (PEM) for the audit listener: when given, a second HTTPS listener takes kube-apiserver audit EventLists (POST /audit-webhook[/<route>]) from clients whose certificate chains to this CA, and refuses all others at the TLS handshake.',
  },
  { name: 'audit-bind-address', description: 'Address of the audit listener (default: --bind-address).' },
  { name: 'audit-port', description: 'Port of the audit listener; 0 picks a free port (printed on stdout and logged).', default: String(DEFAULT_AUDIT_PORT) },
  { name: 'audit-max-request-bytes', description: 'Largest EventList body the audit listener accepts (413 beyond).', default: String(DEFAULT_AUDIT_MAX_REQUEST_BYTES) },
  { name: 'audit-fact-ttl', description: 'How long an attribution fact from the audit log is kept (e.g. 10m, 1h30m).', default: '10m' },
  {
    name: 'authority-reverify-interval',
    description:
      "How often every GitTarget's recorded authority (status.authority) is re-verified with the authorizer, in one batched pass (Go duration). A revoked grant stops its mirror at the next pass; a grant that could not be confirmed for two intervals stops it too.",
    default: '5m',
  },
  {
    name: 'schema-compile-delay',
    description:
      "How long after start-up the schemas of the server's own resources are compiled, outside any request (Go duration); 0s: each at its first write, as the other resources' are.",
    default: '1s',
  },
  {
    name: 'attribution-grace',
    description:
      "How long a mirrored change waits for the audit fact naming its author before it is committed as \"unknown (attribution unresolved)\" (Go duration). Must exceed kube-apiserver's --audit-webhook-batch-max-wait.",
    default: '3s',
  },
  {
    name: 'attribution-no-facts-grace',
    description: 'How long edits may be mirrored on an audit route without any fact arriving before the GitTarget condition AuditAttribution turns False (Go duration).',
    default: '60s',
  },
  { name: 'log-level', description: `Log level: ${LOG_LEVELS.join(', ')}.`, default: 'info' },
  {
    name: 'sandbox',
    description:
      'Also serve a small Kubernetes core (v1 namespaces, configmaps, secrets, serviceaccounts; apps/v1 deployments) as a stand-in source cluster. `--sandbox` alone means true.',
    default: 'false',
  },
];

export function allServeFlags(): Flag[] {
  return [
    ...SERVE_FLAGS,
    ...AUTH_FLAGS.map((f) => ({ name: f.name, description: f.description, default: f.default })),
    ...REGISTRATION_FLAGS,
    ...TENANT_INPUT_FLAGS,
    ...REPLICA_FLAGS,
  ];
}

export function helpText(): string {
  const lines = [
    'reverser-apiserver: a Kubernetes aggregated API server (configbutler.ai/v1alpha1) that turns API edits into attributed Git commits.',
    '',
    'Usage:',
    '  reverser-apiserver serve [flags]   run the API server',
    '  reverser-apiserver sandbox [flags] run only the sandbox (a small Kubernetes core) and write <data-dir>/sandbox.kubeconfig;',
    '                                     same flags as serve (--authorization-mode defaults to AlwaysAllow)',
    '  reverser-apiserver analyze <repo>  may these folders become GitTargets, and if not, why (analyze --help)',
    '  reverser-apiserver kubeconfig --user NAME [--group G]... [-o FILE]',
    '                                     write a kubeconfig for a user, signed by the dev CA (kubeconfig --help)',
    '  reverser-apiserver version         print the version',
    '  reverser-apiserver --help          this text',
    '',
    'Flags of serve (a boolean flag alone means true, as --flag=true):',
  ];
  for (const f of allServeFlags()) {
    lines.push(`  --${f.name}${BOOLEAN_FLAGS.has(f.name) ? '[=true|false]' : ''}${f.default !== undefined && f.default !== '' ? ` (default ${JSON.stringify(f.default)})` : ''}`);
    lines.push(`      ${f.description}`);
  }
  return `${lines.join('\n')}\n`;
}

export function parseServeFlags(argv: string[], mode: ServeMode = 'serve'): ServeOptions {
  const flags = allServeFlags();
  if (mode === 'sandbox') {
    // A standalone sandbox has no hosting cluster to ask: its clients are the admin of its kubeconfig.
    const authz = flags.find((f) => f.name === 'authorization-mode');
    if (authz) authz.default = 'AlwaysAllow';
  }
  argv = normalizeBooleanFlags(argv);
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({
      args: argv,
      options: Object.fromEntries(flags.map((f) => [f.name, { type: 'string' as const }])),
      strict: true,
      allowPositionals: false,
    });
  } catch (e) {
    const msg = (e as Error).message;
    const m = /'(--?[^' ]+)'/.exec(msg);
    throw new FlagError(m ? `unknown or malformed flag ${m[1]}: run reverser-apiserver --help for the list` : msg);
  }
  const values: Record<string, string | undefined> = {};
  for (const f of flags) values[f.name] = (parsed.values[f.name] as string | undefined) ?? f.default;
  const explicit = (n: string) => parsed.values[n] !== undefined;

  const storage = values['storage'];
  if (storage !== 'embedded' && storage !== 'redis') throw new FlagError(`--storage: must be embedded or redis, got ${JSON.stringify(storage)}`);
  const logLevel = values['log-level'] as LogLevel;
  if (!LOG_LEVELS.includes(logLevel)) throw new FlagError(`--log-level: must be one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(logLevel)}`);
  let redisKeyPrefix: string;
  try {
    redisKeyPrefix = validateKeyPrefix(values['redis-key-prefix']!);
  } catch (e) {
    throw new FlagError(`--redis-key-prefix: ${(e as Error).message}`);
  }
  const redisUrl = values['redis-url']!;
  if (!/^rediss?:\/\//.test(redisUrl)) throw new FlagError(`--redis-url: must start with redis:// or rediss://, got ${JSON.stringify(redisUrl)}`);
  const redisPassword = readRedisPassword(values['redis-password-file'], redisUrl);
  if (explicit('tls-cert-file') !== explicit('tls-private-key-file')) {
    throw new FlagError('--tls-cert-file and --tls-private-key-file must be given together');
  }
  const dataDir = resolve(values['data-dir']!);
  const committer = { name: values['committer-name']!.trim(), email: values['committer-email']!.trim() };
  if (committer.name === '' || /[<>\n\r\x00]/.test(committer.name)) {
    throw new FlagError('--committer-name: must be non-empty without "<", ">" or line breaks');
  }
  if (!/^[^\s@<>]+@[^\s@<>]+$/.test(committer.email)) throw new FlagError(`--committer-email: must be an email address, got ${JSON.stringify(committer.email)}`);
  const personTrailers = parsePersonTrailers(values['person-trailers'], (m) => new FlagError(`--person-trailers: ${m}`));
  const securePort = int(values, 'secure-port', 1, 65535);
  const eventLogRetention = int(values, 'event-log-retention', 1, 10_000_000);
  const minRequestTimeoutSeconds = int(values, 'min-request-timeout', 1, 86400);
  let controllers: Set<ControllerName>;
  try {
    controllers = parseControllers(values['controllers']!);
  } catch (e) {
    throw new FlagError(`--controllers: ${(e as Error).message}`);
  }
  const maxRequestBytes = int(values, 'max-request-bytes', 1024, 1024 * 1024 * 1024);
  const quotas: GitTargetQuotas = {
    perNamespace: int(values, 'max-gittargets-per-namespace', 0, 1_000_000),
    perCluster: int(values, 'max-gittargets-per-cluster', 0, 10_000_000),
    streamsPerGitTarget: int(values, 'max-streams-per-gittarget', 0, 1_000_000),
    streamsPerNamespace: int(values, 'max-streams-per-namespace', 0, 10_000_000),
  };
  const git = {
    maxResponseBytes: int(values, 'git-max-response-bytes', 65536, 16 * 1024 * 1024 * 1024),
    workers: values['git-workers'] === undefined ? defaultGitWorkers() : int(values, 'git-workers', 1, 64),
  };
  const duration = (name: string, min: number, max: number): number => {
    const ms = parseDuration(values[name]!);
    if (ms === undefined || ms < min || ms > max) throw new FlagError(`--${name}: must be a duration between ${min / 1000}s and ${max / 1000}s (e.g. 3s, 1500ms), got ${JSON.stringify(values[name])}`);
    return ms;
  };
  const attribution = { graceMs: duration('attribution-grace', 100, 600_000), noFactsGraceMs: duration('attribution-no-facts-grace', 1_000, 86_400_000) };
  const authorityReverifyIntervalMs = duration('authority-reverify-interval', 1_000, 86_400_000);
  const schemaCompileDelayMs = duration('schema-compile-delay', 0, 600_000);
  const watchBookmarkIntervalMs = duration('watch-bookmark-interval', 1_000, 3_600_000);
  let replicas: ReplicaOptions;
  try {
    replicas = parseReplicaFlags(values, parseDuration);
  } catch (e) {
    throw e instanceof ReplicaFlagError ? new FlagError(e.message) : e;
  }
  const connections = {
    idleTimeoutMs: int(values, 'idle-connection-timeout', 1, 86400) * 1000,
    handshakeTimeoutMs: int(values, 'tls-handshake-timeout', 1, 600) * 1000,
    maxStreamsPerConnection: int(values, 'http2-max-streams-per-connection', 1, 100_000),
    maxHandshakesPerAddress: int(values, 'max-tls-handshakes-per-address', 0, 100_000),
    maxHandshakes: int(values, 'max-tls-handshakes', 0, 100_000),
  };
  let auth: { authn: AuthnOptions; authz: AuthzOptions };
  try {
    auth = parseAuthFlags(values);
  } catch (e) {
    if (e instanceof AuthFlagError) throw new FlagError(e.message);
    throw e;
  }
  const sandbox = bool('sandbox', values['sandbox']!);
  if (mode === 'sandbox' && explicit('sandbox') && !sandbox) throw new FlagError('--sandbox=false: the sandbox command always serves the sandbox');
  const factTtlMs = parseDuration(values['audit-fact-ttl']!);
  if (factTtlMs === undefined || factTtlMs < 1000 || factTtlMs > 24 * 3_600_000) {
    throw new FlagError(`--audit-fact-ttl: must be a duration between 1s and 24h (e.g. 10m), got ${JSON.stringify(values['audit-fact-ttl'])}`);
  }
  const audit: AuditOptions = {
    clientCAFile: values['audit-client-ca-file'] || undefined,
    bindAddress: values['audit-bind-address'] ?? values['bind-address']!,
    port: int(values, 'audit-port', 0, 65535),
    maxRequestBytes: int(values, 'audit-max-request-bytes', 1024, 1024 * 1024 * 1024),
    factTtlMs,
  };
  if (audit.clientCAFile && audit.port !== 0 && audit.port === securePort && audit.bindAddress === values['bind-address']) {
    throw new FlagError(`--audit-port: must differ from --secure-port (both ${securePort})`);
  }
  let registration: RegistrationOptions;
  try {
    const hostingConfigured = !!values['kubeconfig'] || !!process.env.KUBERNETES_SERVICE_HOST;
    registration = parseRegistrationFlags(values, hostingConfigured, parseDuration);
  } catch (e) {
    if (e instanceof RegistrationFlagError) throw new FlagError(e.message);
    throw e;
  }
  let tenantInput: TenantInputOptions;
  try {
    tenantInput = parseTenantInputFlags(values);
  } catch (e) {
    if (e instanceof TenantInputFlagError) throw new FlagError(e.message);
    throw e;
  }
  return {
    tenantInput,
    mode,
    sandbox: mode === 'sandbox' || sandbox,
    securePort,
    bindAddress: values['bind-address']!,
    dataDir,
    certDir: resolve(values['cert-dir'] ?? `${dataDir}/certs`),
    tlsCertFile: values['tls-cert-file'],
    tlsKeyFile: values['tls-private-key-file'],
    storage,
    redisUrl,
    redisPassword,
    redisKeyPrefix,
    eventLogRetention,
    kubeconfig: values['kubeconfig'],
    kcpServerURL: auth.authz.hosting?.kcpServerURL ?? auth.authn.hosting?.kcpServerURL,
    minRequestTimeoutSeconds,
    watchBookmarkIntervalMs,
    maxRequestBytes,
    schemaCompileDelayMs,
    quotas,
    connections,
    logLevel,
    committer,
    personTrailers,
    git,
    controllers,
    attribution,
    authorityReverifyIntervalMs,
    replicas,
    authn: auth.authn,
    authz: auth.authz,
    registration,
    audit,
    devPKI: !explicit('tls-cert-file') && !explicit('client-ca-file'),
  };
}
