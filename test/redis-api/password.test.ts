// The Redis password comes from a Secret, not from the Deployment's args: REDIS_PASSWORD (env from
// a secretKeyRef) or --redis-password-file (a mounted Secret key), against a real redis-server with
// requirepass. The password is never logged, not even at debug.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startRedis } from '../support/redis.js';
import { gitTarget, startServer } from '../support/server.js';
import { serveUntilExit } from '../security/serve-process.js';

const PASSWORD = 's3cret-redis-Pa55word';
const GTS = '/apis/configbutler.ai/v1alpha1/namespaces/default/gittargets';

test('REDIS_PASSWORD and --redis-password-file authenticate to Redis; neither password is logged', { timeout: 120_000 }, async (t) => {
  const redis = await startRedis({ requirepass: PASSWORD });
  t.after(() => redis.stop());
  const dir = mkdtempSync(join(tmpdir(), 'redis-pw-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'password');
  writeFileSync(file, `${PASSWORD}\n`, { mode: 0o600 }); // as a Secret key mounted from `kubectl create secret --from-file`
  const base = ['--storage=redis', `--redis-url=${redis.url}`, '--log-level=debug'];

  const fromEnv = await startServer(base, { env: { REDIS_PASSWORD: PASSWORD } });
  const created = await fromEnv.request('POST', GTS, { body: gitTarget('via-env') });
  assert.equal(created.status, 201, created.text);
  await fromEnv.stop();
  assert.ok(!`${fromEnv.stdout()}${fromEnv.stderr()}`.includes(PASSWORD), 'the password is not logged');

  const fromFile = await startServer([...base, `--redis-password-file=${file}`]);
  const listed = await fromFile.request('GET', GTS);
  assert.deepEqual(listed.body.items.map((i: any) => i.metadata.name), ['via-env'], 'the same Redis, authenticated from the file');
  await fromFile.stop();
  assert.ok(!`${fromFile.stdout()}${fromFile.stderr()}`.includes(PASSWORD), 'the password is not logged');
});

test('a password in two places, an unreadable file or an empty one: exit 2 naming the source, never the password', { timeout: 60_000 }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'redis-pw-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const both = await serveUntilExit(['--storage=redis', `--redis-url=redis://:${PASSWORD}@127.0.0.1:1`, `--redis-password-file=${join(dir, 'missing')}`]);
  assert.equal(both.code, 2);
  assert.equal(both.stderr, `error: --redis-password-file: cannot read ${join(dir, 'missing')}: ENOENT\n`);
  const file = join(dir, 'pw');
  writeFileSync(file, `${PASSWORD}\n`);
  const twice = await serveUntilExit(['--storage=redis', `--redis-url=redis://:${PASSWORD}@127.0.0.1:1`, `--redis-password-file=${file}`]);
  assert.equal(twice.code, 2);
  assert.equal(twice.stderr, 'error: --redis-password-file: --redis-url carries a password too; give it in one place only\n');
  writeFileSync(file, '\n');
  const empty = await serveUntilExit(['--storage=redis', '--redis-url=redis://127.0.0.1:1', `--redis-password-file=${file}`]);
  assert.equal(empty.code, 2);
  assert.equal(empty.stderr, 'error: --redis-password-file: the password must be one non-empty line\n');
});
