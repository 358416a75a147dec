// Turns of the event loop for long work, one at a time. Work that has run for a whole slice
// (inSlices in work.ts, the operation loop of src/apiserver/patch.ts) waits here before its next
// slice. Each turn of the event loop resumes one waiting piece of work, in arrival order, so that
// however many heavy requests are in progress, a light request (a /healthz, a small get) waits for
// at most one slice between two steps of its own. Without this, each heavy request yielded with
// its own setImmediate and all of them ran a slice in every turn: three JSON patches of the
// "JSON-patch amplification" attack (bench/attack/attacks-http.ts) were three slices, and their
// garbage, between any two steps of every other request, which is how one /healthz took 141 ms.
//
// Work that finishes within one slice never comes here, so small requests are not slowed down.

const waiting: Array<() => void> = [];
let scheduled = false;
let resumed = 0;

function resumeOne(): void {
  const next = waiting.shift();
  // setImmediate from within an immediate runs in the next turn, after the I/O of this one.
  if (waiting.length > 0) setImmediate(resumeOne);
  else scheduled = false;
  if (next) {
    resumed++;
    next();
  }
}

/** Resolves in a later turn of the event loop, when every piece of work that waited before has had one turn. */
export function nextTurn(): Promise<void> {
  return new Promise<void>((resolve) => {
    waiting.push(resolve);
    if (!scheduled) {
      scheduled = true;
      setImmediate(resumeOne);
    }
  });
}

/** How many times waiting work was resumed, and how much waits now (for tests and diagnostics). */
export function turnStats(): { resumed: number; waiting: number } {
  return { resumed, waiting: waiting.length };
}
