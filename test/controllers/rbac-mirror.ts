// The set-up shared by the end-to-end tests of who may name whom in a commit
// (test/controllers/authorship-e2e.test.ts, test/security/commit-trailers.test.ts): the real server
// under --authorization-mode=RBAC with a policy file and client certificates, Redis storage, the
// controllers on, and an OnRequest GitTarget "tenants" in team-a whose remote is a real
// `git http-backend`. Mirrored changes are fed through the window sink, as the mirror controller
// would, so each test controls exactly what a CommitRequest closes.
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import { createStore } from '../../src/storage/index.js';
import type { Store } from '../../src/storage/types.js';
import { WindowRecords } from '../../src/controllers/windows/record.js';
import { StoreWindowSink } from '../../src/controllers/windows/sink.js';
import { makeCA, type CA } from '../support/pki.js';
import { startRedis } from '../support/redis.js';
import type { TestContext } from 'node:test';
import { startServer, tempDir, type ServerProcess } from '../auth-e2e/harness.js';
import { createGitSecret, createGitTarget, gitServer } from './harness.js';
import type { GitServer } from '../support/git-server.js';
import type { TargetKey } from '../../src/controllers/windows/types.js';

export interface RbacMirror {
  srv: ServerProcess;
  clientCA: CA;
  /** A temporary directory for kubeconfigs and the like, removed after the test. */
  dir: string;
  store: Store;
  remote: GitServer;
  /** The GitTarget "tenants" in team-a. */
  key: TargetKey;
  sink: StoreWindowSink;
}

/** Start it all; every part is stopped by `t.after`. `policy` is the RBAC policy's YAML text. */
export async function startRbacMirror(t: TestContext, name: string, policy: string, extraFlags: string[] = []): Promise<RbacMirror> {
  const redis = await startRedis();
  t.after(() => redis.stop());
  const remote = await gitServer(t);
  const store = await createStore({ storage: 'redis', redisUrl: redis.url });
  t.after(() => store.close());
  await createGitSecret(store, remote);
  const { key } = await createGitTarget(store, 'tenants', remote.url('config'), { mode: 'OnRequest' });
  const sink = new StoreWindowSink(new WindowRecords(store), () => undefined);

  const dir = tempDir(t, `${name}-`);
  const serverCA = makeCA(`${name}-serving-ca`);
  const clientCA = makeCA(`${name}-client-ca`);
  writeFileSync(join(dir, 'client-ca.crt'), clientCA.certPem);
  writeFileSync(join(dir, 'policy.yaml'), policy);
  const srv = await startServer(t, serverCA, [
    '--client-ca-file', join(dir, 'client-ca.crt'), '--authorization-mode=RBAC', '--authorization-policy-file', join(dir, 'policy.yaml'),
    '--storage=redis', `--redis-url=${redis.url}`, '--controllers=all',
    // The test's git http-backend is plain http on loopback: credentials over http need the development opt-in.
    '--allow-insecure-credentials=true',
    '--committer-name=Reverser Bot', '--committer-email=bot@reverser.example',
    ...extraFlags,
  ]);
  return { srv, clientCA, dir, store, remote, key, sink };
}
