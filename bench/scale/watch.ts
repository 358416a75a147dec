// A cluster-wide watch of GitTargets that notes, per tenant namespace, when its
// status.lastCommit.sha changes: the windows controller writes it once the commit was pushed
// (src/controllers/windows/target-status.ts), so it is the moment an edit became a pushed commit.
import https from 'node:https';
import type { Target } from '../common/load.js';
import { GV } from './tenants.js';

export interface CommitWatch {
  /** Resolves with the time (performance.now()) the tenant's sha differs from `before`. */
  next(ns: string, before: string): Promise<{ at: number; sha: string }>;
  stop(): void;
}

export function watchCommits(t: Target, rv: string): CommitWatch {
  const latest = new Map<string, { at: number; sha: string }>();
  const waiters = new Map<string, { before: string; resolve: (v: { at: number; sha: string }) => void }>();
  const agent = new https.Agent({ keepAlive: false, ca: t.tls.ca, cert: t.tls.cert, key: t.tls.key });
  const req = https.request({ host: t.host, port: t.port, method: 'GET', path: `${GV}/gittargets?watch=true&resourceVersion=${rv}&timeoutSeconds=3600`, agent });
  req.on('response', (res) => {
    let buf = '';
    res.on('data', (c: Buffer) => {
      buf += c.toString();
      for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (!line.trim()) continue;
        const ev = JSON.parse(line);
        const o = ev.object;
        const sha = o?.status?.lastCommit?.sha;
        if (!sha || !o.metadata?.namespace) continue;
        const ns = o.metadata.namespace as string;
        if (latest.get(ns)?.sha === sha) continue;
        const seen = { at: performance.now(), sha };
        latest.set(ns, seen);
        const w = waiters.get(ns);
        if (w && w.before !== sha) {
          waiters.delete(ns);
          w.resolve(seen);
        }
      }
    });
  });
  req.on('error', () => undefined);
  req.end();
  return {
    next(ns, before) {
      const cur = latest.get(ns);
      if (cur && cur.sha !== before) return Promise.resolve(cur);
      return new Promise((resolve) => waiters.set(ns, { before, resolve }));
    },
    stop() {
      req.destroy();
      agent.destroy();
    },
  };
}
