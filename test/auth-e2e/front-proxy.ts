// A test front proxy, shaped like kube-apiserver's aggregator: it listens on plain HTTP on
// 127.0.0.1, drops the client's Authorization and X-Remote-* headers, and forwards to the server
// over TLS with its own client certificate plus X-Remote-User / X-Remote-Group (one line per
// group) / X-Remote-Extra-<escaped key> for the identity it was told to speak for.
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { KeyPair } from '../support/pki.js';

export interface ProxiedIdentity {
  user: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

export interface FrontProxy {
  url: string;
  close(): Promise<void>;
}

/** client-go's headerKeyEscape: keep legal header-name characters, percent-encode the rest. */
function escapeExtraKey(k: string): string {
  return [...Buffer.from(k, 'utf8')]
    .map((b) => {
      const c = String.fromCharCode(b);
      return /[A-Za-z0-9!#$&'*+\-.^_`|~]/.test(c) ? c : `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
    })
    .join('');
}

export async function startFrontProxy(target: string, targetCAPem: string, cert: KeyPair, id: ProxiedIdentity): Promise<FrontProxy> {
  const server = http.createServer((req, res) => {
    const headers: string[] = [];
    for (let i = 0; i < req.rawHeaders.length; i += 2) {
      const name = req.rawHeaders[i]!;
      const lc = name.toLowerCase();
      if (lc === 'authorization' || lc.startsWith('x-remote-') || lc === 'host' || lc === 'connection') continue;
      headers.push(name, req.rawHeaders[i + 1]!);
    }
    headers.push('X-Remote-User', id.user);
    for (const g of id.groups ?? []) headers.push('X-Remote-Group', g);
    for (const [k, vs] of Object.entries(id.extra ?? {})) for (const v of vs) headers.push(`X-Remote-Extra-${escapeExtraKey(k)}`, v);
    const up = https.request(new URL(req.url ?? '/', target), {
      method: req.method, headers: headers as unknown as Record<string, string>, ca: targetCAPem, cert: cert.certPem, key: cert.keyPem, agent: false,
    }, (ur) => {
      const out: string[] = [];
      for (let i = 0; i < ur.rawHeaders.length; i += 2) {
        if (!['connection', 'transfer-encoding', 'keep-alive'].includes(ur.rawHeaders[i]!.toLowerCase())) out.push(ur.rawHeaders[i]!, ur.rawHeaders[i + 1]!);
      }
      res.writeHead(ur.statusCode ?? 502, out as unknown as Record<string, string>);
      ur.pipe(res);
    });
    up.on('error', (e) => {
      res.writeHead(502, { 'Content-Type': 'text/plain' });
      res.end(`front proxy: ${e.message}`);
    });
    req.pipe(up);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}
