// The embedded store's files used to accept damage silently (a deleted
// snapshot, a deleted line, an edited value, a forged record). Each record now carries its sequence
// number and a checksum and the log names the snapshot it continues; damage refuses start-up with
// the file, the byte offset and how to recover. Only a torn tail is dropped (logged at warn).
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { appendFile, cp, mkdtemp, readFile, rm, truncate, unlink, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createEmbeddedStore } from '../../src/storage/embedded.js';
import type { KubeObject, Store } from '../../src/storage/types.js';
import { GT, cm, key } from '../storage/contract.js';
import { startServer, gitTarget, ns } from '../support/server.js';
import { serveUntilExit } from './serve-process.js';

async function tempDir(t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'sec-store-'));
  t.after(() => rm(dir, { recursive: true, force: true, maxRetries: 5 })); // retried: a background snapshot may still be writing (src/storage/durable-log.ts)
  return dir;
}

const RESTORE = (dir: string) => `Nothing was loaded or changed. To recover, restore ${dir} from a backup`;
const CUT = (dir: string, file: string, off: number) =>
  `${RESTORE(dir)}; or, accepting the loss of every write recorded from byte ${off} on, cut the log there (truncate -s ${off} ${file}) and start again`;

interface Crashed {
  dir: string;
  store: string;
  log: string;
  snapshot: string;
  /** Objects acknowledged before the crash, by name. */
  acked: Map<string, KubeObject>;
  snapshotId: string;
}

/**
 * A data directory as a crash leaves it: 3 objects in a snapshot (clean stop), then 4 more in the
 * log (copied while the second store was still open).
 */
async function crashedDir(t: TestContext): Promise<Crashed> {
  const dir = await tempDir(t);
  const acked = new Map<string, KubeObject>();
  const s1 = await createEmbeddedStore({ dataDir: dir });
  for (const n of ['a', 'b', 'c']) acked.set(n, await s1.create(GT, key(n), cm(n)));
  await s1.close();
  const s2 = await createEmbeddedStore({ dataDir: dir });
  for (const n of ['d', 'e', 'f', 'g']) acked.set(n, await s2.create(GT, key(n), cm(n)));
  const crash = await tempDir(t);
  await cp(join(dir, 'store'), join(crash, 'store'), { recursive: true });
  await s2.close();
  const store = join(crash, 'store');
  const snapshot = join(store, 'snapshot.json');
  const header = JSON.parse((await readFile(snapshot, 'utf8')).split('\n')[0]!);
  return { dir: crash, store, log: join(store, 'log.jsonl'), snapshot, acked, snapshotId: header.id };
}

/** Opening must refuse with exactly this message (and a refusal's exit code 2). */
async function refuses(dir: string, message: string): Promise<void> {
  await assert.rejects(createEmbeddedStore({ dataDir: dir }), (e: Error & { exitCode?: number }) => {
    assert.equal(e.message, message);
    assert.equal(e.exitCode, 2);
    return true;
  });
}

async function logLines(file: string): Promise<string[]> {
  return (await readFile(file, 'utf8')).split(/(?<=\n)/);
}

function offsetOf(lines: string[], i: number): number {
  return Buffer.byteLength(lines.slice(0, i).join(''));
}

async function names(s: Store): Promise<string[]> {
  return (await s.list(GT)).items.map((o) => o.metadata.name!);
}

test('store: an intact crashed directory loads every acknowledged write', async (t) => {
  const c = await crashedDir(t);
  const s = await createEmbeddedStore({ dataDir: c.dir });
  t.after(() => s.close());
  assert.deepEqual(await names(s), ['a', 'b', 'c', 'd', 'e', 'f', 'g']);
  assert.deepEqual(await s.get(GT, key('g')), c.acked.get('g'));
  assert.equal(await s.currentRV(), 7);
});

test('store: snapshot.json deleted refuses start-up naming the snapshot the log continues', async (t) => {
  const c = await crashedDir(t);
  await unlink(c.snapshot);
  await refuses(c.dir, `embedded store damaged: ${c.log} at byte 0: continues snapshot ${c.snapshotId} (sequence 3), but ${c.snapshot} is missing. ` +
    `${RESTORE(c.store)} (a snapshot cannot be partly recovered)`);
});

test('store: one complete line deleted from the middle of the log is a gap', async (t) => {
  const c = await crashedDir(t);
  const lines = await logLines(c.log); // header, d, e, f, g
  assert.equal(lines.length, 5);
  await writeFile(c.log, [...lines.slice(0, 2), ...lines.slice(3)].join(''));
  const off = offsetOf(lines, 2);
  await refuses(c.dir, `embedded store damaged: ${c.log} at byte ${off}: the record has sequence 6 where 5 was expected (records are missing). ${CUT(c.store, c.log, off)}`);
});

test('store: only the final newline removed keeps the acknowledged last write', async (t) => {
  const c = await crashedDir(t);
  const text = await readFile(c.log, 'utf8');
  await writeFile(c.log, text.slice(0, -1));
  const warnings: unknown[] = [];
  const s = await createEmbeddedStore({ dataDir: c.dir, warn: (m, f) => warnings.push([m, f]) });
  t.after(() => s.close());
  assert.deepEqual(await s.get(GT, key('g')), c.acked.get('g'));
  assert.deepEqual(warnings, []);
  // The newline is back, so the next append starts a line of its own.
  assert.equal(await readFile(c.log, 'utf8'), text);
  await s.create(GT, key('h'), cm('h'));
  assert.equal((await logLines(c.log)).length, 6);
});

test('store: the last complete record made invalid is refused, not dropped', async (t) => {
  const c = await crashedDir(t);
  const lines = await logLines(c.log);
  const last = lines[4]!;
  lines[4] = last.slice(0, 60) + last.slice(61); // one byte of the payload gone: no longer JSON
  await writeFile(c.log, lines.join(''));
  const off = offsetOf(lines, 4);
  await refuses(c.dir, `embedded store damaged: ${c.log} at byte ${off}: the record fails its checksum (the record was changed or damaged). ${CUT(c.store, c.log, off)}`);
});

test('store: a value edited inside valid JSON fails its checksum', async (t) => {
  const c = await crashedDir(t);
  const lines = await logLines(c.log);
  assert.match(lines[2]!, /"name":"e"/);
  lines[2] = lines[2]!.replace('"name":"e"', '"name":"x"');
  await writeFile(c.log, lines.join(''));
  const off = offsetOf(lines, 2);
  await refuses(c.dir, `embedded store damaged: ${c.log} at byte ${off}: the record fails its checksum (the record was changed or damaged). ${CUT(c.store, c.log, off)}`);
});

test('store: a forged record appended is refused (plain, or with a valid checksum and a made-up resourceVersion)', async (t) => {
  const c = await crashedDir(t);
  const before = await readFile(c.log, 'utf8');
  const off = Buffer.byteLength(before);
  const obj = { ...cm('z'), metadata: { name: 'z', namespace: 'default', resourceVersion: '999999' } };
  const payload = JSON.stringify({ s: 8, op: 'put', r: 'configbutler.ai/gittargets', k: ['_', 'default', 'z'], t: 'ADDED', o: obj });
  await appendFile(c.log, payload + '\n');
  await refuses(c.dir, `embedded store damaged: ${c.log} at byte ${off}: the record is not a record of this format. ${CUT(c.store, c.log, off)}`);
  // The same record in a well-formed envelope (the checksum is not a secret): its resourceVersion
  // does not follow the previous one.
  const sum = createHash('sha256').update(payload).digest('hex').slice(0, 32);
  await writeFile(c.log, before + `{"c":"${sum}","p":${payload}}\n`);
  await refuses(c.dir, `embedded store damaged: ${c.log} at byte ${off}: the record (sequence 8) sets resourceVersion 999999 where 8 was expected. ${CUT(c.store, c.log, off)}`);
});

test('store: a truncated snapshot names the file and where it ends', async (t) => {
  const c = await crashedDir(t);
  const text = await readFile(c.snapshot);
  const headerLen = text.indexOf(0x0a) + 1;
  await truncate(c.snapshot, text.length - 10);
  await refuses(c.dir, `embedded store damaged: ${c.snapshot} at byte ${text.length - 10}: is truncated: it ends at byte ${text.length - 10}, ` +
    `but its header announces ${text.length - headerLen} bytes of content from byte ${headerLen}. ${RESTORE(c.store)} (a snapshot cannot be partly recovered)`);
});

test('store: a torn tail (incomplete last record, no newline) is dropped and logged at warn', async (t) => {
  const c = await crashedDir(t);
  const before = await readFile(c.log, 'utf8');
  const torn = '{"c":"0123456789abcdef0123456789abcdef","p":{"s":8,"op":"put","r":"configbu';
  await appendFile(c.log, torn);
  const warnings: unknown[] = [];
  const s = await createEmbeddedStore({ dataDir: c.dir, warn: (m, f) => warnings.push([m, f]) });
  t.after(() => s.close());
  assert.deepEqual(warnings, [[
    'embedded store: dropped a torn last record (a write interrupted by a crash, never acknowledged)',
    { file: c.log, offset: Buffer.byteLength(before), bytes: torn.length },
  ]]);
  assert.deepEqual(await names(s), ['a', 'b', 'c', 'd', 'e', 'f', 'g']);
  assert.equal(await readFile(c.log, 'utf8'), before, 'cut back to the last complete record');
});

test('store: a data directory of the previous version (format 1) loads once and is rewritten in format 2', async (t) => {
  const dir = await tempDir(t);
  const store = join(dir, 'store');
  await mkdir(store);
  const obj = (n: string, rv: number) => ({ ...cm(n), metadata: { name: n, namespace: 'default', resourceVersion: String(rv) } });
  await writeFile(join(store, 'snapshot.json'), JSON.stringify({ rv: 1, resources: { 'configbutler.ai/gittargets': [['_', 'default', 'a', obj('a', 1)]] }, leases: {}, seq: 1 }));
  await writeFile(join(store, 'log.jsonl'), JSON.stringify({ s: 2, op: 'put', r: 'configbutler.ai/gittargets', k: ['_', 'default', 'b'], t: 'ADDED', o: obj('b', 2) }) + '\n');
  const warnings: unknown[] = [];
  const s = await createEmbeddedStore({ dataDir: dir, warn: (m, f) => warnings.push([m, f]) });
  assert.deepEqual(await names(s), ['a', 'b']);
  assert.deepEqual(warnings, [['embedded store: converted a data directory written by an earlier version (format 1) to format 2', { dir: store }]]);
  assert.match((await readFile(join(store, 'snapshot.json'), 'utf8')).split('\n')[0]!, /^\{"format":"reverser-snapshot\/v2","id":"[0-9a-f]{16}","seq":2,/);
  await s.create(GT, key('c'), cm('c'));
  await s.close();
  const again = await createEmbeddedStore({ dataDir: dir });
  assert.deepEqual(await names(again), ['a', 'b', 'c']);
  await again.close();
});

test('store: a format-1 log whose snapshot was deleted is refused', async (t) => {
  const dir = await tempDir(t);
  const store = join(dir, 'store');
  await mkdir(store);
  const log = join(store, 'log.jsonl');
  const obj = { ...cm('u'), metadata: { name: 'u', namespace: 'default', resourceVersion: '21' } };
  await writeFile(log, JSON.stringify({ s: 21, op: 'put', r: 'configbutler.ai/gittargets', k: ['_', 'default', 'u'], t: 'ADDED', o: obj }) + '\n');
  await refuses(dir, `embedded store damaged: ${log} at byte 0: the format-1 record has sequence 21 where 1 was expected ` +
    `(records before it are missing: ${join(store, 'snapshot.json')} was deleted or the log was cut). ${CUT(store, log, 0)}`);
});

test('store: the server refuses to start on a damaged store: exit 2, the reason on stderr', { timeout: 60_000 }, async (t) => {
  const dir = await tempDir(t);
  const certs = `--cert-dir=${join(dir, 'certs')}`;
  const srv = await startServer(['--data-dir', dir, certs]);
  const r = await srv.request('POST', ns('default'), { body: gitTarget('kept') });
  assert.equal(r.status, 201, r.text);
  await srv.stop();
  const snapshot = join(dir, 'store', 'snapshot.json');
  // The sequence counts every record (controllers write status and leases too), so it is read back.
  const { id, seq } = JSON.parse((await readFile(snapshot, 'utf8')).split('\n')[0]!);
  await unlink(snapshot);
  const out = await serveUntilExit(['--data-dir', dir, certs, '--log-level', 'error']);
  assert.equal(out.code, 2, out.stderr);
  const log = join(dir, 'store', 'log.jsonl');
  assert.equal(out.stderr, `error: embedded store damaged: ${log} at byte 0: continues snapshot ${id} (sequence ${seq}), but ${snapshot} is missing. ` +
    `${RESTORE(join(dir, 'store'))} (a snapshot cannot be partly recovered)\n`);
  assert.equal(out.stdout, '');
});

test('store: a crash between writing a snapshot and replacing the log loads; an older snapshot than the log names is refused', async (t) => {
  const dir = await tempDir(t);
  const log = join(dir, 'store', 'log.jsonl');
  const snapshot = join(dir, 'store', 'snapshot.json');
  const s1 = await createEmbeddedStore({ dataDir: dir });
  for (const n of ['a', 'b', 'c']) await s1.create(GT, key(n), cm(n));
  const oldLog = await readFile(log); // names no snapshot, records 1..3
  await s1.close(); // snapshot (sequence 3), then a log naming it
  const firstSnapshot = await readFile(snapshot);
  // The crash window: the new snapshot is in place, the old log not yet replaced.
  await writeFile(log, oldLog);
  const s2 = await createEmbeddedStore({ dataDir: dir });
  assert.deepEqual(await names(s2), ['a', 'b', 'c']);
  assert.equal(await s2.currentRV(), 3);
  await s2.create(GT, key('d'), cm('d'));
  await s2.close(); // snapshot at sequence 4
  const header = JSON.parse((await readFile(log, 'utf8')).split('\n')[0]!.replace(/^\{"c":"[0-9a-f]{32}","p":/, '').slice(0, -1));
  // An older snapshot put back under a log that continues a newer one: refused.
  await writeFile(snapshot, firstSnapshot);
  const oldId = JSON.parse(firstSnapshot.toString('utf8').split('\n')[0]!).id;
  await refuses(dir, `embedded store damaged: ${snapshot} at byte 0: is snapshot ${oldId} (sequence 3), but ${log} continues ${header.snapshot} (sequence 4). ` +
    `${RESTORE(join(dir, 'store'))} (a snapshot cannot be partly recovered)`);
});
