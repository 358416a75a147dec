// A kubeconfig: its clusters, users and contexts, and the TLS material and credentials of its
// current context applied to a request (applyToHTTPSOptions). It is the part of
// @kubernetes/client-node's KubeConfig (dist/config.js) the server uses, with the same parsing
// (dist/config_types.js), the same token-file and exec credential plug-ins (dist/file_auth.js,
// dist/exec_auth.js), and the same order of what is applied.
//
// Why not client-node's own class: its module imports the whole generated API client
// (dist/gen/index.js, ~800 modules) for two functions the server never calls, which cost ~1 CPU-s
// to load and ~70 MiB of resident memory (docs/architecture.md "At rest and at start-up"). The
// rarely used auth providers (azure, gcp, oidc) still come from the full library, imported on the
// first request of a user that names one.
import { readFileSync } from 'node:fs';
import type { RequestOptions } from 'node:https';
import { isIPv6 } from 'node:net';
import { dirname, isAbsolute, join } from 'node:path';
import { parse } from 'yaml';
import { newClusters, newContexts, newUsers, type Cluster, type ConfigOptions, type Context, type User } from '@kubernetes/client-node/dist/config_types.js';
import { ExecAuth } from '@kubernetes/client-node/dist/exec_auth.js';
import { FileAuth } from '@kubernetes/client-node/dist/file_auth.js';

export type { Cluster, Context, User };

interface Authenticator {
  isAuthProvider(user: User): boolean;
  applyAuthentication(user: User, opts: RequestOptions): Promise<void>;
}

export interface KubeConfigOptions {
  clusters: Cluster[];
  users: User[];
  contexts: Context[];
  currentContext: string;
}

// One exec plug-in runner per process, as client-node's KubeConfig.authenticators (its credential
// cache is keyed by the command). FileAuth caches a single token whatever the file, so there is
// one per token file here: two configs naming different files never share a token.
const execAuth = new ExecAuth();
const fileAuths = new Map<string, FileAuth>();
const fileAuthFor = (path: string) => fileAuths.get(path) ?? fileAuths.set(path, new FileAuth()).get(path)!;

const SERVICEACCOUNT_ROOT = '/var/run/secrets/kubernetes.io/serviceaccount';

function fromFileOrData(file: string | undefined, data: string | undefined): Buffer | null {
  if (file) return readFileSync(file);
  if (data) return Buffer.from(data, 'base64');
  return null;
}

export class KubeConfig {
  clusters: Cluster[] = [];
  users: User[] = [];
  contexts: Context[] = [];
  currentContext = '';

  getCurrentContext(): string {
    return this.currentContext;
  }

  getContextObject(name: string): Context | null {
    return this.contexts.find((c) => c.name === name) ?? null;
  }

  getCurrentCluster(): Cluster | null {
    const ctx = this.getContextObject(this.currentContext);
    return ctx ? (this.clusters.find((c) => c.name === ctx.cluster) ?? null) : null;
  }

  getCurrentUser(): User | null {
    const ctx = this.getContextObject(this.currentContext);
    return ctx ? (this.users.find((u) => u.name === ctx.user) ?? null) : null;
  }

  loadFromOptions(o: KubeConfigOptions): void {
    this.clusters = o.clusters;
    this.users = o.users;
    this.contexts = o.contexts;
    this.currentContext = o.currentContext;
  }

  loadFromString(text: string, opts?: Partial<ConfigOptions>): void {
    // YAML 1.1, as client-node's js-yaml reads it (merge keys, yes/no): the operator's own file.
    // A tenant's kubeconfig never comes here (source/kubeconfig.ts builds it with loadFromOptions).
    const obj = (parse(text, { version: '1.1' }) ?? {}) as Record<string, unknown>;
    this.clusters = newClusters(obj.clusters, opts);
    this.contexts = newContexts(obj.contexts, opts);
    this.users = newUsers(obj.users, opts);
    this.currentContext = obj['current-context'] as string;
  }

  /** Relative certificate and key file names are relative to the kubeconfig's folder, as kubectl reads them. */
  loadFromFile(file: string, opts?: Partial<ConfigOptions>): void {
    this.loadFromString(readFileSync(file, 'utf8'), opts);
    const abs = (f: string) => (isAbsolute(f) ? f : join(dirname(file), f));
    for (const c of this.clusters) if (c.caFile) c.caFile = abs(c.caFile);
    for (const u of this.users) {
      if (u.certFile) u.certFile = abs(u.certFile);
      if (u.keyFile) u.keyFile = abs(u.keyFile);
    }
  }

  /** The Pod's service account: its CA, its token file (re-read every 60 s, it rotates), its namespace. */
  loadFromCluster(pathPrefix = ''): void {
    const host = process.env.KUBERNETES_SERVICE_HOST;
    const port = process.env.KUBERNETES_SERVICE_PORT;
    const scheme = port === '80' || port === '8080' || port === '8001' ? 'http' : 'https';
    const serverHost = host && isIPv6(host) ? `[${host}]` : host;
    this.clusters = [{ name: 'inCluster', caFile: `${pathPrefix}${SERVICEACCOUNT_ROOT}/ca.crt`, server: `${scheme}://${serverHost}:${port}`, skipTLSVerify: false }];
    this.users = [{ name: 'inClusterUser', authProvider: { name: 'tokenFile', config: { tokenFile: `${pathPrefix}${SERVICEACCOUNT_ROOT}/token` } } }];
    let namespace: string | undefined;
    try {
      namespace = readFileSync(`${pathPrefix}${SERVICEACCOUNT_ROOT}/namespace`, 'utf8');
    } catch {
      namespace = undefined;
    }
    this.contexts = [{ cluster: 'inCluster', name: 'inClusterContext', user: 'inClusterUser', namespace }];
    this.currentContext = 'inClusterContext';
  }

  /**
   * The current context's TLS material (ca, cert, key, rejectUnauthorized, servername), its
   * credentials (an Authorization header, or `auth` for basic auth) and impersonation header. Sets
   * no `agent`: callers connect on their own transports.
   */
  async applyToHTTPSOptions(opts: RequestOptions): Promise<void> {
    const cluster = this.getCurrentCluster();
    const user = this.getCurrentUser();
    if (user) {
      if (cluster?.skipTLSVerify) opts.rejectUnauthorized = false;
      if (cluster?.tlsServerName) opts.servername = cluster.tlsServerName;
      const ca = cluster ? fromFileOrData(cluster.caFile, cluster.caData) : null;
      if (ca) opts.ca = ca;
      const cert = fromFileOrData(user.certFile, user.certData);
      if (cert) opts.cert = cert;
      const key = fromFileOrData(user.keyFile, user.keyData);
      if (key) opts.key = key;
      const headers = (opts.headers ??= {}) as Record<string, string | string[] | number | undefined>;
      if (user.impersonateUser != null) headers['Impersonate-User'] = user.impersonateUser;
      if (execAuth.isAuthProvider(user)) await execAuth.applyAuthentication(user, opts);
      else if (user.authProvider?.config?.tokenFile) await fileAuthFor(String(user.authProvider.config.tokenFile)).applyAuthentication(user, opts);
      else if (user.authProvider) {
        const { KubeConfig: Full } = await import('@kubernetes/client-node');
        // A private static of the class (config.d.ts), in the order client-node tries them.
        const authenticators = (Full as unknown as { authenticators: Authenticator[] }).authenticators;
        await authenticators.find((a) => a.isAuthProvider(user))?.applyAuthentication(user, opts);
      }
      if (user.token) headers.Authorization = `Bearer ${user.token}`;
      if (user.username) opts.auth = `${user.username}:${user.password}`;
    }
    // client-node refuses plain http unless TLS verification is explicitly off (config.js createAgent).
    if (cluster?.server?.startsWith('http:') && !cluster.skipTLSVerify && !cluster.proxyUrl) {
      throw new Error('HTTP protocol is not allowed when skipTLSVerify is not set or false');
    }
  }
}
