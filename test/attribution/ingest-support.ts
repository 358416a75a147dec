// Shared by the ingest-*.test.ts files: an audit PKI (the audit CA, a client certificate from it,
// one from another CA), a server started with the audit listener, an HTTPS poster for it, and
// audit.k8s.io/v1 events shaped as kube-apiserver writes them at level RequestResponse.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpsRequest, type Agent } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import type { TestContext } from 'node:test';
import { freePort, startServer, type StartedServer, type StartOptions } from '../support/server.js';
import { makeCA, issueClientCert, type KeyPair } from '../support/pki.js';
import { DeadlineError, waitMs } from '../support/deadline.js';
import { createRedisStore } from '../../src/storage/redis/store.js';
import { StoreFacts } from '../../src/attribution/facts-store.js';

export interface AuditPKI {
  dir: string;
  caFile: string;
  /** A client certificate from the audit CA (kube-apiserver's). */
  client: KeyPair;
  /** A client certificate from another CA. */
  stranger: KeyPair;
  caPem: string;
  otherCaPem: string;
}

let pki: AuditPKI | undefined;
/** One audit PKI per test file (RSA keys take a moment). */
export function auditPKI(): AuditPKI {
  if (pki) return pki;
  const dir = mkdtempSync(join(tmpdir(), 'audit-pki-'));
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  const ca = makeCA('audit-ca');
  const other = makeCA('other-ca');
  const caFile = join(dir, 'audit-ca.crt');
  writeFileSync(caFile, ca.certPem);
  pki = {
    dir,
    caFile,
    client: issueClientCert(ca, 'kube-apiserver-audit'),
    stranger: issueClientCert(other, 'kube-apiserver-audit'),
    caPem: ca.certPem,
    otherCaPem: other.certPem,
  };
  return pki;
}

export interface AuditServer extends StartedServer {
  auditPort: number;
  /** POST (or another method) to the audit listener. `cert: null` sends no client certificate. */
  post(path: string, body: unknown, o?: PostOptions): Promise<PostResult>;
}

export interface PostOptions {
  method?: string;
  cert?: KeyPair | null;
  contentType?: string;
  timeoutMs?: number;
  agent?: Agent;
}

export interface PostResult {
  status: number;
  body: any;
  text: string;
}

/** A server with the audit listener on a free port (or `auditPort`). */
export async function startAuditServer(t: TestContext | undefined, args: string[] = [], opts: StartOptions & { auditPort?: number } = {}): Promise<AuditServer> {
  const p = auditPKI();
  const auditPort = opts.auditPort ?? (await freePort());
  const srv = await startServer([`--audit-client-ca-file=${p.caFile}`, `--audit-port=${auditPort}`, ...args], opts);
  if (t) t.after(() => srv.stop());
  const m = /audit webhook is serving on https:\/\/[^:]+:(\d+)\/audit-webhook\n/.exec(srv.stdout());
  const port = m ? Number(m[1]) : auditPort;
  return Object.assign(srv, { auditPort: port, post: (path: string, body: unknown, o: PostOptions = {}) => postTo(port, srv.ca, path, body, o) });
}

export function postTo(port: number, ca: string, path: string, body: unknown, o: PostOptions = {}): Promise<PostResult> {
  const cert = o.cert === undefined ? auditPKI().client : o.cert;
  const payload = body === undefined ? undefined : Buffer.isBuffer(body) ? body : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
  const headers: Record<string, string> = {};
  if (payload) {
    headers['content-type'] = o.contentType ?? 'application/json';
    headers['content-length'] = String(payload.length);
  }
  return new Promise((resolve, reject) => {
    const limit = waitMs(o.timeoutMs ?? 30_000);
    const req = httpsRequest(
      {
        host: '127.0.0.1',
        port,
        path,
        method: o.method ?? 'POST',
        headers,
        ca,
        ...(cert ? { cert: cert.certPem, key: cert.keyPem } : {}),
        agent: o.agent ?? false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          clearTimeout(timer);
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: any;
          try {
            parsed = JSON.parse(text);
          } catch {
            parsed = undefined;
          }
          resolve({ status: res.statusCode ?? 0, body: parsed, text });
        });
        res.on('error', (e) => (clearTimeout(timer), reject(e)));
      },
    );
    const timer = setTimeout(() => {
      req.destroy();
      reject(new DeadlineError(`the audit listener's answer to ${o.method ?? 'POST'} ${path}`, limit));
    }, limit);
    req.on('error', (e) => (clearTimeout(timer), reject(e)));
    req.end(payload);
  });
}

/** The store's facts as the server's replicas read them: a StoreFacts on the same Redis and prefix. */
export async function redisFacts(t: TestContext, url: string, keyPrefix = 'reverser'): Promise<StoreFacts> {
  const store = await createRedisStore({ url, keyPrefix });
  t.after(() => store.close());
  return new StoreFacts({ store });
}

/** A metric's value from the main port's /metrics (admin client certificate). */
export async function metric(srv: StartedServer, name: string, labels: Record<string, string> = {}): Promise<number> {
  const r = await srv.get('/metrics');
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of r.text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (want.every((w) => line.includes(w))) return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return 0;
}

// ---- audit events, as kube-apiserver writes them (level RequestResponse) --------------------

export interface EventOpts {
  verb?: string;
  stage?: string;
  user?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
  impersonate?: string;
  namespace?: string;
  name?: string;
  uid?: string;
  resource?: string;
  apiGroup?: string;
  subresource?: string;
  code?: number;
  /** resourceVersion the request carried (update body) and the one the response has. */
  requestRV?: string;
  responseRV?: string;
  dryRun?: boolean;
  auditID?: string;
  /** deletecollection: the uids of the response's items. */
  deletedUids?: string[];
  /** Drop requestObject/responseObject (level Metadata). */
  metadataOnly?: boolean;
}

export function auditEvent(o: EventOpts = {}): Record<string, unknown> {
  const verb = o.verb ?? 'update';
  const resource = o.resource ?? 'configmaps';
  const ns = o.namespace ?? 'team-a';
  const name = o.name ?? 'cm';
  const uid = o.uid ?? 'uid-1';
  const base = `/api/v1/namespaces/${ns}/${resource}`;
  const uri = (verb === 'create' || verb === 'deletecollection' ? base : `${base}/${name}`) + (o.dryRun ? '?dryRun=All' : '');
  const obj = (rv?: string) => ({ kind: 'ConfigMap', apiVersion: 'v1', metadata: { name, namespace: ns, uid, ...(rv ? { resourceVersion: rv } : {}) }, data: { k: 'v' } });
  const ev: Record<string, unknown> = {
    kind: 'Event',
    apiVersion: 'audit.k8s.io/v1',
    level: o.metadataOnly ? 'Metadata' : 'RequestResponse',
    auditID: o.auditID ?? randomUUID(),
    stage: o.stage ?? 'ResponseComplete',
    requestURI: uri,
    verb,
    user: { username: o.user ?? 'alice', uid: 'u-alice', groups: o.groups ?? ['system:authenticated'], ...(o.extra ? { extra: o.extra } : {}) },
    sourceIPs: ['127.0.0.1'],
    userAgent: 'kubectl/v1.33.0',
    objectRef: {
      resource,
      namespace: ns,
      ...(verb === 'create' || verb === 'deletecollection' ? {} : { name }),
      apiGroup: o.apiGroup ?? '',
      apiVersion: 'v1',
      ...(o.subresource ? { subresource: o.subresource } : {}),
    },
    responseStatus: { metadata: {}, code: o.code ?? (verb === 'create' ? 201 : 200) },
    requestReceivedTimestamp: '2026-11-30T08:00:00.000000Z',
    stageTimestamp: '2026-11-30T08:00:00.012345Z',
    annotations: { 'authorization.k8s.io/decision': 'allow', 'authorization.k8s.io/reason': '' },
  };
  if (o.impersonate) ev.impersonatedUser = { username: o.impersonate, groups: ['system:authenticated'] };
  if (o.metadataOnly) return ev;
  if (verb === 'create') {
    ev.requestObject = { kind: 'ConfigMap', apiVersion: 'v1', metadata: { name, namespace: ns }, data: { k: 'v' } };
    ev.responseObject = obj(o.responseRV ?? '101');
  } else if (verb === 'update') {
    ev.requestObject = obj(o.requestRV ?? '100');
    ev.responseObject = obj(o.responseRV ?? '101');
  } else if (verb === 'patch') {
    ev.requestObject = { data: { k: 'v2' } };
    ev.responseObject = obj(o.responseRV ?? '101');
  } else if (verb === 'delete') {
    ev.requestObject = { kind: 'DeleteOptions', apiVersion: 'v1', propagationPolicy: 'Background' };
    ev.responseObject = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', details: { name, kind: resource, uid } };
  } else if (verb === 'deletecollection') {
    ev.requestObject = { kind: 'DeleteOptions', apiVersion: 'v1' };
    ev.responseObject = {
      kind: 'ConfigMapList',
      apiVersion: 'v1',
      metadata: { resourceVersion: '200' },
      items: (o.deletedUids ?? []).map((u, i) => ({ metadata: { name: `cm-${i}`, namespace: ns, uid: u, resourceVersion: String(150 + i) } })),
    };
  } else {
    ev.responseObject = obj(o.responseRV ?? '100');
  }
  return ev;
}

export function eventList(items: unknown[]): Record<string, unknown> {
  return { kind: 'EventList', apiVersion: 'audit.k8s.io/v1', metadata: {}, items };
}
