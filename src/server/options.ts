// The validated options of a server process: what src/cli/options.ts makes of the flags, and all
// that the start-up (config.ts → run.ts) reads. Types only, so the server assembly never imports
// cli/ (docs/architecture.md, "Start-up").
import type { AuthnOptions, AuthzOptions } from '../auth/index.js';
import type { LogLevel } from '../metrics/logger.js';
import type { ControllerName } from '../controllers/names.js';
import type { RegistrationOptions } from '../registration/index.js';
import type { GitTargetQuotas } from '../registry/quota.js';
import type { TenantInputOptions } from '../net/flags.js';
import type { ReplicaOptions } from '../controllers/runtime/replica-flags.js';

/** What a process serves: `serve` is the API server (optionally with the sandbox), `sandbox` the sandbox alone. */
export type ServeMode = 'serve' | 'sandbox';

export interface ServeOptions {
  /** `sandbox`: the `reverser-apiserver sandbox` command (no configbutler.ai group, no controllers). */
  mode: ServeMode;
  /** Serve the sandbox's Kubernetes core (always true in the sandbox mode). */
  sandbox: boolean;
  securePort: number;
  bindAddress: string;
  dataDir: string;
  certDir: string;
  tlsCertFile?: string;
  tlsKeyFile?: string;
  storage: 'embedded' | 'redis';
  redisUrl: string;
  /** From --redis-password-file or REDIS_PASSWORD; never logged. */
  redisPassword?: string;
  redisKeyPrefix: string;
  eventLogRetention: number;
  kubeconfig?: string;
  /** --kcp-server-url: where a logical cluster's workspace is (its default mirror source and kubeconfig Secrets). */
  kcpServerURL?: string;
  minRequestTimeoutSeconds: number;
  /** --watch-bookmark-interval (src/apiserver/handlers/watch.ts); default BOOKMARK_INTERVAL_MS. */
  watchBookmarkIntervalMs?: number;
  maxRequestBytes: number;
  /** --schema-compile-delay: when the own group's schemas are compiled after start-up; 0: at their first write (default 1 s). */
  schemaCompileDelayMs?: number;
  /** --max-gittargets-per-namespace and friends (src/registry/quota.ts). */
  quotas: GitTargetQuotas;
  connections: { idleTimeoutMs: number; handshakeTimeoutMs: number; maxStreamsPerConnection: number; maxHandshakesPerAddress: number; maxHandshakes: number };
  logLevel: LogLevel;
  committer: { name: string; email: string };
  /** Trailer keys that name a person in a CommitRequest message (registry/commit-message-policy.ts). */
  personTrailers: string[];
  /** Limits on what a git remote may send (--git-max-response-bytes); git engine worker threads (--git-workers). */
  git: { maxResponseBytes: number; workers: number };
  controllers: Set<ControllerName>;
  /** Per-edit attribution: how long a change waits for its fact, and the no-facts grace of AuditAttribution (ms). */
  attribution: { graceMs: number; noFactsGraceMs: number };
  /** --replica-lease-ttl and --replica-heartbeat-interval (src/controllers/runtime/replica-flags.ts). */
  replicas: ReplicaOptions;
  /** How often GitTargets' recorded authority is re-verified (ms). */
  authorityReverifyIntervalMs: number;
  authn: AuthnOptions;
  authz: AuthzOptions;
  registration: RegistrationOptions;
  /** The audit listener (enabled by --audit-client-ca-file) and the facts' lifetime. */
  audit: AuditOptions;
  /** Dev mode: no serving certificate and no client CA given, so both come from the generated dev CA. */
  devPKI: boolean;
  /** --allow-insecure-credentials, --allow-file-repositories, --egress-* (src/net/flags.ts). */
  tenantInput: TenantInputOptions;
}

export interface AuditOptions {
  /** Absent: no audit listener (facts posted to another replica are still read). */
  clientCAFile?: string;
  bindAddress: string;
  /** 0: a free port, chosen at listen. */
  port: number;
  maxRequestBytes: number;
  factTtlMs: number;
}
