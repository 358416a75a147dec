// The HTTP transport handed to isomorphic-git. Compared with isomorphic-git/http/node it adds a
// timeout (a hung server must become an "Unreachable" error, not a stuck commit) and keep-alive
// agents, so discovery and the following POST reuse one connection; and the egress policy
// (src/net/egress.ts): a literal address is checked before each request, a name on every address it
// resolves to when a connection is made (DNS rebinding cannot pass a name that looked harmless).
import http from 'node:http';
import https from 'node:https';
import type { HttpClient, GitHttpRequest, GitHttpResponse } from 'isomorphic-git';
import { EgressPolicy } from '../net/egress.js';

async function collect(body: GitHttpRequest['body']): Promise<Buffer | undefined> {
  if (!body) return undefined;
  const parts: Buffer[] = [];
  for await (const chunk of body as AsyncIterable<Uint8Array>) parts.push(Buffer.from(chunk));
  return Buffer.concat(parts);
}

export function createHttpClient(timeoutMs = 30_000, egress: EgressPolicy = new EgressPolicy()): HttpClient {
  const agents = {
    http: new http.Agent({ keepAlive: true, maxSockets: 8, lookup: egress.lookup }),
    https: new https.Agent({ keepAlive: true, maxSockets: 8, lookup: egress.lookup }),
  };
  return {
    async request(req: GitHttpRequest): Promise<GitHttpResponse> {
      const u = new URL(req.url);
      egress.assertHost(u.hostname);
      const body = await collect(req.body);
      const mod = u.protocol === 'https:' ? https : http;
      const agent = u.protocol === 'https:' ? agents.https : agents.http;
      const headers: Record<string, string | number> = { ...(req.headers ?? {}) };
      if (body) headers['Content-Length'] = body.length;
      return new Promise<GitHttpResponse>((resolve, reject) => {
        const r = mod.request(u, { method: req.method ?? 'GET', headers, agent }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('error', reject);
          res.on('end', () => {
            const data = Buffer.concat(chunks);
            resolve({
              url: req.url,
              method: req.method,
              statusCode: res.statusCode ?? 0,
              statusMessage: res.statusMessage ?? '',
              headers: Object.fromEntries(Object.entries(res.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(', ') : (v ?? '')])),
              body: (async function* () {
                yield new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
              })(),
            });
          });
        });
        r.setTimeout(timeoutMs, () => r.destroy(Object.assign(new Error(`no answer within ${timeoutMs} ms`), { code: 'ETIMEDOUT' })));
        r.on('error', reject);
        r.end(body);
      });
    },
  };
}
