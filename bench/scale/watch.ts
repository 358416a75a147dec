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
  const waiters = new Map<string, { before: string; resolve: (v: { at: number; sha: string }) => void; reject: (e: Error) => void }>();
  // A watch that ends or fails fails every wait on it at once (the bench reports why), rather
  // than each edit waiting out its own deadline for events that cannot come.
  let ended: Error | undefined;
  let stopped = false;
  const end = (e: Error) => {
    if (ended || stopped) return;
    ended = e;
    for (const w of waiters.values()) w.reject(e);
    waiters.clear();
  };
  const agent = new https.Agent({ keepAlive: false, ca: t.tls.ca, cert: t.tls.cert, key: t.tls.key });
  const req = https.request({ host: t.host, port: t.port, method: 'GET', path: `${GV}/gittargets?watch=true&resourceVersion=${rv}&timeoutSeconds=3600`, agent });
  req.on('response', (res) => {
    if (res.statusCode !== 200) {
      end(new Error(`the GitTarget watch answered HTTP ${res.statusCode}`));
      res.resume();
      return;
    }
    res.on('end', () => end(new Error('the GitTarget watch ended')));
    res.on('error', (e) => end(new Error(`the GitTarget watch failed: ${e.message}`)));
    let buf = '';
    res.on('data', (c: Buffer) => {
      buf += c.toString();
      for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (!line.trim()) continue;
        let ev: any;
        try {
          ev = JSON.parse(line);
        } catch {
          end(new Error(`the GitTarget watch sent a line that is not JSON: ${line.slice(0, 200)}`));
          return;
        }
        if (ev.type === 'ERROR') end(new Error(`the GitTarget watch sent an ERROR event: ${JSON.stringify(ev.object).slice(0, 300)}`));
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
  req.on('error', (e) => end(new Error(`the GitTarget watch failed: ${e.message}`)));
  req.end();
  return {
    next(ns, before) {
      const cur = latest.get(ns);
      if (cur && cur.sha !== before) return Promise.resolve(cur);
      if (ended) return Promise.reject(ended);
      return new Promise((resolve, reject) => waiters.set(ns, { before, resolve, reject }));
    },
    stop() {
      stopped = true;
      req.destroy();
      agent.destroy();
    },
  };
}
