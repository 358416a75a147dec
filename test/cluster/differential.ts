// What the differential tests share (apply-, parity- and protocol-differential.test.ts): a request
// to the real kube-apiserver of the test control plane answered as our server's test client
// answers (status, parsed body, text), the GitTarget CRD that kube-apiserver serves in our place,
// and the projection of a Status the comparisons use.
import assert from 'node:assert/strict';
import { request as httpsRequest } from 'node:https';
import { until, type ControlPlane } from './fixture.js';

export const GROUP = 'configbutler.ai';
export const GV = `/apis/${GROUP}/v1alpha1`;

export interface Answer {
  status: number;
  body: any;
  text: string;
}

export interface KubeRequest {
  /** A string is sent as it is; anything else as JSON. */
  body?: unknown;
  /** Of the body (default application/json). */
  contentType?: string;
  headers?: Record<string, string>;
}

/** One request to kube-apiserver as its admin, with a 30 s deadline. */
export function kubeRequest(cp: ControlPlane, method: string, path: string, opts: KubeRequest = {}): Promise<Answer> {
  const { body, contentType = 'application/json', headers = {} } = opts;
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
    const req = httpsRequest(`${cp.url}${path}`, {
      method,
      ca: cp.ca.certPem,
      cert: cp.admin.cert.certPem,
      key: cp.admin.cert.keyPem,
      agent: false,
      headers: { accept: 'application/json', ...headers, ...(payload ? { 'content-type': contentType, 'content-length': payload.length } : {}) },
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let parsed: any;
        try {
          parsed = JSON.parse(text);
        } catch {
          parsed = undefined;
        }
        resolve({ status: res.statusCode ?? 0, body: parsed, text });
      });
      res.on('error', reject);
    });
    req.setTimeout(30_000, () => req.destroy(new Error(`${method} ${path}: no answer within 30 s`)));
    req.on('error', reject);
    req.end(payload);
  });
}

/** Creates the GitTarget CRD with `openAPIV3Schema` and waits until it is established and served. */
export async function createGitTargetCRD(cp: ControlPlane, openAPIV3Schema: unknown): Promise<void> {
  const crd = {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `gittargets.${GROUP}` },
    spec: {
      group: GROUP,
      scope: 'Namespaced',
      names: { plural: 'gittargets', singular: 'gittarget', kind: 'GitTarget', listKind: 'GitTargetList' },
      versions: [{ name: 'v1alpha1', served: true, storage: true, schema: { openAPIV3Schema }, subresources: { status: {} } }],
    },
  };
  const r = await cp.api('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', crd);
  assert.equal(r.status, 201, r.text);
  await until('the CRD is established and served', async () => {
    const c = await cp.api('GET', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gittargets.${GROUP}`);
    const established = c.body?.status?.conditions?.some((x: any) => x.type === 'Established' && x.status === 'True');
    return established && (await cp.api('GET', `${GV}/namespaces/default/gittargets`)).status === 200;
  }, 60_000);
}

/** Status code, and for a failure the Status's reason, message, details' name/kind and causes. */
export function outcome(a: Answer): unknown {
  if (a.status < 300) return { status: a.status };
  const d = a.body?.details ?? {};
  return { status: a.status, reason: a.body?.reason, message: a.body?.message, name: d.name, kind: d.kind, causes: d.causes ?? [] };
}

/** Both answers, for an assertion's message. */
export const show = (mine: Answer, theirs: Answer) => `\nours: ${mine.text.slice(0, 600)}\nkube: ${theirs.text.slice(0, 600)}`;
