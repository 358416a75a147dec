// OpenAPI documents of the server, built once from the resource definitions, each the first time
// it is asked for (a server is ready before any of them is built: the v2 protobuf form alone took
// about a tenth of the start-up, and protobuf.ts loads protobufjs only for it). The HTTP layer serves the
// cached Buffers; ETags are the SHA-512 of the bodies, so they change exactly when the documents do
// (kube-aggregator and kubectl cache by them).
import { createHash } from 'node:crypto';
import type { ResourceDefinition } from '../../api/resources.js';
import { encodeV2Protobuf } from './protobuf.js';
import { buildV2 } from './v2.js';
import { buildV3 } from './v3.js';

/** Every `etag` is a quoted entity tag (`"<HEX>"`), ready for the ETag header and If-None-Match comparison. */
export interface OpenAPIDocuments {
  /** GET /openapi/v3 */
  v3Root: { body: Buffer; etag: string };
  /** GET /openapi/v3/<path> by path (`api/v1`, `apis/<group>/<version>`). */
  v3GroupVersions: Map<string, OpenAPIGroupVersionDoc>;
  /** GET /openapi/v2 with Accept: application/json */
  v2Json: { body: Buffer; etag: string };
  /**
   * GET /openapi/v2 with Accept: application/com.github.proto-openapi.spec.v2@v1.0+protobuf; serve with
   * Content-Type application/com.github.proto-openapi.spec.v2.v1.0+protobuf (dot, not "@").
   */
  v2Protobuf: { body: Buffer; etag: string };
}

/** One group-version's v3 document; hash = upper-case hex SHA-512 of body (the ?hash= of serverRelativeURL). */
export interface OpenAPIGroupVersionDoc {
  body: Buffer;
  hash: string;
  etag: string;
  path: string;
}

export const V2_PROTOBUF_CONTENT_TYPE = 'application/com.github.proto-openapi.spec.v2.v1.0+protobuf';

function sha512(body: Buffer): string {
  return createHash('sha512').update(body).digest('hex').toUpperCase();
}

const quoted = (h: string) => `"${h}"`;

export function buildOpenAPIDocuments(resources: ResourceDefinition[], info: { title: string; version: string }): OpenAPIDocuments {
  const byGV = new Map<string, ResourceDefinition[]>();
  for (const r of resources) {
    const path = r.group ? `apis/${r.group}/${r.version}` : `api/${r.version}`;
    byGV.set(path, [...(byGV.get(path) ?? []), r]);
  }
  if (byGV.size === 0) throw new Error('OpenAPI: no resources to describe');

  const v3 = once(() => {
    const v3GroupVersions = new Map<string, OpenAPIGroupVersionDoc>();
    const rootPaths: Record<string, { serverRelativeURL: string }> = {};
    for (const [path, defs] of byGV) {
      const body = Buffer.from(JSON.stringify(buildV3(defs, info)));
      const hash = sha512(body);
      v3GroupVersions.set(path, { body, hash, etag: quoted(hash), path });
      rootPaths[path] = { serverRelativeURL: `/openapi/v3/${path}?hash=${hash}` };
    }
    // Only the served group-versions: kube-aggregator merges every APIService's root into the cluster's.
    const rootBody = Buffer.from(JSON.stringify({ paths: rootPaths }));
    return { v3Root: { body: rootBody, etag: quoted(sha512(rootBody)) }, v3GroupVersions };
  });
  const v2 = once(() => buildV2(resources, info));
  const v2Json = once(() => {
    const body = Buffer.from(JSON.stringify(v2()));
    return { body, etag: quoted(sha512(body)) };
  });
  const v2Protobuf = once(() => {
    const body = encodeV2Protobuf(v2());
    return { body, etag: quoted(sha512(body)) };
  });
  return {
    get v3Root() {
      return v3().v3Root;
    },
    get v3GroupVersions() {
      return v3().v3GroupVersions;
    },
    get v2Json() {
      return v2Json();
    },
    get v2Protobuf() {
      return v2Protobuf();
    },
  };
}

/** `fn`'s value, computed on the first call. */
function once<T>(fn: () => T): () => T {
  let done = false;
  let value: T;
  return () => {
    if (!done) {
      value = fn();
      done = true;
    }
    return value;
  };
}
