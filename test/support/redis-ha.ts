// Multi-node Redis for tests, on loopback ports: a six-node Redis Cluster (3 primaries, 3
// replicas) and a Sentinel group (1 primary, 1 or 2 replicas, 3 sentinels). Every process is spawned by
// this module and stopped by `stop()` (register it with t.after), which SIGKILLs whatever is left
// and removes the directory, so a failed test leaves no stray redis-server behind. Every wait has a
// deadline (test/support/deadline.ts). The single-node server is test/support/redis.ts.
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './net.js';
import { until, withDeadline } from './deadline.js';

const exec = promisify(execFile);

/** One redis-server (or sentinel) process of a group. */
export interface RedisNode {
  port: number;
  /** SIGKILL (no shutdown save, connections drop at once); resolves when the process is gone. */
  kill(): Promise<void>;
  readonly alive: boolean;
}

class Node implements RedisNode {
  private proc: ChildProcess | undefined;
  constructor(
    readonly port: number,
    private readonly args: string[],
  ) {}

  get alive(): boolean {
    return !!this.proc && this.proc.exitCode === null && this.proc.signalCode === null;
  }

  start(): Promise<void> {
    const p = spawn('redis-server', this.args, { stdio: ['ignore', 'pipe', 'pipe'] });
    this.proc = p;
    let out = '';
    const ready = new Promise<void>((resolve, reject) => {
      const onData = (b: Buffer): void => {
        out += b.toString();
        // A data node says "Ready to accept connections"; a sentinel says its ID once it runs.
        if (/Ready to accept connections|Sentinel ID is/.test(out)) resolve();
      };
      p.stdout!.on('data', onData);
      p.stderr!.on('data', onData);
      p.once('exit', (code) => reject(new Error(`redis-server ${this.port} exited (${code}): ${out.slice(-2000)}`)));
      p.once('error', reject);
    });
    return withDeadline(ready, `redis-server on port ${this.port} to start`, 15_000, () => p.kill('SIGKILL'));
  }

  async kill(): Promise<void> {
    const p = this.proc;
    if (!p || !this.alive) return;
    const gone = new Promise<void>((r) => p.once('exit', () => r()));
    p.kill('SIGKILL');
    await withDeadline(gone, `redis-server ${this.port} to exit`, 10_000);
  }
}

/** `redis-cli -p port args...` with a deadline; returns stdout. */
export async function cli(port: number, ...args: string[]): Promise<string> {
  const { stdout } = await exec('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args], { timeout: 10_000 });
  return stdout;
}

/** Like cli(), but a refused connection or other failure reads as ''. */
const tryCli = (port: number, ...args: string[]): Promise<string> => cli(port, ...args).catch(() => '');

abstract class Group {
  readonly nodes: Node[] = [];
  constructor(readonly dir: string) {}

  protected async node(name: string, args: (port: number, dir: string) => Promise<string[]>): Promise<Node> {
    const dir = join(this.dir, name);
    await mkdir(dir, { recursive: true });
    // Retry once on a port taken between freePort() and the launch.
    for (let attempt = 0; ; attempt++) {
      const port = await freePort();
      const n = new Node(port, await args(port, dir));
      try {
        await n.start();
        this.nodes.push(n);
        return n;
      } catch (err) {
        if (attempt > 0) throw err;
      }
    }
  }

  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((n) => n.kill()));
    await rm(this.dir, { recursive: true, force: true });
  }
}

const dataArgs = (port: number, dir: string): string[] => [
  '--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '',
  '--appendonly', 'yes', '--appendfsync', 'always', '--protected-mode', 'no', '--daemonize', 'no',
];

export class RedisClusterGroup extends Group {
  /** The `--redis-url` of this cluster (docs/storage.md). */
  get url(): string {
    const [first, ...more] = this.nodes.map((n) => `127.0.0.1:${n.port}`);
    return `redis://${first}?cluster=true&nodes=${more.join(',')}`;
  }

  /** Startup nodes for RedisStoreOptions.clusterNodes. */
  get startupNodes(): string[] {
    return this.nodes.map((n) => `127.0.0.1:${n.port}`);
  }

  /** The node that currently serves `key`'s slot as primary (asked of a live node). */
  async slotOwner(key: string): Promise<RedisNode> {
    const live = this.nodes.filter((n) => n.alive);
    const slot = Number((await cli(live[0]!.port, 'CLUSTER', 'KEYSLOT', key)).trim());
    for (const line of (await cli(live[0]!.port, 'CLUSTER', 'NODES')).split('\n')) {
      const f = line.split(' ');
      if (!f[2]?.includes('master') || f[2].includes('fail')) continue;
      const port = Number(f[1]!.split(':')[1]!.split('@')[0]);
      for (const range of f.slice(8)) {
        const [lo, hi] = range.split('-').map(Number);
        if (slot >= lo! && slot <= (hi ?? lo)!) return this.nodes.find((n) => n.port === port)!;
      }
    }
    throw new Error(`no primary serves slot ${slot}`);
  }

  /** Every live node reports cluster_state:ok and every slot has a live primary. */
  async healthy(): Promise<boolean> {
    for (const n of this.nodes.filter((x) => x.alive)) {
      if (!(await tryCli(n.port, 'CLUSTER', 'INFO')).includes('cluster_state:ok')) return false;
    }
    return true;
  }

  async start(): Promise<void> {
    for (let i = 0; i < 6; i++) {
      await this.node(`n${i}`, async (port, dir) => [
        ...dataArgs(port, dir),
        '--cluster-enabled', 'yes', '--cluster-config-file', join(dir, 'nodes.conf'),
        // The bus port is chosen free too (port+10000 may be taken or past 65535).
        '--cluster-port', String(await freePort()),
        '--cluster-node-timeout', '1000', '--cluster-replica-validity-factor', '0',
      ]);
    }
    await exec('redis-cli', ['--cluster', 'create', ...this.startupNodes, '--cluster-replicas', '1', '--cluster-yes'], { timeout: 30_000 });
    await until(() => this.healthy(), 'cluster_state:ok on all six nodes', 30_000, 100);
    // Every primary has its replica attached, so a failover has somewhere to go.
    await until(async () => {
      for (const n of this.nodes) {
        const info = await tryCli(n.port, 'INFO', 'replication');
        if (info.includes('role:master') && !info.includes('connected_slaves:1')) return false;
        if (info.includes('role:slave') && !info.includes('master_link_status:up')) return false;
      }
      return true;
    }, 'every primary to have a connected replica', 30_000, 100);
  }
}

export const SENTINEL_MASTER = 'mymaster';

export class RedisSentinelGroup extends Group {
  primary!: RedisNode;
  replicas: RedisNode[] = [];
  sentinels: RedisNode[] = [];

  /** The `--redis-url` of this group (docs/storage.md). */
  get url(): string {
    const [first, ...more] = this.sentinels.map((n) => `127.0.0.1:${n.port}`);
    return `redis://${first}?sentinelMaster=${SENTINEL_MASTER}&sentinels=${more.join(',')}`;
  }

  /** The port the sentinels currently name as primary. */
  async primaryPort(): Promise<number> {
    for (const s of this.sentinels.filter((n) => n.alive)) {
      const out = (await tryCli(s.port, 'SENTINEL', 'get-master-addr-by-name', SENTINEL_MASTER)).trim().split('\n');
      if (out.length === 2) return Number(out[1]);
    }
    throw new Error('no sentinel answers');
  }

  async start(replicas: number): Promise<void> {
    this.primary = await this.node('primary', async (port, dir) => dataArgs(port, dir));
    for (let i = 0; i < replicas; i++) {
      const r = await this.node(`replica${i}`, async (port, dir) => [...dataArgs(port, dir), '--replicaof', '127.0.0.1', String(this.primary.port)]);
      this.replicas.push(r);
      await until(async () => (await tryCli(r.port, 'INFO', 'replication')).includes('master_link_status:up'), `replica ${i} to sync`, 20_000, 100);
    }
    for (let i = 0; i < 3; i++) {
      this.sentinels.push(
        await this.node(`s${i}`, async (port, dir) => {
          // A sentinel rewrites its config file, so each gets its own.
          const conf = join(dir, 'sentinel.conf');
          await writeFile(conf, [
            `port ${port}`, 'bind 127.0.0.1', 'protected-mode no', `dir ${dir}`,
            `sentinel monitor ${SENTINEL_MASTER} 127.0.0.1 ${this.primary.port} 2`,
            `sentinel down-after-milliseconds ${SENTINEL_MASTER} 1000`,
            `sentinel failover-timeout ${SENTINEL_MASTER} 5000`,
            '',
          ].join('\n'));
          return [conf, '--sentinel'];
        }),
      );
    }
    // A failover needs a quorum that knows the replica and each other.
    await until(async () => {
      for (const s of this.sentinels) {
        const known = await tryCli(s.port, 'SENTINEL', 'replicas', SENTINEL_MASTER);
        const peers = await tryCli(s.port, 'SENTINEL', 'sentinels', SENTINEL_MASTER);
        if (this.replicas.some((r) => !known.includes(String(r.port)))) return false;
        if (peers.split('\n').filter((l) => l === 'runid').length < 2) return false;
      }
      return true;
    }, 'each sentinel to know the replicas and the two other sentinels', 30_000, 200);
  }
}

export async function startRedisCluster(): Promise<RedisClusterGroup> {
  const g = new RedisClusterGroup(await mkdtemp(join(tmpdir(), 'redis-cluster-')));
  await g.start().catch(async (err) => {
    await g.stop();
    throw err;
  });
  return g;
}

/** A Sentinel group: one primary, `replicas` replicas (default 1), three sentinels (quorum 2). */
export async function startRedisSentinel(opts: { replicas?: number } = {}): Promise<RedisSentinelGroup> {
  const g = new RedisSentinelGroup(await mkdtemp(join(tmpdir(), 'redis-sentinel-')));
  await g.start(opts.replicas ?? 1).catch(async (err) => {
    await g.stop();
    throw err;
  });
  return g;
}
