// Runs the process's slow periodic jobs (a CA file's stat poll, the APIService re-check, the
// authority re-verification) from one unref'd timer, on one grid: every job of period P runs at
// the multiples of P counted from the same origin. Jobs of one period then run in the same wake-up,
// and a 60 s job and a 5 min job meet every fifth minute, where separate setIntervals started a few
// ms apart woke an idle process once each. On this VM every wake-up of an idle node main thread
// costs ~0.2 ms of CPU whatever it does (docs/architecture.md, "At rest and at start-up").
//
// Only the phase changes: a job still runs once per period, its first run coming at the next grid
// point, at most one period after it was registered. A leaf module: it imports nothing of ours.

type Job = () => void;

interface Group {
  readonly periodMs: number;
  readonly jobs: Set<Job>;
  /** performance.now() of the group's next grid point. */
  nextDue: number;
}

/**
 * A timer firing this close before a group's grid point counts as on time. Node counts a timeout
 * from the event loop's cached time, which is older than performance.now() by however long the
 * current turn has run, so a timer armed late in a busy turn fires that much early; running the
 * job then saves a wake-up to run it a few ms later. A hundredth of the period (at most 1 s, at
 * least 2 ms, node's rounding).
 */
function earlyMs(periodMs: number): number {
  return Math.max(2, Math.min(1000, periodMs / 100));
}

const groups = new Map<number, Group>();
let timer: NodeJS.Timeout | undefined;
let armedFor = Infinity;
/** Wake-ups of the shared timer so far (the tests compare it with the jobs run). */
let wakeUps = 0;

function nextGridPoint(periodMs: number, after: number): number {
  return (Math.floor(after / periodMs) + 1) * periodMs;
}

function arm(): void {
  let due = Infinity;
  for (const g of groups.values()) due = Math.min(due, g.nextDue);
  if (due === armedFor) return;
  clearTimeout(timer);
  timer = undefined;
  armedFor = due;
  if (due === Infinity) return;
  timer = setTimeout(fire, Math.max(0, due - performance.now()));
  timer.unref();
}

function fire(): void {
  timer = undefined;
  armedFor = Infinity;
  wakeUps++;
  const now = performance.now();
  for (const g of [...groups.values()]) {
    if (g.nextDue > now + earlyMs(g.periodMs)) continue;
    g.nextDue = nextGridPoint(g.periodMs, Math.max(now, g.nextDue));
    for (const job of [...g.jobs]) {
      // A job that was stopped by an earlier one in this wake-up does not run.
      if (!g.jobs.has(job)) continue;
      try {
        job();
      } catch {
        // One job's failure is its own (each caller handles its errors); the others still run.
      }
    }
  }
  arm();
}

/**
 * Runs `job` every `every` ms (rounded to a whole ms) on the shared grid, until the returned
 * function is called. The timer is unref'd: it never keeps the process alive.
 */
export function runEvery(every: number, job: Job): () => void {
  if (!Number.isFinite(every) || every <= 0) throw new Error(`runEvery: the period must be a positive number of ms, got ${every}`);
  const periodMs = Math.max(1, Math.round(every));
  let g = groups.get(periodMs);
  if (!g) {
    g = { periodMs, jobs: new Set(), nextDue: nextGridPoint(periodMs, performance.now()) };
    groups.set(periodMs, g);
  }
  // The same function registered twice is two jobs.
  const own: Job = () => job();
  g.jobs.add(own);
  arm();
  const group = g;
  return () => {
    if (!group.jobs.delete(own)) return;
    if (group.jobs.size === 0 && groups.get(periodMs) === group) {
      groups.delete(periodMs);
      arm();
    }
  };
}

/** How many times the shared timer has fired, and how many periods have jobs (tests). */
export function sharedTimerStats(): { wakeUps: number; periods: number } {
  return { wakeUps, periods: groups.size };
}
