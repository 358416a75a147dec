// A test double of the hosting cluster's kube-apiserver: records and answers TokenReviews and
// SubjectAccessReviews (scriptable: allow, deny, HTTP 500, hang), and serves GET and watch of
// kube-system/extension-apiserver-authentication. Writes a kubeconfig pointing at itself.
// As kcp it also answers per logical cluster: reviews under `/clusters/<name>/`, APIBindings, and
// (with `workspaces`) every other `/clusters/<name>/...` call proxied to a real sandbox server,
// which partitions core objects (ConfigMaps, Secrets, list/watch) by logical cluster as kcp does.
import https from 'node:https';
import type { ClientRequest } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { issueServerCert, makeCA } from './pki.js';
import { withDeadline } from './deadline.js';

export const FAKE_SA_TOKEN = 'fake-hosting-sa-token';

export interface RecordedCall {
  method: string;
  path: string;
  authorization?: string;
  /** The parsed JSON body, and the raw text for exactness checks. */
  body?: unknown;
  raw: string;
}

export type ReviewAnswer =
  | { status: number; body?: unknown } // an HTTP error, e.g. {status: 500}
  | 'hang'; // never answer (the caller's timeout must fire)

export interface SARSpec {
  resourceAttributes?: Record<string, string>;
  nonResourceAttributes?: { path: string; verb: string };
  user: string;
  groups?: string[];
  uid?: string;
  extra?: Record<string, string[]>;
}

export interface TokenReviewUser {
  username: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

export interface FakeHostingCluster {
  url: string;
  /** Client connections open now. */
  openConnections(): number;
  kubeconfigPath: string;
  calls: RecordedCall[];
  /** Decide a SubjectAccessReview: return allowed/denied/reason or an HTTP error/hang. Default: deny. */
  onSAR: (spec: SARSpec, path: string) => { allowed: boolean; denied?: boolean; reason?: string } | ReviewAnswer;
  /** Decide a TokenReview: a user, false (not authenticated), {error} or an HTTP error/hang. Default: unauthenticated. */
  onTokenReview: (token: string, path: string) => TokenReviewUser | false | { error: string } | ReviewAnswer;
  /**
   * kcp APIBindings per logical cluster (GET /clusters/<name>/apis/apis.kcp.io/v1alpha2/apibindings);
   * a cluster without an entry lists none. `apiBindingsStatus` answers with that HTTP error instead.
   */
  apiBindings: Map<string, unknown[]>;
  apiBindingsStatus?: number;
  /**
   * kcp workspaces' own objects: every other call under /clusters/<name>/ is proxied, as is, to
   * this server (a `reverser-apiserver sandbox`) with its admin client certificate.
   */
  workspaces?: { url: string; caPem: string; certPem: string; keyPem: string };
  /**
   * apiregistration.k8s.io/v1: undefined = not served (404, like kcp); a Map = served, holding the
   * APIServices by name (GET, POST, PUT). `apiServicesStatus` answers every apiservices call with
   * that HTTP error instead (e.g. 403).
   */
  apiServices?: Map<string, any>;
  apiServicesStatus?: number;
  /**
   * The cluster's namespaces (name → phase), listed, read and watched at /api/v1/namespaces and,
   * for a logical cluster not proxied to `workspaces`, at /clusters/<name>/api/v1/namespaces. Starts
   * with default, kube-system, kube-public and kube-node-lease; change it with setNamespace.
   */
  namespaces: Map<string, 'Active' | 'Terminating'>;
  /** Answers every namespace call with this HTTP error instead (e.g. 403: the server may not read namespaces). */
  namespacesStatus?: number;
  /** Adds, changes (phase) or (undefined) deletes a namespace, and notifies namespace watchers. */
  setNamespace(name: string, phase: 'Active' | 'Terminating' | undefined): void;
  /** Replaces the ConfigMap data (undefined = the ConfigMap does not exist) and notifies watchers. */
  setConfigMap(data: Record<string, string> | undefined): void;
  /**
   * The ConfigMap watches asked for (their query strings), in order. A watch with timeoutSeconds
   * is ended by the server then, as kube-apiserver does, unless `silentWatches` is set: then it
   * stays open and says nothing (a half-open connection, as the client sees one).
   */
  configMapWatches: URLSearchParams[];
  silentWatches?: boolean;
  /** Ends every ConfigMap watch with an ERROR event (410 Expired), as kube-apiserver does when the watch's resourceVersion is too old. */
  expireConfigMapWatches(): void;
  sars(): RecordedCall[];
  tokenReviews(): RecordedCall[];
  close(): Promise<void>;
}

export async function startFakeHostingCluster(): Promise<FakeHostingCluster> {
  const ca = makeCA('fake-hosting-cluster-ca');
  const serving = issueServerCert(ca, 'fake-kube-apiserver');
  const dir = mkdtempSync(join(tmpdir(), 'fake-hosting-'));
  const hanging = new Set<ServerResponse>();
  const watchers = new Set<ServerResponse>();
  const nsWatchers = new Set<ServerResponse>();
  /** Every namespace event, so a watch from a resourceVersion replays what it missed since its list. */
  const nsEvents: Array<{ rv: number; line: string }> = [];
  const proxied = new Set<ClientRequest>();
  let cmData: Record<string, string> | undefined;
  let rv = 1;

  const cmObject = () => ({
    kind: 'ConfigMap', apiVersion: 'v1',
    metadata: { name: 'extension-apiserver-authentication', namespace: 'kube-system', resourceVersion: String(rv) },
    data: cmData,
  });

  const nsObject = (name: string, phase: string) => ({
    kind: 'Namespace', apiVersion: 'v1', metadata: { name, resourceVersion: String(rv) }, spec: { finalizers: ['kubernetes'] }, status: { phase },
  });

  const send = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify(body));
  };

  const answerError = (res: ServerResponse, a: ReviewAnswer): void => {
    if (a === 'hang') {
      hanging.add(res);
      res.on('close', () => hanging.delete(res));
      return;
    }
    send(res, a.status, a.body ?? { kind: 'Status', apiVersion: 'v1', status: 'Failure', message: 'fake failure', code: a.status });
  };

  const fake: FakeHostingCluster = {
    url: '',
    openConnections: () => sockets.size,
    kubeconfigPath: join(dir, 'kubeconfig'),
    calls: [],
    onSAR: () => ({ allowed: false }),
    onTokenReview: () => false,
    apiBindings: new Map(),
    namespaces: new Map(['default', 'kube-system', 'kube-public', 'kube-node-lease'].map((n) => [n, 'Active' as const])),
    setNamespace(name, phase) {
      const existed = fake.namespaces.get(name);
      rv++;
      if (phase === undefined) fake.namespaces.delete(name);
      else fake.namespaces.set(name, phase);
      const type = phase === undefined ? 'DELETED' : existed ? 'MODIFIED' : 'ADDED';
      const line = JSON.stringify({ type, object: nsObject(name, phase ?? existed ?? 'Active') }) + '\n';
      nsEvents.push({ rv, line });
      for (const w of nsWatchers) w.write(line);
    },
    setConfigMap(data) {
      const existed = cmData !== undefined;
      cmData = data;
      rv++;
      const type = data === undefined ? 'DELETED' : existed ? 'MODIFIED' : 'ADDED';
      for (const w of watchers) w.write(JSON.stringify({ type, object: cmObject() }) + '\n');
    },
    configMapWatches: [],
    expireConfigMapWatches() {
      const status = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'too old resource version: 1 (2)', reason: 'Expired', code: 410 };
      for (const w of [...watchers]) w.end(JSON.stringify({ type: 'ERROR', object: status }) + '\n');
    },
    sars: () => fake.calls.filter((c) => c.path.endsWith('/subjectaccessreviews')),
    tokenReviews: () => fake.calls.filter((c) => c.path.endsWith('/tokenreviews')),
    async close() {
      for (const r of [...hanging, ...watchers, ...nsWatchers, ...proxied]) r.destroy();
      // Stop listening first, then end every socket, including one still in its TLS handshake
      // (a client reconnecting its watch), which closeAllConnections() does not know about.
      const closed = new Promise<void>((r) => server.close(() => r()));
      for (const s of sockets) s.destroy();
      await withDeadline(closed, 'the fake hosting cluster to close', 10_000);
      rmSync(dir, { recursive: true, force: true });
    },
  };

  const handle = (req: IncomingMessage, res: ServerResponse, raw: string): void => {
    const url = new URL(req.url ?? '/', 'https://x');
    let body: unknown;
    try {
      body = raw ? JSON.parse(raw) : undefined;
    } catch {
      body = undefined;
    }
    fake.calls.push({ method: req.method ?? '', path: url.pathname, authorization: req.headers.authorization, body, raw });
    if (req.headers.authorization !== `Bearer ${FAKE_SA_TOKEN}`) {
      send(res, 401, { kind: 'Status', apiVersion: 'v1', status: 'Failure', message: 'Unauthorized', reason: 'Unauthorized', code: 401 });
      return;
    }
    if (req.method === 'POST' && url.pathname.endsWith('/apis/authorization.k8s.io/v1/subjectaccessreviews')) {
      const spec = (body as { spec: SARSpec }).spec;
      const a = fake.onSAR(spec, url.pathname);
      if (a === 'hang' || 'status' in a) return answerError(res, a);
      const status: Record<string, unknown> = { allowed: a.allowed };
      if (a.denied) status.denied = true;
      if (a.reason) status.reason = a.reason;
      send(res, 201, { kind: 'SubjectAccessReview', apiVersion: 'authorization.k8s.io/v1', metadata: { creationTimestamp: null }, spec, status });
      return;
    }
    if (req.method === 'POST' && url.pathname.endsWith('/apis/authentication.k8s.io/v1/tokenreviews')) {
      const spec = (body as { spec: { token: string; audiences?: string[] } }).spec;
      const a = fake.onTokenReview(spec.token, url.pathname);
      if (a === 'hang' || (typeof a === 'object' && 'status' in a)) return answerError(res, a as ReviewAnswer);
      const status = a === false ? { user: {} } : 'error' in a ? { user: {}, error: a.error } : { authenticated: true, user: a };
      send(res, 201, { kind: 'TokenReview', apiVersion: 'authentication.k8s.io/v1', metadata: { creationTimestamp: null }, spec, status });
      return;
    }
    if (fake.apiServices && url.pathname.startsWith('/apis/apiregistration.k8s.io/v1')) return apiRegistration(req, res, url.pathname, body);
    const ws = /^\/clusters\/([^/]+)(\/.*)$/.exec(url.pathname);
    if (ws && req.method === 'GET' && ws[2] === '/apis/apis.kcp.io/v1alpha2/apibindings') {
      if (fake.apiBindingsStatus) return answerError(res, { status: fake.apiBindingsStatus });
      send(res, 200, { kind: 'APIBindingList', apiVersion: 'apis.kcp.io/v1alpha2', metadata: { resourceVersion: String(rv) }, items: fake.apiBindings.get(ws[1]!) ?? [] });
      return;
    }
    if (ws && fake.workspaces) return proxy(req, res, raw, fake.workspaces);
    const nsPath = (ws ? ws[2]! : url.pathname).match(/^\/api\/v1\/namespaces(?:\/([^/]+))?$/);
    if (req.method === 'GET' && nsPath) return namespaces(res, url, nsPath[1] && decodeURIComponent(nsPath[1]));
    if (req.method === 'GET' && url.pathname === '/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication') {
      if (cmData === undefined) {
        send(res, 404, { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'NotFound', code: 404, message: 'configmaps "extension-apiserver-authentication" not found' });
      } else send(res, 200, cmObject());
      return;
    }
    if (req.method === 'GET' && url.pathname === '/api/v1/namespaces/kube-system/configmaps' && url.searchParams.get('watch') === 'true') {
      res.writeHead(200, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' });
      res.flushHeaders();
      watchers.add(res);
      fake.configMapWatches.push(url.searchParams);
      const timeout = Number(url.searchParams.get('timeoutSeconds') ?? '0');
      const ender = timeout > 0 && !fake.silentWatches ? setTimeout(() => res.end(), timeout * 1000) : undefined;
      res.on('close', () => {
        clearTimeout(ender);
        watchers.delete(res);
      });
      const since = Number(url.searchParams.get('resourceVersion') ?? '0');
      if (cmData !== undefined && since < rv) res.write(JSON.stringify({ type: 'ADDED', object: cmObject() }) + '\n');
      return;
    }
    send(res, 404, { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'NotFound', code: 404, message: `no route ${req.method} ${url.pathname}` });
  };

  const namespaces = (res: ServerResponse, url: URL, name: string | undefined): void => {
    if (fake.namespacesStatus) return answerError(res, { status: fake.namespacesStatus });
    if (name !== undefined) {
      const phase = fake.namespaces.get(name);
      if (phase) return send(res, 200, nsObject(name, phase));
      return send(res, 404, { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'NotFound', code: 404, message: `namespaces "${name}" not found`, details: { name, kind: 'namespaces' } });
    }
    if (url.searchParams.get('watch') !== 'true') {
      return send(res, 200, { kind: 'NamespaceList', apiVersion: 'v1', metadata: { resourceVersion: String(rv) }, items: [...fake.namespaces].map(([n, p]) => nsObject(n, p)) });
    }
    res.writeHead(200, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' });
    res.flushHeaders();
    const since = Number(url.searchParams.get('resourceVersion') ?? '0');
    for (const e of nsEvents) if (e.rv > since) res.write(e.line);
    nsWatchers.add(res);
    res.on('close', () => nsWatchers.delete(res));
  };

  const proxy = (req: IncomingMessage, res: ServerResponse, raw: string, to: NonNullable<FakeHostingCluster['workspaces']>): void => {
    const headers: Record<string, string> = {};
    for (const h of ['accept', 'content-type']) if (typeof req.headers[h] === 'string') headers[h] = req.headers[h] as string;
    const out = https.request(new URL(req.url ?? '/', to.url), { method: req.method, headers, ca: to.caPem, cert: to.certPem, key: to.keyPem }, (up) => {
      res.writeHead(up.statusCode ?? 502, { 'Content-Type': up.headers['content-type'] ?? 'application/json' });
      res.flushHeaders();
      up.pipe(res);
    });
    proxied.add(out);
    out.on('close', () => proxied.delete(out));
    out.on('error', () => res.destroy());
    res.on('close', () => out.destroy());
    out.end(raw || undefined);
  };

  const apiRegistration = (req: IncomingMessage, res: ServerResponse, path: string, body: any): void => {
    const store = fake.apiServices!;
    const base = '/apis/apiregistration.k8s.io/v1';
    if (path === base && req.method === 'GET') {
      send(res, 200, { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: 'apiregistration.k8s.io/v1',
        resources: [{ name: 'apiservices', singularName: 'apiservice', namespaced: false, kind: 'APIService', verbs: ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'] }] });
      return;
    }
    if (fake.apiServicesStatus) {
      const code = fake.apiServicesStatus;
      send(res, code, { kind: 'Status', apiVersion: 'v1', status: 'Failure', code, reason: code === 403 ? 'Forbidden' : 'InternalError',
        message: `apiservices.apiregistration.k8s.io is forbidden: User "system:serviceaccount:reverser-system:reverser-apiserver" cannot ${req.method === 'GET' ? 'get' : 'create'} resource "apiservices"` });
      return;
    }
    const name = path.startsWith(`${base}/apiservices/`) ? decodeURIComponent(path.slice(`${base}/apiservices/`.length)) : undefined;
    const notFound = () => send(res, 404, { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'NotFound', code: 404, message: `apiservices.apiregistration.k8s.io "${name}" not found` });
    if (req.method === 'GET' && name) return store.has(name) ? send(res, 200, store.get(name)) : notFound();
    if (req.method === 'POST' && path === `${base}/apiservices`) {
      const obj = { ...body, metadata: { ...body.metadata, resourceVersion: String(++rv) } };
      store.set(obj.metadata.name, obj);
      return send(res, 201, obj);
    }
    if (req.method === 'PUT' && name) {
      if (!store.has(name)) return notFound();
      const obj = { ...body, metadata: { ...body.metadata, resourceVersion: String(++rv) } };
      store.set(name, obj);
      return send(res, 200, obj);
    }
    send(res, 405, { kind: 'Status', apiVersion: 'v1', status: 'Failure', code: 405, reason: 'MethodNotAllowed', message: 'not supported by the fake' });
  };

  const server = https.createServer({ cert: serving.certPem, key: serving.keyPem }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => handle(req, res, Buffer.concat(chunks).toString('utf8')));
  });
  const sockets = new Set<Socket>();
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as AddressInfo).port;
  fake.url = `https://127.0.0.1:${port}`;
  writeFileSync(fake.kubeconfigPath, [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '- name: fake',
    '  cluster:',
    `    server: ${fake.url}`,
    `    certificate-authority-data: ${Buffer.from(ca.certPem).toString('base64')}`,
    'users:',
    '- name: sa',
    '  user:',
    `    token: ${FAKE_SA_TOKEN}`,
    'contexts:',
    '- name: fake',
    '  context: {cluster: fake, user: sa}',
    'current-context: fake',
    '',
  ].join('\n'));
  return fake;
}
