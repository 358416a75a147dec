// The HTTP transport handed to isomorphic-git. Compared with isomorphic-git/http/node it adds a
// timeout (a hung server must become an "Unreachable" error, not a stuck commit) and keep-alive
// agents, so discovery and the following POST reuse one connection.
import http from 'node:http';
import https from 'node:https';
import type { HttpClient, GitHttpRequest, GitHttpResponse } from 'isomorphic-git';

const agents = {
  http: new http.Agent({ keepAlive: true, maxSockets: 8 }),
  https: new https.Agent({ keepAlive: true, maxSockets: 8 }),
};

async function collect(body: GitHttpRequest['body']): Promise<Buffer | undefined> {
  if (!body) return undefined;
  const parts: Buffer[] = [];
  for await (const chunk of body as AsyncIterable<Uint8Array>) parts.push(Buffer.from(chunk));
  return Buffer.concat(parts);
}

export function createHttpClient(timeoutMs = 30_000): HttpClient {
  return {
    async request(req: GitHttpRequest): Promise<GitHttpResponse> {
      const body = await collect(req.body);
      const u = new URL(req.url);
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
