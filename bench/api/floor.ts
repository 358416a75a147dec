// The floor of the API benchmark: a bare fastify HTTPS server with the reverser server's TLS
// settings (HTTP/2 + HTTP/1.1 via ALPN, client certificates requested) that does the raw Redis
// operation behind each measured request and returns the stored bytes. No authentication,
// validation, cache or object handling: what is left is TLS, HTTP and one Redis round trip.
//
// Run as a child: node dist/bench/api/floor.js '<json config>'; prints "floor listening <port>".
import fastify from 'fastify';
import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';

interface FloorConfig {
  port: number;
  redisUrl: string;
  certFile: string;
  keyFile: string;
  caFile: string;
  /** The reverser server's hash of GitTargets: the floor reads the very bytes the server stores. */
  objectsKey: string;
  /** The floor's own keys for CREATE (so the server's counter and objects stay untouched). */
  floorObjectsKey: string;
  floorRVKey: string;
  channel: string;
}

const cfg = JSON.parse(process.argv[2]!) as FloorConfig;
const redis = new Redis(cfg.redisUrl);
const sub = new Redis(cfg.redisUrl);
const LIST_HEAD = '{"apiVersion":"configbutler.ai/v1alpha1","kind":"GitTargetList","metadata":{';

const app = fastify({
  http2: true,
  https: {
    allowHTTP1: true,
    cert: readFileSync(cfg.certFile, 'utf8'),
    key: readFileSync(cfg.keyFile, 'utf8'),
    ca: [readFileSync(cfg.caFile, 'utf8')],
    requestCert: true,
    rejectUnauthorized: false,
    minVersion: 'TLSv1.2',
  },
  logger: false,
  forceCloseConnections: true,
} as any) as any;

app.removeAllContentTypeParsers();
app.addContentTypeParser('*', { parseAs: 'buffer' }, (_req: unknown, body: Buffer, done: (e: null, b: Buffer) => void) => done(null, body));

// GET by name: HGET, return the bytes.
app.get('/floor/obj/:ns/:name', async (req: any, reply: any) => {
  const v = await redis.hget(cfg.objectsKey, `${req.params.ns}/${req.params.name}`);
  if (v === null) return reply.code(404).send('{}');
  return reply.type('application/json').send(v);
});

// LIST: every value (HVALS), or one HSCAN page of ~limit values; concatenated into a JSON list.
app.get('/floor/list', async (req: any, reply: any) => {
  const limit = Number(req.query.limit ?? 0);
  if (!limit) {
    const vals = await redis.hvals(cfg.objectsKey);
    return reply.type('application/json').send(`${LIST_HEAD}"resourceVersion":"1"},"items":[${vals.join(',')}]}`);
  }
  const [next, kv] = await redis.hscan(cfg.objectsKey, String(req.query.continue ?? '0'), 'COUNT', limit);
  const vals: string[] = [];
  for (let i = 1; i < kv.length; i += 2) vals.push(kv[i]!);
  const cont = next === '0' ? '' : `,"continue":"${next}"`;
  return reply.type('application/json').send(`${LIST_HEAD}"resourceVersion":"1"${cont}},"items":[${vals.join(',')}]}`);
});

// CREATE: HSETNX of the posted object and INCR of a counter, in one round trip.
app.post('/floor/create/:ns', async (req: any, reply: any) => {
  const text = (req.body as Buffer).toString();
  const name = JSON.parse(text).metadata.name as string;
  const out = await redis.pipeline().hsetnx(cfg.floorObjectsKey, `${req.params.ns}/${name}`, text).incr(cfg.floorRVKey).exec();
  if (out![0]![1] === 0) return reply.code(409).send('{}');
  return reply.code(201).type('application/json').send(text);
});

// Watch floor: streams held open; an update is HSET + PUBLISH, and the subscriber writes the event
// line to every stream (what the server does with XADD, its log follower and its watch cache).
const watchers = new Set<{ write(s: string): void }>();
app.get('/floor/watch', (req: any, reply: any) => {
  const raw = reply.raw;
  reply.hijack();
  raw.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-cache, private' });
  raw.flushHeaders();
  watchers.add(raw);
  raw.on('close', () => watchers.delete(raw));
});
app.put('/floor/obj/:ns/:name', async (req: any, reply: any) => {
  const text = (req.body as Buffer).toString();
  await redis.pipeline().hset(cfg.floorObjectsKey, `${req.params.ns}/${req.params.name}`, text).publish(cfg.channel, text).exec();
  return reply.type('application/json').send(text);
});
void sub.subscribe(cfg.channel);
sub.on('message', (_ch: string, msg: string) => {
  const line = `{"type":"MODIFIED","object":${msg}}\n`;
  for (const w of watchers) w.write(line);
});

await app.listen({ port: cfg.port, host: '127.0.0.1' });
process.stdout.write(`floor listening ${cfg.port}\n`);
const stop = async () => {
  for (const w of watchers) (w as unknown as { end(): void }).end();
  await app.close();
  redis.disconnect();
  sub.disconnect();
  process.exit(0);
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
