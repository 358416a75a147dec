// A process writing to an embedded store while snapshots of a large state run, for
// embedded-snapshot.test.ts to SIGKILL at a chosen moment. Prints one line per event:
//   LOADED                 the large objects are in the store
//   SNAP <n>               a snapshot is in progress (seen after an acknowledged write)
//   DONE <n>               n snapshots were written
//   ACK <writer> <i>       writer's i-th write (data.i = i) was acknowledged
// argv: dataDir, large objects, KiB each, writers.
import { createEmbeddedStore } from '../../src/storage/embedded.js';
import type { KubeObject } from '../../src/storage/types.js';
import { CM, cm, key, rvOf } from './contract.js';

const [dataDir, objectsArg, kibArg, writersArg] = process.argv.slice(2);
const objects = Number(objectsArg);
const kib = Number(kibArg);
const writers = Number(writersArg);

const store = await createEmbeddedStore({ dataDir, snapshotEvery: 300, compactLogBytes: 1 << 30 });
const out = (line: string) => process.stdout.write(line + '\n');
let seenSnapshots = store.durableStats()!.snapshots;
let snapping = false;
const report = () => {
  const s = store.durableStats()!;
  if (s.snapshots > seenSnapshots) (seenSnapshots = s.snapshots), out(`DONE ${s.snapshots}`);
  if (s.snapshotting && !snapping) out(`SNAP ${s.snapshots + 1}`);
  snapping = s.snapshotting;
};

for (let i = 0; i < objects; i += 20) {
  await Promise.all(Array.from({ length: Math.min(20, objects - i) }, async (_, j) => {
    const name = `large-${i + j}`;
    if (!(await store.get(CM, key(name)))) await store.create(CM, key(name), cm(name, 'default', { v: `${name}:`.padEnd(kib * 1024, 'x') }));
  }));
}
out('LOADED');

async function writer(w: number): Promise<never> {
  const k = key(`writer-${w}`);
  let cur: KubeObject | undefined = await store.get(CM, k);
  for (let i = cur ? Number((cur.data as Record<string, string>).i) + 1 : 1; ; i++) {
    const obj = cm(k.name, 'default', { i: String(i) });
    cur = cur ? await store.update(CM, k, obj, rvOf(cur)) : await store.create(CM, k, obj);
    out(`ACK ${w} ${i}`);
    report();
  }
}
await Promise.all(Array.from({ length: writers }, (_, w) => writer(w)));
