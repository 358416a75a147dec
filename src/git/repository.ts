// Where commits are built and how they reach the remote. A local bare repository (`local:` or
// `file://`) is written directly and its branch moved with git's own lock-file protocol; an HTTP
// remote gets a cached bare clone under <data-dir>/cache, fetched before each batch, and pushes
// whose old value the server checks under its ref lock (the compare-and-swap).
import { mkdir, open, rename, stat, unlink } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { dirname, join } from 'node:path';
import git, { type HttpClient } from 'isomorphic-git';
import { GitEngineError, classifyError } from './errors.js';
import { ObjectStore, gitFs as fs } from './object-store.js';
import type { PendingObject } from './objects.js';
import { ZERO_OID, discoverReceivePack, sendReceivePack, type Advertisement } from './receive-pack.js';
import { authorizationHeader, displayURL, type GitCredentials, type RepositoryLocation } from './repository-url.js';

export interface BranchState {
  /** Current tip of the branch; undefined when the branch does not exist. */
  tip: string | undefined;
  /** What the next commit builds on: the tip, else the default branch's tip, else nothing (orphan). */
  base: string | undefined;
}

export interface Repository {
  /** Stable identity for leases and caches. */
  readonly key: string;
  readonly display: string;
  readonly store: ObjectStore;
  sync(branch: string): Promise<BranchState>;
  /** The default branch's name (HEAD's target), when the repository has one. */
  defaultBranch(): Promise<string | undefined>;
  /** Moves `branch` from `expected` to `commit`; `fence` runs last, just before the update is sent. */
  push(branch: string, expected: string | undefined, commit: string, objects: readonly PendingObject[], fence: () => Promise<void>): Promise<void>;
}

async function exists(p: string): Promise<boolean> {
  try {
    await stat(p);
    return true;
  } catch {
    return false;
  }
}

async function resolve(gitdir: string, ref: string): Promise<string | undefined> {
  try {
    return await git.resolveRef({ fs, gitdir, ref });
  } catch {
    return undefined;
  }
}

export class LocalRepository implements Repository {
  readonly store: ObjectStore;
  readonly key: string;
  readonly display: string;

  constructor(
    readonly gitdir: string,
    private readonly createIfMissing: boolean,
  ) {
    this.store = new ObjectStore(gitdir);
    this.key = `file://${gitdir}`;
    this.display = this.key;
  }

  private async ensure(): Promise<void> {
    if (await exists(join(this.gitdir, 'HEAD'))) return;
    if (!this.createIfMissing) throw new GitEngineError('NotFound', `repository ${this.display} not found (no bare repository at that path)`);
    await mkdir(this.gitdir, { recursive: true });
    await git.init({ fs, gitdir: this.gitdir, bare: true, defaultBranch: 'main' });
  }

  async defaultBranch(): Promise<string | undefined> {
    try {
      const head = await git.resolveRef({ fs, gitdir: this.gitdir, ref: 'HEAD', depth: 2 });
      return head.startsWith('refs/heads/') ? head.slice('refs/heads/'.length) : undefined;
    } catch {
      return undefined;
    }
  }

  async sync(branch: string): Promise<BranchState> {
    await this.ensure();
    const tip = await resolve(this.gitdir, `refs/heads/${branch}`);
    return { tip, base: tip ?? (await resolve(this.gitdir, 'HEAD')) };
  }

  async push(branch: string, expected: string | undefined, commit: string, _objects: readonly PendingObject[], fence: () => Promise<void>): Promise<void> {
    const refPath = join(this.gitdir, 'refs', 'heads', ...branch.split('/'));
    const lockPath = `${refPath}.lock`;
    let fh;
    try {
      // The ref's directory is made when the lock finds it missing (a new repository, a branch
      // under a new prefix): a recursive mkdir on every push was ~8% of the git workers' time per
      // edit (bench/scale profile), as the loose-object directories were (objects.ts writeLoose).
      fh = await open(lockPath, 'wx').catch(async (e: NodeJS.ErrnoException) => {
        if (e.code !== 'ENOENT') throw e;
        await mkdir(dirname(refPath), { recursive: true });
        return open(lockPath, 'wx');
      });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'EEXIST') {
        throw new GitEngineError('Conflict', `refs/heads/${branch} of ${this.display} is locked by another writer`, true);
      }
      throw e;
    }
    let renamed = false;
    try {
      const current = await resolve(this.gitdir, `refs/heads/${branch}`);
      if (current !== expected) {
        throw new GitEngineError('Conflict', `refs/heads/${branch} of ${this.display} moved to ${current ?? '(deleted)'}`, true);
      }
      await fence();
      // Like git's own ref updates, no fsync (core.fsync leaves refs alone by default).
      await fh.write(`${commit}\n`);
      await fh.close();
      fh = undefined;
      await rename(lockPath, refPath);
      renamed = true;
    } finally {
      if (fh) await fh.close();
      if (!renamed) await unlink(lockPath).catch(() => undefined);
    }
  }
}

export class HttpRepository implements Repository {
  readonly store: ObjectStore;
  readonly key: string;
  readonly display: string;
  private readonly gitdir: string;
  private readonly headers: Record<string, string>;

  constructor(
    private readonly url: string,
    credentials: GitCredentials | undefined,
    cacheDir: string,
    private readonly http: HttpClient,
  ) {
    this.key = url;
    this.display = displayURL(url);
    const u = new URL(url);
    const slug = `${u.host}${u.pathname}`.replace(/[^A-Za-z0-9._-]+/g, '_').slice(0, 80);
    this.gitdir = join(cacheDir, `${slug}-${createHash('sha256').update(url).digest('hex').slice(0, 12)}.git`);
    this.store = new ObjectStore(this.gitdir);
    this.headers = authorizationHeader(credentials);
  }

  private async ensure(): Promise<void> {
    if (await exists(join(this.gitdir, 'HEAD'))) return;
    await mkdir(this.gitdir, { recursive: true });
    await git.init({ fs, gitdir: this.gitdir, bare: true, defaultBranch: 'main' });
    await git.addRemote({ fs, gitdir: this.gitdir, remote: 'origin', url: this.url, force: true });
  }

  private async has(oid: string): Promise<boolean> {
    try {
      await git.readObject({ fs, gitdir: this.gitdir, oid, format: 'deflated', cache: this.store.gitCache });
      return true;
    } catch {
      return false;
    }
  }

  private advertisement: Advertisement | undefined;

  async sync(branch: string): Promise<BranchState> {
    await this.ensure();
    try {
      // The receive-pack advertisement is the remote state the push's compare-and-swap is
      // checked against; objects are fetched only when the remote moved past what we have.
      const adv = (this.advertisement = await discoverReceivePack(this.http, this.url, this.headers));
      const tip = adv.refs.get(`refs/heads/${branch}`);
      let baseRef = tip ? `refs/heads/${branch}` : undefined;
      let base = tip;
      if (!tip && adv.refs.size > 0) {
        // A missing branch starts from the remote's default branch (HEAD's target, which only
        // the upload-pack advertisement names).
        const t = await this.remoteHead();
        if (t) {
          baseRef = t.ref;
          base = t.oid;
        }
      }
      if (base && baseRef && !(await this.has(base))) {
        // Shallow on first contact: the history below the tip is never needed to build a commit.
        const short = baseRef.replace(/^refs\/heads\//, '');
        const first = !(await exists(join(this.gitdir, 'refs', 'remotes')));
        await git.fetch({
          fs,
          http: this.http,
          gitdir: this.gitdir,
          url: this.url,
          ref: short,
          singleBranch: true,
          tags: false,
          depth: first ? 1 : undefined,
          headers: { ...this.headers },
          cache: this.store.gitCache,
        });
        if (!(await this.has(base))) {
          // The branch moved between discovery and fetch: build on what was fetched; the
          // compare-and-swap then expects that value.
          const fetched = await resolve(this.gitdir, `refs/remotes/origin/${short}`);
          return tip ? { tip: fetched, base: fetched } : { tip: undefined, base: fetched };
        }
      }
      return { tip, base };
    } catch (e) {
      throw classifyError(e, this.display);
    }
  }

  /** The remote's default branch: HEAD's target, which only the upload-pack advertisement names. */
  private async remoteHead(): Promise<{ ref: string; oid: string } | undefined> {
    const info = await git.getRemoteInfo2({ http: this.http, url: this.url, headers: { ...this.headers }, protocolVersion: 1 });
    const refs = info.refs ?? [];
    const head = refs.find((r) => r.ref === 'HEAD');
    const target = head?.target ?? refs.find((r) => r.ref !== 'HEAD' && r.oid === head?.oid)?.ref;
    return target ? refs.find((r) => r.ref === target) : undefined;
  }

  /** The remote's default branch name, when it has one. */
  async defaultBranch(): Promise<string | undefined> {
    try {
      return (await this.remoteHead())?.ref.replace(/^refs\/heads\//, '');
    } catch (e) {
      throw classifyError(e, this.display);
    }
  }

  async push(branch: string, expected: string | undefined, commit: string, objects: readonly PendingObject[], fence: () => Promise<void>): Promise<void> {
    try {
      const adv = this.advertisement ?? (await discoverReceivePack(this.http, this.url, this.headers));
      await fence();
      await sendReceivePack(this.http, this.url, this.headers, adv, { ref: `refs/heads/${branch}`, oldOid: expected ?? ZERO_OID, newOid: commit, objects });
      this.advertisement = undefined;
      await git.writeRef({ fs, gitdir: this.gitdir, ref: `refs/remotes/origin/${branch}`, value: commit, force: true });
    } catch (e) {
      this.advertisement = undefined;
      throw classifyError(e, this.display);
    }
  }
}

export function openRepository(loc: RepositoryLocation & { gitdir?: string }, credentials: GitCredentials | undefined, cacheDir: string, http: HttpClient): Repository {
  if (loc.kind === 'http') return new HttpRepository(loc.url, credentials, cacheDir, http);
  return new LocalRepository(loc.gitdir!, loc.kind === 'local');
}
