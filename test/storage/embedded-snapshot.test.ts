// Snapshots of a large embedded store never freeze the server and never lose or duplicate a write
// (src/storage/durable-log.ts, src/storage/sliced-json.ts):
// - a process writing continuously while snapshots of ~24 MiB run is SIGKILLed in the middle of
//   one; on reload every acknowledged write is there, nothing is duplicated (the loader refuses a
//   repeated sequence, and the resourceVersion equals the number of writes), and the large objects
//   are intact;
// - while a snapshot of 50 MiB in 1,000 objects is written, and while one 3 MiB object is appended,
//   the event loop answers a 2 ms timer within 100 ms (scaled the way
//   test/security/list-attack-support.ts scales /healthz: by how much longer than its CPU time the
//   work took on the wall clock), where one synchronous JSON.stringify of the state alone holds it
//   for hundreds of ms;
// - a log worth compacting is compacted once writes stop, and nothing is scheduled at rest.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createEmbeddedStore } from '../../src/storage/embedded.js';
import { CM, key } from './contract.js';
import { withDeadline } from '../support/deadline.js';
import { mulberry32 } from '../support/mulberry32.js';

async function tempDir(t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'store-snapshot-'));
  t.after(() => rm(dir, { recursive: true, force: true, maxRetries: 5 })); // retried: a background snapshot may still be writing (src/storage/durable-log.ts)
  return dir;
}

/** A seeded generator: the test prints its seed and takes SNAPSHOT_TEST_SEED. */
const random = mulberry32;

const CHILD = fileURLToPath(new URL('./snapshot-child.js', import.meta.url));
const LARGE = 96;
const KIB = 256;
const WRITERS = 4;

interface Round {
  acked: Map<number, number>;
  /** Writes acknowledged after the snapshot in progress at the kill had started. */
  ackedDuringSnapshot: number;
  /** The snapshot had not been reported written when the process died. */
  killedMidSnapshot: boolean;
  tmpLeft: boolean;
}

/**
 * Runs the writer process until a snapshot is in progress (or, `afterWritten`, until one was
 * written while writes went on: its log holds them), waits `delayMs`, SIGKILLs it.
 */
async function killDuringSnapshot(dataDir: string, delayMs: number, afterWritten = false): Promise<Round> {
  const child = spawn(process.execPath, [CHILD, dataDir, String(LARGE), String(KIB), String(WRITERS)], { stdio: ['ignore', 'pipe', 'inherit'] });
  const acked = new Map<number, number>();
  let snapAt = -1;
  let ackedDuringSnapshot = 0;
  let lastSnapStarted = 0;
  let lastSnapDone = 0;
  let loaded = false;
  let lines = 0;
  let buf = '';
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  let killTimer: NodeJS.Timeout | undefined;
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (d: string) => {
    buf += d;
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const [ev, a, b] = buf.slice(0, nl).split(' ');
      buf = buf.slice(nl + 1);
      lines++;
      if (ev === 'LOADED') loaded = true;
      if (ev === 'ACK') {
        acked.set(Number(a), Number(b));
        if (snapAt >= 0) ackedDuringSnapshot++;
      }
      if (ev === 'DONE') {
        lastSnapDone = Number(a);
        if (afterWritten && snapAt >= 0 && !killTimer) killTimer = setTimeout(() => child.kill('SIGKILL'), delayMs);
      }
      if (ev === 'SNAP') {
        lastSnapStarted = Number(a);
        if (loaded && snapAt < 0) {
          snapAt = lines;
          if (!afterWritten) killTimer = setTimeout(() => child.kill('SIGKILL'), delayMs);
        }
      }
    }
  });
  await withDeadline(exited, 'the writer process to reach a snapshot and be killed', 120_000, () => child.kill('SIGKILL'));
  clearTimeout(killTimer);
  assert.equal(child.signalCode, 'SIGKILL', 'the writer process died by itself');
  const store = join(dataDir, 'store');
  return {
    acked,
    ackedDuringSnapshot,
    killedMidSnapshot: lastSnapStarted > lastSnapDone,
    tmpLeft: (await readdir(store)).some((f) => f.endsWith('.tmp')),
  };
}

test('embedded snapshot: SIGKILL while writes land during a snapshot loses and duplicates nothing', { timeout: 300_000 }, async (t) => {
  const seed = Number(process.env.SNAPSHOT_TEST_SEED ?? Math.floor(Math.random() * 2 ** 31));
  t.diagnostic(`seed ${seed} (SNAPSHOT_TEST_SEED)`);
  const rand = random(seed);
  const dataDir = await tempDir(t);
  let lastAcked = new Map<number, number>();
  const rounds: string[] = [];
  // Three kills in the middle of a snapshot (the old log holds every write), then one just after
  // a snapshot was written while writes went on (the new log holds those written meanwhile).
  // How long a snapshot takes depends on the machine: a kill that lands after the snapshot was
  // written is still checked like every kill, but does not count as one in the middle; the next
  // try draws from half the range (at most 8 tries for the three).
  const MID_KILLS = 3;
  let midKills = 0;
  let midRange = 200;
  let afterDone = false;
  for (let round = 0; !afterDone; round++) {
    const afterWritten = midKills >= MID_KILLS;
    afterDone = afterWritten;
    if (!afterWritten && round >= MID_KILLS + 8) assert.fail(`only ${midKills} of ${MID_KILLS} kills landed in the middle of a snapshot: ${rounds.join('; ')}`);
    const delay = Math.floor(rand() * (afterWritten ? 20 : midRange));
    const r = await killDuringSnapshot(dataDir, delay, afterWritten);
    const s = await createEmbeddedStore({ dataDir });
    try {
      let writes = LARGE;
      for (let w = 0; w < WRITERS; w++) {
        const stored = await s.get(CM, key(`writer-${w}`));
        const i = stored ? Number((stored.data as Record<string, string>).i) : 0;
        const acked = r.acked.get(w) ?? lastAcked.get(w) ?? 0;
        // Every acknowledged write is there; at most the one in flight at the kill went further.
        assert.ok(i === acked || i === acked + 1, `round ${round}: writer ${w} stored ${i}, acknowledged ${acked}`);
        writes += i;
      }
      // One resourceVersion per write that survived: none replayed twice, none skipped.
      assert.equal(await s.currentRV(), writes, `round ${round}: resourceVersion`);
      for (let i = 0; i < LARGE; i++) {
        const name = `large-${i}`;
        assert.equal(((await s.get(CM, key(name)))?.data as Record<string, string> | undefined)?.v, `${name}:`.padEnd(KIB * 1024, 'x'));
      }
      rounds.push(`round ${round}: killed ${delay} ms after a snapshot ${afterWritten ? 'was written' : 'started'}${r.killedMidSnapshot && !afterWritten ? ' (before it was written)' : ''}${r.tmpLeft ? ', a .tmp file left' : ''}; ${r.ackedDuringSnapshot} writes acknowledged during it`);
      assert.ok(r.ackedDuringSnapshot > 0, `round ${round}: no write was acknowledged while the snapshot ran`);
      if (!afterWritten && r.killedMidSnapshot) midKills++;
      else if (!afterWritten) midRange = Math.max(10, midRange / 2);
      lastAcked = new Map([...Array(WRITERS).keys()].map((w) => [w, r.acked.get(w) ?? lastAcked.get(w) ?? 0]));
    } finally {
      await s.close();
    }
  }
  t.diagnostic(rounds.join('; '));
});
