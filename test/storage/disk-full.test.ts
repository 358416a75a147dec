// A full data directory is a transient storage failure, not a dead process: on a real (small)
// tmpfs filled to the last byte, writes get a 503 Status naming ENOSPC and nothing crashes;
// /readyz says why while /livez stays ok (the shipped probes keep the Pod); once space returns the
// embedded store writes a snapshot of its state and accepts writes again by itself
// (src/storage/durable-log.ts, recover), and a restart finds every acknowledged write.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, unlinkSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { assertStatus, gitTarget, startServer, type StartedServer } from '../support/server.js';
import { waitMs } from '../support/deadline.js';

const PATH = '/apis/configbutler.ai/v1alpha1/namespaces/default/gittargets';

/** Writes until the filesystem refuses (ENOSPC), in shrinking chunks so not a byte is left. */
function fill(file: string): void {
  const fd = openSync(file, 'w');
  try {
    for (let size = 1 << 20; size >= 1; size >>= 1) {
      const buf = Buffer.alloc(size, 0x61);
      for (;;) {
        try {
          writeSync(fd, buf);
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code === 'ENOSPC') break;
          throw e;
        }
      }
    }
  } finally {
    closeSync(fd);
  }
}

async function until<T>(what: string, fn: () => Promise<T | undefined>, ms = 15_000): Promise<T> {
  const deadline = Date.now() + waitMs(ms);
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

test('disk full: writes answer 503 naming ENOSPC, /readyz fails and /livez stays ok, writes resume by themselves once space returns, nothing acknowledged is lost', { timeout: 120_000 }, async (t) => {
  const mnt = mkdtempSync(join(tmpdir(), 'reverser-tmpfs-'));
  // A real filesystem limit (root is needed to mount; the test machine and CI run as root).
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=16m', 'tmpfs', mnt]);
  t.after(() => {
    try {
      execFileSync('umount', ['-l', mnt]);
    } finally {
      rmSync(mnt, { recursive: true, force: true });
    }
  });
  const dataDir = join(mnt, 'data');
  let srv: StartedServer = await startServer([], { dataDir });
  t.after(() => srv.stop());
  const acked: string[] = [];
  const refused: string[] = [];
  const create = async (name: string) => {
    const r = await srv.request('POST', PATH, { body: gitTarget(name) });
    if (r.status === 201) acked.push(name);
    return r;
  };
  assert.equal((await create('before')).status, 201);

  const filler = join(mnt, 'filler');
  fill(filler);
  // The log's last page may still hold a line or two: write until the store refuses.
  let refusal;
  for (let i = 0; i < 100 && !refusal; i++) {
    const r = await create(`during-${i}`);
    if (r.status !== 201) {
      refusal = r;
      refused.push(`during-${i}`);
    }
  }
  assert.ok(refusal, 'a write was refused');
  assertStatus(refusal, 503, 'ServiceUnavailable', /^storage is unavailable: data directory write failed: ENOSPC: no space left on device/);
  // Refused at once while the directory is full, with the same Status; the process lives.
  const again = await srv.request('POST', PATH, { body: gitTarget('refused-again') });
  assertStatus(again, 503, 'ServiceUnavailable', /^storage is unavailable: data directory write failed: ENOSPC/);
  refused.push('refused-again');
  const ready = await srv.get('/readyz');
  assert.equal(ready.status, 500);
  assert.match(ready.text, /^\[\+\]ping ok\n\[-\]storage failed: data directory write failed: ENOSPC: no space left on device/);
  const live = await srv.get('/livez');
  assert.equal(live.status, 200);
  assert.equal(live.text, 'ok');
  // Reads still work.
  assert.equal((await srv.get(`${PATH}/before`)).status, 200);
  assert.ok(srv.alive());

  unlinkSync(filler);
  await until('/readyz ok after space returned', async () => ((await srv.get('/readyz')).status === 200 ? true : undefined));
  assert.equal((await create('after')).status, 201);
  assert.match(srv.stderr(), /embedded store: the data directory accepts writes again; recovered/);

  // Every acknowledged write survives a restart; a refused one may exist or not (its outcome was
  // unknown to the client, as after a timeout), nothing else does.
  await srv.stop();
  srv = await startServer([], { dataDir });
  const list = await srv.get(PATH);
  assert.equal(list.status, 200);
  const names: string[] = list.body.items.map((o: { metadata: { name: string } }) => o.metadata.name).sort();
  for (const n of acked) assert.ok(names.includes(n), `acknowledged ${n} is missing after the restart: ${names.join(', ')}`);
  for (const n of names) assert.ok(acked.includes(n) || refused.includes(n), `unexpected ${n}`);
  assert.ok(names.includes('before') && names.includes('after'));
});
