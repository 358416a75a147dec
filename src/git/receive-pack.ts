// The two requests of a smart-HTTP push, written here rather than through isomorphic-git's push:
// that one walks the whole history (merge base) and both full trees on every push, which made
// each push slower as the branch grew. The engine already knows exactly which objects are new (the
// ones it staged on top of the remote tip), so the pack is just those, and the server's ref lock
// checks the old value: a compare-and-swap.
import type { HttpClient } from 'isomorphic-git';
import { GitEngineError } from './errors.js';
import { buildPack, type PendingObject } from './objects.js';

export const ZERO_OID = '0000000000000000000000000000000000000000';

export interface Advertisement {
  refs: Map<string, string>;
  capabilities: Set<string>;
}

function pkt(line: string): Buffer {
  const body = Buffer.from(line, 'utf8');
  return Buffer.concat([Buffer.from((body.length + 4).toString(16).padStart(4, '0')), body]);
}

/** Splits pkt-lines; a flush packet (0000) yields null. */
function* pktLines(buf: Buffer): Generator<Buffer | null> {
  let i = 0;
  while (i + 4 <= buf.length) {
    const len = parseInt(buf.toString('latin1', i, i + 4), 16);
    if (Number.isNaN(len)) return;
    if (len === 0) {
      yield null;
      i += 4;
      continue;
    }
    yield buf.subarray(i + 4, i + len);
    i += len;
  }
}

async function readAll(body: AsyncIterable<Uint8Array> | undefined): Promise<Buffer> {
  const parts: Buffer[] = [];
  if (body) for await (const c of body) parts.push(Buffer.from(c));
  return Buffer.concat(parts);
}

function httpError(status: number, statusMessage: string): Error {
  return Object.assign(new Error(`HTTP Error: ${status} ${statusMessage}`), { code: 'HttpError', data: { statusCode: status, statusMessage } });
}

export async function discoverReceivePack(http: HttpClient, url: string, headers: Record<string, string>): Promise<Advertisement> {
  const res = await http.request({ url: `${url}/info/refs?service=git-receive-pack`, method: 'GET', headers: { ...headers } });
  const body = await readAll(res.body);
  if (res.statusCode !== 200) throw httpError(res.statusCode, res.statusMessage);
  if (res.headers?.['content-type'] !== 'application/x-git-receive-pack-advertisement') {
    throw new GitEngineError('NotFound', `${url} is not a Git smart-HTTP repository (no receive-pack advertisement)`);
  }
  const refs = new Map<string, string>();
  let capabilities = new Set<string>();
  let first = true;
  for (const line of pktLines(body)) {
    if (line === null) continue;
    const text = line.toString('utf8').replace(/\n$/, '');
    if (text.startsWith('# service=')) continue;
    const [refPart, caps] = text.split('\0');
    if (first && caps !== undefined) capabilities = new Set(caps.trim().split(' '));
    first = false;
    const [oid, ref] = refPart.split(' ');
    if (ref && ref !== 'capabilities^{}') refs.set(ref, oid);
  }
  return { refs, capabilities };
}

/** Sends `old → new` for `ref` with a pack of `objects`; throws GitEngineError when the server refuses. */
export async function sendReceivePack(
  http: HttpClient,
  url: string,
  headers: Record<string, string>,
  adv: Advertisement,
  update: { ref: string; oldOid: string; newOid: string; objects: readonly PendingObject[] },
): Promise<void> {
  const caps = ['report-status', 'side-band-64k'].filter((c) => adv.capabilities.has(c));
  caps.push('agent=reverser-apiserver');
  const { pack } = buildPack(update.objects);
  const body = [pkt(`${update.oldOid} ${update.newOid} ${update.ref}\0${caps.join(' ')}`), Buffer.from('0000'), ...pack];
  const res = await http.request({
    url: `${url}/git-receive-pack`,
    method: 'POST',
    headers: { ...headers, 'Content-Type': 'application/x-git-receive-pack-request', Accept: 'application/x-git-receive-pack-result' },
    body: (async function* () {
      for (const b of body) yield new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
    })(),
  });
  const raw = await readAll(res.body);
  if (res.statusCode !== 200) throw httpError(res.statusCode, res.statusMessage);
  let status = raw;
  if (caps.includes('side-band-64k')) {
    const data: Buffer[] = [];
    const errors: string[] = [];
    for (const line of pktLines(raw)) {
      if (line === null || line.length === 0) continue;
      if (line[0] === 1) data.push(line.subarray(1));
      else if (line[0] === 3) errors.push(line.subarray(1).toString('utf8').trim());
    }
    if (errors.length) throw new GitEngineError('Rejected', `push to ${url} failed: ${errors.join('; ')}`);
    status = Buffer.concat(data);
  }
  if (!caps.includes('report-status')) return;
  let unpack = '';
  let refResult = '';
  for (const line of pktLines(status)) {
    if (line === null) continue;
    const text = line.toString('utf8').trim();
    if (text.startsWith('unpack ')) unpack = text.slice(7);
    else if (text.startsWith('ok ') || text.startsWith('ng ')) refResult = text;
  }
  if (unpack && unpack !== 'ok') throw new GitEngineError('Rejected', `push to ${url} failed: unpack ${unpack}`);
  if (refResult.startsWith('ok ')) return;
  const reason = refResult.slice(3 + update.ref.length).trim() || 'no status reported';
  // receive-pack reports a branch that moved under us as a failed ref lock / update.
  if (/lock|stale|expected|fetch first|non-fast-forward|failed to update|cannot update/i.test(reason)) {
    throw new GitEngineError('Conflict', `${update.ref} of ${url} moved during the push (${reason})`, true);
  }
  throw new GitEngineError('Rejected', `push to ${url} refused: ${update.ref} ${reason}`);
}
