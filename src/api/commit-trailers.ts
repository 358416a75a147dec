// The trailers of a commit message, found exactly as git finds them (trailer.c and commit.c of
// git 2.39, the `git interpret-trailers --parse` reading with git's default configuration:
// separators ":", comment character "#", no trailer.* keys). Only the last paragraph can be a
// trailer block; it must be all `Key: value` lines (and their folded continuation lines), or hold
// a git-generated trailer ("Signed-off-by: ", "(cherry picked from commit ") and be at least 25%
// trailers. Trailing comment lines, blank lines, an old "Conflicts:" block and everything below a
// scissors line are ignored. With `divider` (git's default for interpret-trailers and `git am`),
// a line starting with "---" and a space ends the message as a patch would; `git log
// --format=%(trailers)` reads commit messages without it. test/unit/commit-trailers.test.ts checks
// every rule against the real git. Linear in the message's length.

export interface Trailer {
  /** The key as written, trimmed ("Co-authored-by"). */
  key: string;
  /** The value, trimmed, continuation lines unfolded to single spaces (as `--unfold` prints it). */
  value: string;
}

const COMMENT = '#';
const GIT_GENERATED_PREFIXES = ['Signed-off-by: ', '(cherry picked from commit '];
const CUT_LINE = `${COMMENT} ------------------------ >8 ------------------------\n`;

// git's own ctype (ctype.c): only these four are spaces, and only ASCII letters and digits alnum.
const isSpace = (c: string | undefined): boolean => c === ' ' || c === '\t' || c === '\n' || c === '\r';
const isAlnum = (c: string): boolean => (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');

function nextLine(s: string, i: number): number {
  const nl = s.indexOf('\n', i);
  return nl === -1 ? s.length : nl + 1;
}

/** Start of the last line of s[0, len), or -1 when len is 0 (a final newline belongs to that line). */
function lastLine(s: string, len: number): number {
  if (len === 0) return -1;
  if (len === 1) return 0;
  const nl = s.lastIndexOf('\n', len - 2);
  return nl === -1 ? 0 : nl + 1;
}

function isBlankLine(s: string, i: number): boolean {
  while (i < s.length && s[i] !== '\n' && isSpace(s[i])) i++;
  return i >= s.length || s[i] === '\n';
}

/**
 * Offset of the separator in "<token><optional whitespace>:" from `from`, else -1 (0 when the line
 * starts with it). The token is letters, digits and "-".
 */
function findSeparator(s: string, from: number): number {
  let whitespaceFound = false;
  for (let i = from; i < s.length; i++) {
    const c = s[i]!;
    if (c === ':') return i - from;
    if (!whitespaceFound && (isAlnum(c) || c === '-')) continue;
    if (i !== from && (c === ' ' || c === '\t')) {
      whitespaceFound = true;
      continue;
    }
    break;
  }
  return -1;
}

function findPatchStart(s: string): number {
  for (let i = 0; i < s.length; i = nextLine(s, i)) {
    if (s.startsWith('---', i) && isSpace(s[i + 3])) return i;
  }
  return s.length;
}

/** Where the scissors line cuts the message (wt_status_locate_end: searched in the whole text). */
function locateEnd(s: string, len: number): number {
  if (s.startsWith(CUT_LINE)) return 0;
  const p = s.indexOf(`\n${CUT_LINE}`);
  return p === -1 ? len : p + 1;
}

/**
 * End of the trailer block: before trailing comments and empty lines and an old "Conflicts:"
 * block (ignore_non_trailer). Like git, a run that starts at offset 0 is taken from its second line.
 */
function findTrailerEnd(s: string, len: number): number {
  const cutoff = locateEnd(s, len);
  let boc = 0;
  let inConflicts = false;
  for (let bol = 0; bol < cutoff; ) {
    const nl = s.indexOf('\n', bol);
    const next = nl === -1 || nl >= cutoff ? cutoff : nl + 1;
    if (s[bol] === COMMENT || s[bol] === '\n') {
      if (!boc) boc = bol;
    } else if (s.startsWith('Conflicts:\n', bol)) {
      inConflicts = true;
      if (!boc) boc = bol;
    } else if (inConflicts && s[bol] === '\t') {
      // a path in the conflicts block
    } else if (boc) {
      boc = 0;
      inConflicts = false;
    }
    bol = next;
  }
  return boc ? boc : cutoff;
}

/** Start of the trailer block in s[0, len), or len when the last paragraph is not one. */
function findTrailerStart(s: string, len: number): number {
  let endOfTitle = 0;
  // The first paragraph is the title and cannot be trailers.
  for (endOfTitle = 0; endOfTitle < len; endOfTitle = nextLine(s, endOfTitle)) {
    if (s[endOfTitle] === COMMENT) continue;
    if (isBlankLine(s, endOfTitle)) break;
  }
  let onlySpaces = true;
  let recognizedPrefix = false;
  let trailerLines = 0;
  let nonTrailerLines = 0;
  // Lines that continue a trailer if one comes above them, else count as non-trailers.
  let possibleContinuations = 0;
  for (let l = lastLine(s, len); l >= endOfTitle; l = lastLine(s, l)) {
    if (s[l] === COMMENT) {
      nonTrailerLines += possibleContinuations;
      possibleContinuations = 0;
      continue;
    }
    if (isBlankLine(s, l)) {
      if (onlySpaces) continue;
      nonTrailerLines += possibleContinuations;
      if (recognizedPrefix && trailerLines * 3 >= nonTrailerLines) return nextLine(s, l);
      if (trailerLines && !nonTrailerLines) return nextLine(s, l);
      return len;
    }
    onlySpaces = false;
    if (GIT_GENERATED_PREFIXES.some((p) => s.startsWith(p, l))) {
      trailerLines++;
      possibleContinuations = 0;
      recognizedPrefix = true;
      continue;
    }
    if (findSeparator(s, l) >= 1 && !isSpace(s[l])) {
      trailerLines++;
      possibleContinuations = 0;
    } else if (isSpace(s[l])) {
      possibleContinuations++;
    } else {
      nonTrailerLines += 1 + possibleContinuations;
      possibleContinuations = 0;
    }
  }
  return len;
}

function trim(s: string): string {
  let a = 0;
  let b = s.length;
  while (a < b && isSpace(s[a])) a++;
  while (b > a && isSpace(s[b - 1])) b--;
  return s.slice(a, b);
}

/** A folded value on one line: each newline and the spaces after it become one space. */
function unfold(v: string): string {
  return trim(v.replace(/\n[\t\n\r ]*/g, ' '));
}

/**
 * The trailers of `message`, in order, as `git interpret-trailers --parse` (divider: true, the
 * default) or `--parse --no-divider` (divider: false) prints them.
 */
export function parseTrailers(message: string, opts: { divider?: boolean } = {}): Trailer[] {
  const len = opts.divider === false ? message.length : findPatchStart(message);
  const end = findTrailerEnd(message, len);
  const start = findTrailerStart(message, end);
  // One string per trailer: a line starting with a space continues the trailer above it.
  const lines: string[] = [];
  let continues = false;
  for (let i = start; i < end; ) {
    const nl = message.indexOf('\n', i);
    const next = nl === -1 || nl >= end ? end : nl + 1;
    const line = message.slice(i, next);
    i = next;
    if (continues && isSpace(line[0])) {
      lines[lines.length - 1] += line;
      continue;
    }
    lines.push(line);
    continues = findSeparator(line, 0) >= 1;
  }
  const trailers: Trailer[] = [];
  for (const line of lines) {
    if (line[0] === COMMENT) continue;
    const sep = findSeparator(line, 0);
    if (sep < 1) continue;
    trailers.push({ key: trim(line.slice(0, sep)), value: unfold(trim(line.slice(sep + 1))) });
  }
  return trailers;
}

/**
 * Every trailer some git reading of `message` finds: with the "---" divider (interpret-trailers,
 * `git am`) and without it (`git log --format=%(trailers)`), each reading's trailers once.
 */
export function allTrailerReadings(message: string): Trailer[] {
  const seen = new Set<string>();
  const out: Trailer[] = [];
  for (const t of [...parseTrailers(message, { divider: true }), ...parseTrailers(message, { divider: false })]) {
    const k = `${t.key}\n${t.value}`;
    if (seen.has(k)) continue;
    seen.add(k);
    out.push(t);
  }
  return out;
}
