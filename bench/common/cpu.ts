// CPU accounting and CPU placement for benchmarks: how much CPU time a process (every thread of
// it) spent over a measurement, read from /proc/<pid>/stat; how many commands Redis executed (INFO
// commandstats); and pinning the load generator and the system under test to different CPUs with
// taskset, so the load generator's own cost does not compete with the server it measures.
import { execFileSync } from 'node:child_process';
import type { Redis } from 'ioredis';
import { readdirSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';

let ticks: number | undefined;
function clockTicks(): number {
  if (ticks === undefined) {
    try {
      ticks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticks = 100;
    }
  }
  return ticks;
}

/** User + system CPU time of process `pid` (all its threads) so far, in ms; 10 ms resolution at CLK_TCK 100. */
export function processCpuMs(pid: number): number {
  const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name, which is in parentheses and may hold spaces: state is field 3,
  // utime field 14, stime field 15 (proc(5)).
  const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
  return ((Number(f[11]) + Number(f[12])) * 1000) / clockTicks();
}

/**
 * CPU time of process `pid` so far (ms, every live thread), from the scheduler's own accounting
 * (/proc/<pid>/task/<tid>/schedstat, nanoseconds): fine enough to tell 0.1 ms of CPU a second at
 * rest from none, which /proc/<pid>/stat's 10 ms ticks cannot over a minute. A thread that ended
 * during a measurement takes its time with it; at rest none does.
 */
export function processSchedCpuMs(pid: number): number {
  return schedstatSum(pid, 0) / 1e6;
}

/** One field of /proc/<pid>/task/<tid>/schedstat summed over every live thread: 0 ns on CPU, 2 times run. */
function schedstatSum(pid: number, field: number): number {
  let sum = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      sum += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[field]);
    } catch {
      // The thread ended meanwhile.
    }
  }
  return sum;
}

/**
 * How many times the scheduler ran the threads of process `pid` so far (every live thread's
 * schedstat, third field): at rest, its wake-ups. Each costs a fixed price however little it does.
 */
export function processSchedRuns(pid: number): number {
  return schedstatSum(pid, 2);
}

/** User + system CPU time (ms) of each thread of process `pid` so far, summed by thread name (comm). */
export function threadCpuMs(pid: number): Record<string, number> {
  const out: Record<string, number> = {};
  let tids: string[] = [];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const tid of tids) {
    try {
      const s = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const name = s.slice(s.indexOf('(') + 1, s.lastIndexOf(')'));
      const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
      out[name] = (out[name] ?? 0) + ((Number(f[11]) + Number(f[12])) * 1000) / clockTicks();
    } catch {
      // The thread ended meanwhile.
    }
  }
  return out;
}

/** This process's own CPU time so far (ms), microsecond resolution. */
export function selfCpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

/** Snapshot of CPU counters; `delta()` gives ms spent by each since the snapshot. */
export function cpuMeter(pids: Record<string, number>): { delta(): Record<string, number> } {
  const start = Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, processCpuMs(pid)]));
  const self0 = selfCpuMs();
  return {
    delta() {
      const out: Record<string, number> = { self: selfCpuMs() - self0 };
      for (const [k, pid] of Object.entries(pids)) out[k] = processCpuMs(pid) - start[k]!;
      return out;
    },
  };
}

/** Calls per command so far (INFO commandstats), e.g. { hget: 1200, get: 3 }; diff two to count a run's. */
export async function redisCommandCalls(redis: Redis): Promise<Record<string, number>> {
  const text = await redis.info('commandstats');
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) out[m[1]!] = Number(m[2]);
  return out;
}

/** `after - before` per command, without INFO itself. */
export function commandDelta(before: Record<string, number>, after: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(after)) if (k !== 'info' && v > (before[k] ?? 0)) out[k] = v - (before[k] ?? 0);
  return out;
}

export interface Pinning {
  /** CPU list (taskset -c syntax) for the load generator: this process. */
  loadGenerator: string;
  /** CPU list for the system under test: servers, floor, redis-server. */
  systemUnderTest: string;
}

function hasTaskset(): boolean {
  try {
    execFileSync('taskset', ['-V'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** The CPUs this process may run on (/proc/self/status Cpus_allowed_list), e.g. [0, 1]. */
export function allowedCpus(): number[] {
  try {
    const list = /^Cpus_allowed_list:\s*(\S+)/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? '';
    const ids = list.split(',').flatMap((part) => {
      const [a, b] = part.split('-').map(Number);
      return b === undefined ? [a!] : Array.from({ length: b - a! + 1 }, (_, i) => a! + i);
    });
    if (ids.length && ids.every(Number.isInteger)) return ids;
  } catch {
    // not Linux: fall through
  }
  return Array.from({ length: availableParallelism() }, (_, i) => i);
}

/**
 * Pins this process (every thread: `taskset -a`) to the last allowed CPU and returns the CPUs left
 * for the system under test; undefined (and nothing pinned) with fewer than 2 CPUs or without
 * taskset. On 2 CPUs: load generator on cpu 1, system under test on cpu 0.
 */
export function pinLoadGenerator(): Pinning | undefined {
  const ids = allowedCpus();
  if (ids.length < 2 || !hasTaskset()) return undefined;
  const loadGenerator = String(ids[ids.length - 1]);
  const systemUnderTest = ids.slice(0, -1).join(',');
  try {
    execFileSync('taskset', ['-a', '-p', '-c', loadGenerator, String(process.pid)], { stdio: 'ignore' });
  } catch (e) {
    process.stderr.write(`not pinned: taskset refused (${(e as Error).message.split('\n')[0]})\n`);
    return undefined;
  }
  return { loadGenerator, systemUnderTest };
}
