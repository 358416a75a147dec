// The git engine's one entry point: "apply these file writes and deletes under this folder, as one
// commit with this author, committer and message, onto this repository and branch". Each attempt
// re-reads the branch tip and re-applies the same changes onto it, so a foreign commit that lands
// meanwhile ends up below ours, never rewritten or dropped; pushes are compare-and-swap, never forced.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { HttpClient } from 'isomorphic-git';
import { GitEngineError, classifyError } from './errors.js';
import { FolderIndex, identityOfKey } from './folder-index.js';
import { IdentityCache } from './identity-cache.js';
import { createHash } from 'node:crypto';
import { createHttpClient } from './http-client.js';
import { cancellableSleep, throwIfCancelled } from './cancel.js';
import { BranchLease, branchLeaseName } from './lease.js';
import { editFileText, groupOf, identityKey, identityOf, type FileEdit } from './manifest-yaml.js';
import { serializeCommit, isTreeMode, type Signature } from './objects.js';
import { canonicalPath, normalizeTargetPath, validateTargetPath } from './paths.js';
import { openRepository, type Repository } from './repository.js';
import { parseRepositoryURL, validateRepositoryURL } from './repository-url.js';
import { EgressPolicy } from '../net/egress.js';
import { FILE_REPOSITORIES_DISABLED, insecureCredentials } from '../model/destination.js';
import { applyEdits, treeAt, type FileEdits } from './tree-edit.js';
import type { ObjectStore } from './object-store.js';
import type { Finding, ScanReport } from '../analyzer/types.js';
import { scanTree } from '../analyzer/scan.js';
import { scanBranch } from './scan-source.js';

import { DEFAULT_COMMITTER_EMAIL, DEFAULT_COMMITTER_NAME } from './committer.js';
import { validateBranchName } from '../model/branch-name.js';
export { DEFAULT_COMMITTER_EMAIL, DEFAULT_COMMITTER_NAME };
export type { GitEngineOptions, Person, ObjectRef, Change, RepositoryInput, CommitInput, FolderInput, ScanInput, CommitResult, CommitTimings } from './engine-types.js';
import type { GitEngineOptions, Person, ObjectRef, RepositoryInput, CommitInput, FolderInput, ScanInput, CommitResult } from './engine-types.js';

interface Built {
  commit: string;
  index: FolderIndex;
  folderTree: string | undefined;
  indexUpdates: Map<string, { blob: string; keys: string[] } | null>;
}

/** The branch lease's default TTL: the GitTarget lease's (controllers/runtime/leases.ts DEFAULT_LEASE_TTL_MS). */
export const BRANCH_LEASE_TTL_MS = 10_000;

function naivePlural(kind: string): string {
  const k = kind.toLowerCase();
  if (/(s|x|z|ch|sh)$/.test(k)) return k + 'es';
  if (/[^aeiou]y$/.test(k)) return k.slice(0, -1) + 'ies';
  return k + 's';
}

// The branch rule lives in the shared model (the API validates GitTargets with it); re-exported here.
export { validateBranchName };

export class GitEngine {
  private readonly http: HttpClient;
  private readonly repos = new Map<string, Repository>();
  private readonly indexes = new Map<string, FolderIndex>();
  private readonly identityCaches = new Map<string, IdentityCache>();
  private readonly locks = new Map<string, Promise<unknown>>();
  readonly holder: string;

  constructor(private readonly opts: GitEngineOptions) {
    this.http = opts.http ?? createHttpClient(opts.remoteLimits, new EgressPolicy(opts.egress));
    this.holder = opts.holder ?? `${hostname()}/${process.pid}/${randomBytes(4).toString('hex')}`;
  }

  /** Commits the changes as one commit, or reports AlreadyPresent when they change nothing. Throws GitEngineError. */
  async commit(input: CommitInput): Promise<CommitResult> {
    const bad = validateRepositoryURL(input.repository.url) ?? validateBranchName(input.branch) ?? validateTargetPath(input.folder);
    if (bad) throw new GitEngineError('Invalid', bad);
    const repo = this.repository(input.repository);
    // One commit at a time per repository in this process: they share the cached clone.
    return this.serialized(repo.key, () => this.commitLocked(repo, input));
  }

  /**
   * The objects held by the folder's manifest files at the branch head (the default branch's head
   * when the branch does not exist yet; none in an empty repository), found by content as commits
   * find them. A file's identity has no version: each ref's apiVersion is `<group>/` (`''` for the
   * core group), which is all a delete change needs. Throws GitEngineError when the branch cannot
   * be read: a listing is complete or it is not given at all.
   */
  async listFolder(input: FolderInput): Promise<ObjectRef[]> {
    const bad = validateRepositoryURL(input.repository.url) ?? validateBranchName(input.branch) ?? validateTargetPath(input.folder);
    if (bad) throw new GitEngineError('Invalid', bad);
    const repo = this.repository(input.repository);
    return this.serialized(repo.key, async () => {
      try {
        const { base } = await repo.sync(input.branch);
        const folder = normalizeTargetPath(input.folder);
        const index = this.folderIndex(repo, folder);
        await index.update(await treeAt(repo.store, base ? await repo.store.commitTree(base) : undefined, folder));
        return index.allKeys().map(identityOfKey);
      } catch (e) {
        throw classifyError(e, repo.display);
      }
    });
  }

  /**
   * The acceptance gate's verdict on a branch of a repository, read through the same cached clone
   * and rules as commits (a served RepositoryScan). A local: repository that does not exist is an
   * empty one: scanning never creates it.
   */
  async scan(input: ScanInput): Promise<ScanReport> {
    const bad = validateRepositoryURL(input.repository.url) ?? (input.branch !== undefined ? validateBranchName(input.branch) : undefined) ?? validateTargetPath(input.path);
    if (bad) throw new GitEngineError('Invalid', bad);
    const opts = { path: normalizeTargetPath(input.path), scope: input.scope, claims: input.claims, repository: input.repository.url };
    const loc = parseRepositoryURL(input.repository.url, this.opts.dataDir, input.repository.tenant);
    if (loc.kind === 'local' && !existsSync(join(loc.gitdir!, 'HEAD'))) return scanTree({ files: async () => [], read: async () => Buffer.alloc(0) }, { ...opts, branch: input.branch, branchExists: false });
    const repo = this.repository(input.repository);
    return this.serialized(repo.key, async () => {
      try {
        const branch = input.branch ?? (await repo.defaultBranch()) ?? 'main';
        return await scanBranch(repo, branch, opts);
      } catch (e) {
        throw classifyError(e, repo.display);
      }
    });
  }

  private repository({ url, credentials, tenant }: RepositoryInput): Repository {
    const loc = parseRepositoryURL(url, this.opts.dataDir, tenant);
    if (loc.kind === 'file' && tenant && !this.opts.allowFileRepositories) throw new GitEngineError('Invalid', FILE_REPOSITORIES_DISABLED);
    if (credentials && url.startsWith('http://') && !this.opts.allowInsecureCredentials) throw new GitEngineError('InsecureCredentials', insecureCredentials(url));
    const key = `${url}\0${JSON.stringify(credentials ?? null)}\0${loc.gitdir ?? ''}`;
    let repo = this.repos.get(key);
    if (!repo) this.repos.set(key, (repo = openRepository(loc, credentials, join(this.opts.dataDir, 'cache'), this.http)));
    return repo;
  }

  private async serialized<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.locks.get(key) ?? Promise.resolve();
    const run = prev.then(fn, fn);
    const tail = run.catch(() => undefined);
    this.locks.set(key, tail);
    try {
      return await run;
    } finally {
      if (this.locks.get(key) === tail) this.locks.delete(key);
    }
  }

  private async commitLocked(repo: Repository, input: CommitInput): Promise<CommitResult> {
    throwIfCancelled();
    const begun = Date.now();
    const deadline = begun + (this.opts.retryTimeoutMs ?? 60_000);
    const unreachableDeadline = begun + (this.opts.unreachableRetryMs ?? this.opts.retryTimeoutMs ?? 60_000);
    // The remote is read while the lease is taken: uncontended, the first attempt then does not
    // wait for the lease's store write. A lease that had to wait means another writer may just
    // have pushed, so that attempt reads the remote again. (A read that is stale anyway only costs
    // a retry: the push is a compare-and-swap.)
    const startedAt = performance.now();
    const startedAtWall = Date.now();
    const early = repo.sync(input.branch).then(
      (state) => ({ state }),
      (error: unknown) => ({ error }),
    );
    let lease: BranchLease | undefined;
    try {
      lease = this.opts.lease
        ? await BranchLease.acquire(this.opts.lease, branchLeaseName(repo.key, input.branch), this.holder, this.opts.leaseTtlMs ?? BRANCH_LEASE_TTL_MS, deadline)
        : undefined;
    } finally {
      await early;
    }
    const first = await early;
    const now = new Date();
    const sig = (p: Person): Signature => ({
      name: p.name,
      email: p.email,
      timestamp: Math.floor((p.time ?? now).getTime() / 1000),
      timezoneOffset: p.timezoneOffset ?? 0,
    });
    const author = sig(input.author);
    const committer = sig(input.committer ?? { name: this.opts.committerName ?? DEFAULT_COMMITTER_NAME, email: this.opts.committerEmail ?? DEFAULT_COMMITTER_EMAIL });
    let delay = this.opts.retryInitialDelayMs ?? 100;
    const maxDelay = this.opts.retryMaxDelayMs ?? 5_000;
    try {
      for (let attempt = 1; ; attempt++) {
        try {
          // Attempt 1's sync phase includes taking the lease (they overlap).
          const t0 = attempt === 1 ? startedAt : performance.now();
          let state;
          if (attempt === 1 && !lease?.waited) {
            if ('error' in first) throw first.error;
            state = first.state;
          } else state = await repo.sync(input.branch);
          const t1 = performance.now();
          const built = await this.build(repo, input, state.base, author, committer);
          if (!built) return { outcome: 'AlreadyPresent', sha: state.base, attempts: attempt };
          const t2 = performance.now();
          const objects = await repo.store.flush();
          const t3 = performance.now();
          await repo.push(input.branch, state.tip, built.commit, objects, async () => {
            if (lease) await lease.fence();
          });
          built.index.record(built.folderTree, built.indexUpdates);
          const timings = { startedAt: startedAtWall, sync: Math.round(t1 - t0), build: Math.round(t2 - t1), write: Math.round(t3 - t2), push: Math.round(performance.now() - t3) };
          return { outcome: 'Committed', sha: built.commit, attempts: attempt, objectsWritten: objects.length, timings };
        } catch (e) {
          repo.store.discardStaged();
          const err = classifyError(e, repo.display);
          if (!err.retryable) throw err;
          // Network errors get their own (shorter) budget; conflicts the whole one.
          const until = err.reason === 'Conflict' ? deadline : Math.min(deadline, unreachableDeadline);
          if (attempt === 1 && until <= begun) throw err;
          // Exponential backoff with jitter, so racing writers spread out instead of colliding again.
          // The last wait is cut short so one final attempt happens at the deadline.
          const remaining = until - Date.now();
          const wait = Math.min(Math.min(delay, maxDelay) * (0.5 + Math.random()), remaining);
          if (remaining <= 0) {
            const what = err.reason === 'Conflict' ? 'the branch kept moving' : 'still failing';
            throw new GitEngineError(err.reason, `${err.message} (${what}; gave up after ${attempt} attempts)`);
          }
          await cancellableSleep(wait);
          delay *= 2;
        }
      }
    } finally {
      await lease?.release();
    }
  }

  private folderIndex(repo: Repository, folder: string): FolderIndex {
    const key = `${repo.key}\0${folder}`;
    let idx = this.indexes.get(key);
    if (!idx) {
      let cache = this.identityCaches.get(repo.key);
      if (!cache) {
        const name = createHash('sha256').update(repo.key).digest('hex').slice(0, 24);
        this.identityCaches.set(repo.key, (cache = new IdentityCache(join(this.opts.dataDir, 'cache', 'analyses', `${name}.log`))));
      }
      this.indexes.set(key, (idx = new FolderIndex(repo.store, cache, folder)));
    }
    return idx;
  }

  /** Stages the new blobs, trees and commit; returns undefined when nothing changes. */
  private async build(repo: Repository, input: CommitInput, base: string | undefined, author: Signature, committer: Signature): Promise<Built | undefined> {
    const store = repo.store;
    const folder = normalizeTargetPath(input.folder);
    const baseTree = base ? await store.commitTree(base) : undefined;
    const index = this.folderIndex(repo, folder);
    await index.update(await treeAt(store, baseTree, folder));
    // The acceptance gate (src/analyzer/): a folder the writer could not own faithfully gets no byte.
    const refused = index.refusal();
    if (refused.length) throw new GitEngineError('FolderRefused', refusalMessage(folder, refused));

    const perFile = new Map<string, FileEdit>();
    const editOf = (path: string): FileEdit => {
      let fe = perFile.get(path);
      if (!fe) perFile.set(path, (fe = { writes: [], deletes: [] }));
      return fe;
    };
    for (const c of input.changes) {
      if (c.op === 'write') {
        const id = identityOf(c.object);
        if (!id.name || !id.kind || !id.apiVersion) throw new GitEngineError('Invalid', 'an object to write needs apiVersion, kind and metadata.name');
        const path =
          index.fileOf(identityKey(id)) ??
          canonicalPath({ path: folder, namespace: id.namespace, group: groupOf(id.apiVersion), resource: c.resource ?? naivePlural(id.kind), name: id.name });
        editOf(path).writes.push(c.object);
      } else {
        const path = index.fileOf(identityKey(c.ref));
        if (path) editOf(path).deletes.push(c.ref);
      }
    }

    const edits: FileEdits = new Map();
    const indexUpdates: Built['indexUpdates'] = new Map();
    for (const [path, fe] of perFile) {
      const oldBlob = await blobAt(store, baseTree, path);
      const text = oldBlob ? (await store.readBlob(oldBlob)).toString('utf8') : undefined;
      const next = editFileText(text, fe);
      if (next === null) {
        if (oldBlob) edits.set(path, null);
        indexUpdates.set(path, null);
        continue;
      }
      const blob = store.stage('blob', Buffer.from(next, 'utf8'));
      if (blob !== oldBlob) edits.set(path, blob);
      // What the file holds now, as editFileText builds it: its identities minus the deletes plus the writes.
      const gone = new Set(fe.deletes.map(identityKey));
      const keys = index.keysIn(path).filter((k) => !gone.has(k));
      for (const w of fe.writes) if (!keys.includes(identityKey(identityOf(w)))) keys.push(identityKey(identityOf(w)));
      indexUpdates.set(path, { blob, keys });
    }
    if (edits.size === 0) return undefined;
    const tree = await applyEdits(store, baseTree, edits);
    if (tree === baseTree) return undefined;
    const commit = store.stage('commit', serializeCommit({ tree, parents: base ? [base] : [], author, committer, message: input.message }));
    return { commit, index, folderTree: await treeAt(store, tree, folder), indexUpdates };
  }
}

const REFUSAL_FINDINGS_SHOWN = 5;

/** "folder x fails the acceptance gate: Reason file: message; ..." (the first few findings, then a count). */
export function refusalMessage(folder: string, findings: readonly Finding[]): string {
  const shown = findings.slice(0, REFUSAL_FINDINGS_SHOWN).map((f) => `${f.reason}${f.file ? ` ${f.file}` : ''}: ${f.message}`);
  const more = findings.length > REFUSAL_FINDINGS_SHOWN ? `; and ${findings.length - REFUSAL_FINDINGS_SHOWN} more (reverser-apiserver analyze lists them all)` : '';
  return `folder ${folder || '.'} fails the acceptance gate, nothing was committed: ${shown.join('; ')}${more}`;
}

async function blobAt(store: ObjectStore, root: string | undefined, path: string): Promise<string | undefined> {
  const slash = path.lastIndexOf('/');
  const dir = await treeAt(store, root, slash < 0 ? '' : path.slice(0, slash));
  if (!dir) return undefined;
  const name = path.slice(slash + 1);
  const e = (await store.readTree(dir)).find((x) => x.path === name && !isTreeMode(x.mode));
  return e?.oid;
}

