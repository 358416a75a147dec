// Where an edit's seconds go, stage by stage: the server logs one `window committed` line per
// commit (src/controllers/windows/commit.ts) with the wall-clock milestones of its window, from the
// first change to the status naming the commit; this joins them with the bench's own PATCH and
// watch times (same machine, same wall clock) per tenant.
import { readdirSync, readFileSync } from 'node:fs';
import type { Readable } from 'node:stream';
import { quantile } from '../common/load.js';

/** The milestones of one committed window (epoch ms), as commit.ts logs them. */
interface Milestones {
  opened: number;
  lastChange: number;
  closed: number;
  started: number;
  engine: number;
  engineDone: number;
  recorded: number;
  /** Absent when the status write was refused (the line's `statusOwed` says why). */
  status?: number;
  /** When the git engine began the commit (src/git/engine.ts CommitTimings.startedAt). */
  engineStarted?: number;
}

export interface EditTimes {
  ns: string;
  /** Date.now() when the PATCH was sent, when its answer came, and when the bench's watch saw the new lastCommit. */
  sentAt: number;
  answeredAt: number;
  seenAt: number;
}

/** The stages, in path order: name → what it spans. */
export const STAGES: Array<[string, string, (m: Milestones, e: EditTimes, idleMs: number) => number]> = [
  ['PATCH sent → answered', 'the API write and its fact (64 connections for the edits)', (_m, e) => e.answeredAt - e.sentAt],
  ['PATCH answered → change in a window', 'the source watch event, the mirror\'s fact lookup and record CAS', (m, e) => m.opened - e.answeredAt],
  ['idle timer → window closed', 'last change + idleSeconds → the close was written (requeue timer, windows queue)', (m, _e, idle) => m.closed - (m.lastChange + idle)],
  ['closed → engine called', 'lease check, credentials', (m) => m.engine - m.closed],
  ['engine called → engine began', 'hand-off to the git worker, commits ahead of it there', (m) => (m.engineStarted ?? m.engine) - m.engine],
  ['engine began → engine answered', 'sync, build, write, push, and the answer back', (m) => m.engineDone - (m.engineStarted ?? m.engine)],
  ['engine answered → outcome recorded', 'the record\'s CAS', (m) => m.recorded - m.engineDone],
  ['outcome recorded → status written', 'record read, status subresource write', (m) => (m.status ?? NaN) - m.recorded],
  ['status written → seen by a watch', 'the GitTarget watch event reaching the bench', (m, e) => e.seenAt - (m.status ?? NaN)],
];

/** Collects the server's `window committed` lines per tenant namespace from its stderr. */
export function collectCommits(stderr: Readable): { forEdit(e: EditTimes): Milestones | undefined; stop(): void } {
  const byNs = new Map<string, Milestones[]>();
  let buf = '';
  const onData = (c: Buffer) => {
    buf += c.toString();
    for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (!line.includes('"window committed"')) continue;
      try {
        const o = JSON.parse(line) as { gitTarget?: string; at?: Milestones; engineMs?: { startedAt?: number } };
        if (!o.gitTarget || !o.at) continue;
        const ns = o.gitTarget.split('/')[0]!;
        const list = byNs.get(ns) ?? [];
        list.push({ ...o.at, engineStarted: o.engineMs?.startedAt });
        byNs.set(ns, list);
      } catch {
        // Another writer's partial line: not ours.
      }
    }
  };
  stderr.on('data', onData);
  return {
    // The first window that opened after the edit was sent (the snapshot's came long before).
    forEdit: (e) => byNs.get(e.ns)?.find((m) => m.opened >= e.sentAt - 5),
    stop: () => void stderr.off('data', onData),
  };
}

export interface StageFigure {
  stage: string;
  what: string;
  p50: number;
  p99: number;
  max: number;
}

/** p50/p99/max of each stage over the edits whose commit line was found. */
export function stageFigures(edits: EditTimes[], find: (e: EditTimes) => Milestones | undefined, idleMs: number): { figures: StageFigure[]; matched: number } {
  const rows = edits.map((e) => ({ e, m: find(e) })).filter((x): x is { e: EditTimes; m: Milestones } => x.m !== undefined);
  const figures = STAGES.map(([stage, what, f]) => {
    // A commit whose status write was refused (owed to the next reconcile) logs no `status`
    // milestone: its last two stages are left out, not counted as NaN.
    const xs = rows.map(({ e, m }) => f(m, e, idleMs)).filter(Number.isFinite);
    return { stage, what, p50: quantile(xs, 0.5), p99: quantile(xs, 0.99), max: Math.max(...xs) };
  });
  return { figures, matched: rows.length };
}

/** Storage operations counted by the server's reverser_storage_operation_duration_seconds, as "operation resource" → count. */
export function storageOps(metricsText: string): Map<string, number> {
  const out = new Map<string, number>();
  const re = /^reverser_storage_operation_duration_seconds_count\{([^}]*)\} ([0-9.e+]+)$/gm;
  for (let m = re.exec(metricsText); m; m = re.exec(metricsText)) {
    const l = Object.fromEntries([...m[1]!.matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
    const k = `${l.operation} ${l.resource}`;
    out.set(k, (out.get(k) ?? 0) + Number(m[2]));
  }
  return out;
}

/** Per edit, the storage operations that grew between two storageOps readings, largest first. */
export function opsPerEdit(before: Map<string, number>, after: Map<string, number>, edits: number): Array<[string, number]> {
  return [...after].map(([k, v]) => [k, (v - (before.get(k) ?? 0)) / edits] as [string, number]).filter(([, v]) => v > 0).sort((a, b) => b[1] - a[1]);
}

/** CPU time (ms, user + system) of a process's main thread and of all its other threads (the git workers, libuv's pool, V8's), from /proc. */
export function threadCpuMs(pid: number, ticksPerSecond = 100): { main: number; others: number } {
  let main = 0;
  let others = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    let s: string;
    try {
      s = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    } catch {
      continue; // a thread that ended meanwhile
    }
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
    const ms = ((Number(f[11]) + Number(f[12])) * 1000) / ticksPerSecond;
    if (Number(tid) === pid) main += ms;
    else others += ms;
  }
  return { main, others };
}
