// `reverser-apiserver analyze`: the acceptance gate over a local checkout, a bare repository or a
// URL, answering with the same JSON document as the library (src/public/analyzer.ts) and the
// served RepositoryScan. Exit status: 0 every scanned folder is acceptable, 1 one is not, 2 a
// usage or access error.
import { AnalyzerError, allAcceptable, scanFolder, scanRepository, type ScanReport } from '../public/analyzer.js';

export const ANALYZE_HELP = `Usage: reverser-apiserver analyze <repository> [flags]

Answers "may this folder become a GitTarget, and if not, why" with the writer's own rules.
<repository> is an https:// URL, a bare repository, a checkout or a plain directory.

Flags:
  --path <folder>        judge this folder only (default: every folder of the repository)
  --recursive            with --path: judge the folder and every folder below it
  --branch <name>        the branch to read (default: the repository's HEAD branch)
  --worktree             for a checkout: read the files on disk, not the branch's commit
  --format json|table    output (default table)
Credentials for URLs come from the environment: REVERSER_GIT_TOKEN (bearer), or
REVERSER_GIT_USERNAME and REVERSER_GIT_PASSWORD.

Exit status: 0 every scanned folder is acceptable, 1 one is not, 2 usage or access error.
`;

interface AnalyzeFlags {
  repository: string;
  path?: string;
  recursive: boolean;
  branch?: string;
  worktree: boolean;
  format: 'json' | 'table';
}

class UsageError extends Error {}

function parse(args: string[]): AnalyzeFlags {
  const out: Partial<AnalyzeFlags> & { recursive: boolean; worktree: boolean; format: 'json' | 'table' } = { recursive: false, worktree: false, format: 'table' };
  const positional: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    const eq = a.indexOf('=');
    const name = a.startsWith('--') ? (eq > 0 ? a.slice(2, eq) : a.slice(2)) : undefined;
    const value = (): string => {
      if (eq > 0) return a.slice(eq + 1);
      const v = args[++i];
      if (v === undefined) throw new UsageError(`--${name} needs a value`);
      return v;
    };
    if (name === undefined) positional.push(a);
    else if (name === 'path') out.path = value();
    else if (name === 'branch') out.branch = value();
    else if (name === 'recursive') out.recursive = eq > 0 ? value() === 'true' : true;
    else if (name === 'worktree') out.worktree = eq > 0 ? value() === 'true' : true;
    else if (name === 'format') {
      const f = value();
      if (f !== 'json' && f !== 'table') throw new UsageError(`--format must be json or table, got ${JSON.stringify(f)}`);
      out.format = f;
    } else throw new UsageError(`unknown flag --${name}`);
  }
  if (positional.length !== 1) throw new UsageError(positional.length ? `one repository, got ${positional.length}` : 'name the repository to analyze');
  return { ...out, repository: positional[0] };
}

function credentialsFromEnv(): { username: string; password: string } | { bearerToken: string } | undefined {
  const token = process.env.REVERSER_GIT_TOKEN;
  if (token) return { bearerToken: token };
  const username = process.env.REVERSER_GIT_USERNAME;
  const password = process.env.REVERSER_GIT_PASSWORD;
  return username && password ? { username, password } : undefined;
}

export function renderTable(report: ScanReport): string {
  const rows: string[][] = [['FOLDER', 'VERDICT', 'REASON', 'FILE', 'MESSAGE']];
  for (const f of report.folders) {
    if (f.acceptable) rows.push([f.path, 'Acceptable', '', '', '']);
    else f.findings.forEach((x, i) => rows.push([i === 0 ? f.path : '', i === 0 ? 'Refused' : '', x.reason + (x.permanent ? '' : ' (transient)'), x.file ?? '', x.message]));
  }
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => r[c].length)));
  const lines = rows.map((r) => r.map((cell, c) => (c === r.length - 1 ? cell : cell.padEnd(widths[c]))).join('   ').trimEnd());
  const head = report.branchExists ? '' : `branch ${report.branch} does not exist yet: judged as the default branch holds it\n`;
  return head + lines.join('\n') + '\n';
}

export async function runAnalyze(args: string[], out: (s: string) => void = (s) => process.stdout.write(s), err: (s: string) => void = (s) => process.stderr.write(s)): Promise<number> {
  if (args.includes('--help') || args.includes('-h')) {
    out(ANALYZE_HELP);
    return 0;
  }
  let flags: AnalyzeFlags;
  try {
    flags = parse(args);
  } catch (e) {
    err(`error: ${(e as Error).message}\n${ANALYZE_HELP}`);
    return 2;
  }
  try {
    const source = { repository: flags.repository, branch: flags.branch, worktree: flags.worktree, credentials: credentialsFromEnv() };
    const report = flags.path !== undefined && !flags.recursive ? await scanFolder({ ...source, path: flags.path }) : await scanRepository({ ...source, path: flags.path });
    out(flags.format === 'json' ? JSON.stringify(report, null, 2) + '\n' : renderTable(report));
    return allAcceptable(report) ? 0 : 1;
  } catch (e) {
    err(`error: ${e instanceof AnalyzerError ? e.message : (e as Error).message}\n`);
    return 2;
  }
}
