// Scans a tree of files (a commit of a Git repository, or a directory) with the gate's rules and
// builds the one JSON document all three faces answer with (src/analyzer/types.ts). Where the
// files come from is the caller's business (src/git/scan-source.ts reads commits and directories).
import { analyzeManifest, needsReading, nonYamlFinding, type FileAnalysis } from './file-rules.js';
import { displayFolder, judgeFolder, normalizeFolder, type AnalyzedFile } from './folder-rules.js';
import { SCHEMA_VERSION, type Finding, type FolderClaim, type FolderVerdict, type ScanReport } from './types.js';

export interface TreeFile {
  /** Repository-relative path with "/" separators. */
  path: string;
  /** What `read` needs to find the content (a blob oid, a file system path). */
  id: string;
}

export interface FileTree {
  /** Every regular file of the tree under `folder` ('' = all), in path order. */
  files(folder: string): Promise<TreeFile[]>;
  read(file: TreeFile): Promise<Buffer>;
  /**
   * Reads many files in whatever order is cheapest for the source (a repository's pack order) and
   * hands each to `each` with its index in `files`. Optional: without it, `read` is called per file.
   */
  readEach?(files: readonly TreeFile[], each: (index: number, content: Buffer) => void): Promise<void>;
}

export interface ScanOptions {
  /** The folder to judge ('.' or '' = the root). */
  path?: string;
  /** 'folder': one verdict for `path`; 'repository': a verdict for `path` and every folder below it that holds files. */
  scope: 'folder' | 'repository';
  /** Folders other GitTargets claim on this repository and branch. */
  claims?: readonly FolderClaim[];
  /** Facts about the source for the report's header. */
  repository?: string;
  branch?: string;
  commit?: string;
  branchExists?: boolean;
}

const READ_CONCURRENCY = 64;

const byPath = (a: { path: string }, b: { path: string }) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0);

/** Candidate folders of a repository scan: `root` and every folder under it that holds a file. */
function candidateFolders(root: string, files: readonly TreeFile[]): string[] {
  const out = new Set<string>([root]);
  const prefix = root + '/';
  let lastDir: string | undefined;
  for (const f of files) {
    // Every folder strictly inside root on the file's path; sorted files share them, so a file in
    // the folder just seen adds nothing new.
    const end = f.path.lastIndexOf('/');
    if (end < 0 || (lastDir !== undefined && end === lastDir.length && f.path.startsWith(lastDir))) continue;
    lastDir = f.path.slice(0, end);
    for (let i = f.path.indexOf('/'); i >= 0 && i <= end; i = f.path.indexOf('/', i + 1)) {
      if (i > root.length && (root === '' || f.path.startsWith(prefix))) out.add(f.path.slice(0, i));
    }
  }
  return [...out].sort();
}

/** The entries of a path-sorted array that lie inside `folder`: one contiguous range, [folder/, folder0) ('0' follows '/'). */
function within<T>(sorted: readonly T[], folder: string, pathOf: (t: T) => string = (t) => (t as { path: string }).path): T[] {
  if (folder === '') return sorted.slice();
  const lowerBound = (key: string) => {
    let lo = 0;
    let hi = sorted.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (pathOf(sorted[mid]) < key) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  return sorted.slice(lowerBound(folder + '/'), lowerBound(folder + '0'));
}

export async function scanTree(tree: FileTree, opts: ScanOptions): Promise<ScanReport> {
  const root = normalizeFolder(opts.path ?? '');
  const files = (await tree.files(root)).sort(byPath);
  const manifests = files.filter((f) => needsReading(f.path));
  const analyses: FileAnalysis[] = new Array(manifests.length);
  if (tree.readEach) await tree.readEach(manifests, (i, content) => (analyses[i] = analyzeManifest(manifests[i].path, content.toString('utf8'))));
  else for (let i = 0; i < manifests.length; i += READ_CONCURRENCY) {
    await Promise.all(
      manifests.slice(i, i + READ_CONCURRENCY).map(async (f, j) => {
        analyses[i + j] = analyzeManifest(f.path, (await tree.read(f)).toString('utf8'));
      }),
    );
  }
  const analyzed: AnalyzedFile[] = manifests.map((f, i) => ({ path: f.path, analysis: analyses[i] }));
  const others: Finding[] = [];
  for (const f of files) {
    const n = nonYamlFinding(f.path);
    if (n) others.push({ ...n, file: f.path });
  }
  const folders = opts.scope === 'folder' ? [root] : candidateFolders(root, files);
  // Paths sharing a prefix are contiguous in sorted order: each folder's files are one range.
  const verdicts: FolderVerdict[] = folders.map((folder) =>
    judgeFolder(folder, within(analyzed, folder), within(others as Array<Finding & { path?: string }>, folder, (o) => o.file!), opts.claims ?? []),
  );
  return {
    schemaVersion: SCHEMA_VERSION,
    ...(opts.repository !== undefined ? { repository: opts.repository } : {}),
    ...(opts.branch !== undefined ? { branch: opts.branch } : {}),
    ...(opts.commit !== undefined ? { commit: opts.commit } : {}),
    branchExists: opts.branchExists ?? true,
    folders: verdicts,
    files: analyzed.filter((a) => a.analysis.objects.length > 0).map((a) => ({ path: a.path, objects: a.analysis.objects })),
  };
}

/** Every verdict acceptable (the CLI's exit status). */
export function allAcceptable(report: ScanReport): boolean {
  return report.folders.every((f) => f.acceptable);
}

export { displayFolder };
