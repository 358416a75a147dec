// The git engine's thread. isomorphic-git does synchronous zlib, SHA-1 and fs work that would
// stall the API's event loop (a 10,000-object commit blocked it for ~600 ms), so the engine lives
// here and the main thread only exchanges messages with it (worker.ts).
//
// Branch leases still come from the main thread's Store, proxied over the message port: the
// embedded store is one process's memory plus its data directory (locked to that process), so a
// second connection to it from here is impossible, and one code path for both backends keeps the
// fencing rules in one place.
import { parentPort, workerData } from 'node:worker_threads';
import { GitEngine } from './engine.js';
import { GitEngineError } from './errors.js';
import type { LeaseProvider } from './lease.js';
import type { FromWorker, LeaseOp, ToWorker, WorkerEngineOptions } from './worker-protocol.js';
import type { CommitInput } from './engine.js';
import { remoteWork } from './cancel.js';

const port = parentPort!;
const opts = workerData as WorkerEngineOptions;
let nextLeaseCall = 1;
const leaseCalls = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();

function leaseCall(op: LeaseOp, ...args: unknown[]): Promise<never> {
  const id = nextLeaseCall++;
  return new Promise((resolve, reject) => {
    leaseCalls.set(id, { resolve: resolve as (v: unknown) => void, reject });
    port.postMessage({ type: 'lease', id, op, args } satisfies FromWorker);
  });
}

const lease: LeaseProvider = {
  acquireLease: (...a) => leaseCall('acquireLease', ...a),
  renewLease: (...a) => leaseCall('renewLease', ...a),
  checkLease: (...a) => leaseCall('checkLease', ...a),
  releaseLease: (...a) => leaseCall('releaseLease', ...a),
};

const { useLeases, ...engineOpts } = opts;
const engine = new GitEngine({ ...engineOpts, lease: useLeases ? lease : undefined });

/** Commits in progress, by id, for their 'cancel' message. */
const running = new Map<number, AbortController>();

/** Changes of large commits arriving in slices, by commit id, until their 'commit' message. */
const slices = new Map<number, CommitInput['changes']>();

port.on('message', (msg: ToWorker) => {
  if (msg.type === 'changes') {
    const got = slices.get(msg.id);
    if (got) for (const c of msg.changes) got.push(c);
    else slices.set(msg.id, msg.changes);
    return;
  }
  if (msg.type === 'cancel') {
    running.get(msg.id)?.abort();
    return;
  }
  if (msg.type === 'commit' && slices.has(msg.id)) {
    msg.input.changes = [...slices.get(msg.id)!, ...msg.input.changes];
    slices.delete(msg.id);
  }
  if (msg.type === 'lease-reply') {
    const call = leaseCalls.get(msg.id);
    leaseCalls.delete(msg.id);
    if (!call) return;
    if (msg.ok) call.resolve(msg.value);
    else call.reject(new Error(msg.message));
    return;
  }
  const controller = new AbortController();
  running.set(msg.id, controller);
  const work: Promise<FromWorker> = remoteWork.run(controller.signal, () =>
    msg.type === 'list'
      ? engine.listFolder(msg.input).then((refs) => ({ type: 'listing', id: msg.id, ok: true, refs }))
      : msg.type === 'scan'
        ? engine.scan(msg.input).then((report) => ({ type: 'scanned', id: msg.id, ok: true, report }))
        : engine.commit(msg.input).then((result) => ({ type: 'result', id: msg.id, ok: true, result })),
  );
  void work.finally(() => running.delete(msg.id)).catch(() => undefined);
  work.then(
    (answer) => port.postMessage(answer),
    (e: unknown) => {
      const err = e instanceof GitEngineError ? e : undefined;
      port.postMessage({
        type: 'result',
        id: msg.id,
        ok: false,
        reason: err?.reason ?? 'Internal',
        message: (e as Error)?.message ?? String(e),
        retryable: err?.retryable ?? false,
      } satisfies FromWorker);
    },
  );
});

// Everything above ran (the modules are loaded, the engine built): GitWorker.whenReady resolves.
port.postMessage({ type: 'ready' } satisfies FromWorker);
