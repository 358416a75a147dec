// coalesceBacklog (src/controllers/windows/record.ts), the record transition that bounds a backlog
// by its objects: what joins, what stays apart (the first window, another author's, a claimed one,
// a snapshot), and when it starts (a failed attempt, or more than 64 queued windows).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { COALESCE_QUEUED_WINDOWS, coalesceBacklog, emptyRecord, mergeChanges, noteFailedAttempt, type Window, type WindowRecord } from '../../src/controllers/windows/record.js';

const T = { cluster: '_', namespace: 'team-a', name: 'tenants', uid: 'u1' };
const cm = (name: string, v: string) => ({ op: 'write' as const, resource: 'configmaps', object: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'team-a' }, data: { v } } });

function closed(r: WindowRecord, authorKey: string, changes: Array<[string, string]>, extra: Partial<Window> = {}): Window {
  const w: Window = { seq: r.nextSeq++, kind: 'changes', authorKey, openedAt: r.nextSeq, lastChangeAt: r.nextSeq, changes: [], closing: { reason: 'idle-zero', at: r.nextSeq, attempts: 0 }, ...extra };
  mergeChanges(w, changes.map(([n, v]) => cm(n, v)));
  r.windows.push(w);
  return w;
}

const shape = (r: WindowRecord) => r.windows.map((w) => `${w.authorKey || '-'}:${w.changes.map((c) => `${(c.change as ReturnType<typeof cm>).object.metadata.name}=${(c.change as ReturnType<typeof cm>).object.data.v}`).join(',')}${w.request ? ' [req]' : ''}${w.kind === 'snapshot' ? ' [snap]' : ''}`);

test('behind a failed first window, one author\'s closed windows join (latest value wins, first-seen order); another author, a claimed window and a snapshot stay apart', () => {
  const r = emptyRecord(T);
  const head = closed(r, '', [['a', '1']]);
  head.closing!.attempts = 1;
  closed(r, '', [['b', '2']]);
  closed(r, '', [['a', '3']]);
  closed(r, '', [['b', '4']]);
  closed(r, 'user:alice', [['a', '5']]);
  closed(r, 'user:alice', [['c', '6']]);
  closed(r, '', [['a', '7']], { request: { name: 'cr', uid: 'x', message: 'm', author: { name: 'A', email: 'a@x' }, authorKind: 'submitter', attachedAt: 0, closeAt: 0 } });
  closed(r, '', [['a', '8']]);
  closed(r, '', [['d', '9']], { kind: 'snapshot', snapshotId: 's' });
  closed(r, '', [['a', '10']]);
  closed(r, '', [['b', '11']]);
  const before = structuredClone(r);
  coalesceBacklog(r);
  assert.deepEqual(r, before, 'nothing coalesces while the first window has not failed and few wait');
  noteFailedAttempt(r, head.seq, 1234);
  assert.equal(r.windows[0].closing!.failedAt, 1234);
  coalesceBacklog(r);
  assert.deepEqual(shape(r), ['-:a=1', '-:b=4,a=3', 'user:alice:a=5,c=6', '-:a=7 [req]', '-:a=8', '-:d=9 [snap]', '-:a=10,b=11']);
  assert.equal(r.windows[1].closing!.windows, 3);
  assert.deepEqual(r.windows[0], { ...before.windows[0], closing: { ...before.windows[0].closing!, failedAt: 1234 } }, 'the first window is untouched');
});

test('noteFailedAttempt marks only the first window, and only the one that was attempted', () => {
  const r = emptyRecord(T);
  const a = closed(r, '', [['a', '1']]);
  const b = closed(r, '', [['b', '1']]);
  noteFailedAttempt(r, b.seq, 1);
  assert.equal(r.windows[1].closing!.failedAt, undefined);
  noteFailedAttempt(r, a.seq + 100, 1);
  assert.equal(r.windows[0].closing!.failedAt, undefined);
});

test(`without a failure, more than ${COALESCE_QUEUED_WINDOWS} queued windows coalesce; ${COALESCE_QUEUED_WINDOWS} do not`, () => {
  const r = emptyRecord(T);
  closed(r, '', [['a', '0']]);
  for (let i = 1; i <= COALESCE_QUEUED_WINDOWS; i++) closed(r, '', [[`o${i % 5}`, String(i)]]);
  coalesceBacklog(r);
  assert.equal(r.windows.length, COALESCE_QUEUED_WINDOWS + 1);
  closed(r, '', [['o0', 'last']]);
  coalesceBacklog(r);
  assert.deepEqual(shape(r), ['-:a=0', `-:o1=61,o2=62,o3=63,o4=64,o0=last`]);
});
