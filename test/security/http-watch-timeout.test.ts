// #8 item 14: timeoutSeconds=0 means the server's default (it used to end the watch at once), and
// values of 2147484 s and more (beyond a 32-bit millisecond timer) are clamped instead of
// overflowing into an immediate end.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { GV, startServer } from '../support/server.js';
import { h2session } from './http-support.js';
import type { ClientHttp2Session } from 'node:http2';

/** Opens a watch and resolves with how long it stayed open, or 'open' after `waitMs`. */
function watchLifetime(session: ClientHttp2Session, query: string, waitMs: number): Promise<number | 'open'> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const s = session.request({ ':path': `${GV}/gittargets?watch=true&${query}` });
    let status = 0;
    s.on('response', (h) => (status = Number(h[':status'])));
    s.resume();
    const t = setTimeout(() => {
      s.close();
      resolve('open');
    }, waitMs);
    s.on('end', () => {
      clearTimeout(t);
      if (status !== 200) reject(new Error(`watch ${query} answered ${status}`));
      else resolve(Date.now() - started);
    });
    s.on('error', reject);
  });
}

test('watch timeoutSeconds: 0 is the default, huge values are clamped', { timeout: 60_000 }, async (t) => {
  const server = await startServer(['--min-request-timeout=3']);
  t.after(() => server.stop());
  const s = h2session(server);
  t.after(() => s.close());
  const [zero, overflow, huge, one] = await Promise.all([
    watchLifetime(s, 'timeoutSeconds=0', 12_000),
    watchLifetime(s, 'timeoutSeconds=2147484', 2_000),
    watchLifetime(s, 'timeoutSeconds=99999999999', 2_000),
    watchLifetime(s, 'timeoutSeconds=1', 5_000),
  ]);
  t.diagnostic(`timeoutSeconds=0 lasted ${zero} ms, =1 lasted ${one} ms`);
  // The default is --min-request-timeout randomised up to twice that: 3..6 s.
  assert.ok(typeof zero === 'number' && zero >= 2_900 && zero < 8_000, `timeoutSeconds=0 lasted ${zero}`);
  assert.equal(overflow, 'open');
  assert.equal(huge, 'open');
  assert.ok(typeof one === 'number' && one >= 900 && one < 3_000, `timeoutSeconds=1 lasted ${one}`);
});
