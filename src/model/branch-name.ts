// The branch-name rule (git check-ref-format for a branch), shared by the API's validation of
// GitTarget spec.branch and the git engine, so the API refuses exactly what the engine would.
// Pure: imports nothing (the API must not load the git engine).
const BRANCH_RE = /^(?!\/|.*\/\/|.*\/$|.*\.\.|.*@\{|.*\.lock$|.*\/\.|\.)[^\0- ~^:?*[\\\x7f]+$/;

/** An error message, or undefined when `branch` is a valid branch name. */
export function validateBranchName(branch: string): string | undefined {
  return typeof branch === 'string' && BRANCH_RE.test(branch) ? undefined : `"${branch}" is not a valid branch name`;
}
