// Generated commit messages for windows without a CommitRequest message, in first-seen order. One
// scheme for every change (docs/git-engine.md#commit-messages): a verb, the plural resource as in
// the file's path, and namespace/name — `Update configmaps team-a/one`, `Delete configmaps
// team-a/one`; several changes are `<Verb> N objects in <GitTarget>` (Update: all writes, Delete:
// all deletions, Change: both) with one body line per change.
//
// A generated message carries no trailers, ever (docs/attribution.md#trailers): a mirrored commit's
// author is the audited user, and nothing in an object may name anyone else. Names come from the
// source cluster (an RBAC object's name may hold a line break and "Co-authored-by: ..."), so every
// control character in them is escaped: the subject stays one line, and each body line starts
// with "- ", which git never reads as a trailer (api/commit-trailers.ts).
import type { Window } from './record.js';
import type { PendingChange } from './types.js';

/** The plural resource of a change (the folder its file is in); a deletion seen without one falls back to the naive plural of its kind. */
function resourceOf(c: PendingChange): string {
  if (c.op === 'write') return c.resource ?? c.source?.resource ?? `${c.object.kind.toLowerCase()}s`;
  return c.source?.resource ?? `${c.ref.kind.toLowerCase()}s`;
}

/** The subject of a commit of what changed while no replica watched the source (docs/git-engine.md). */
export const RESYNC_SUBJECT = 'Resync: changes made while reverser-apiserver was not watching';

/** `s` on one line of plain text: control characters (line breaks, ESC, ...) as \uXXXX escapes. */
function plain(s: string): string {
  return s.replace(/[\x00-\x1f\x7f-\x9f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

function describe(c: PendingChange): string {
  const { namespace, name } = c.op === 'write' ? c.object.metadata : c.ref;
  return plain(`${resourceOf(c)} ${namespace ? `${namespace}/` : ''}${name}`);
}

const verb = (c: PendingChange) => (c.op === 'write' ? 'Update' : 'Delete');

export function generatedMessage(w: Window, target: string): string {
  const changes = w.changes.map((x) => x.change);
  if (w.resync) {
    // What the re-list found that neither the branch nor the open window held (reconcile.ts); the
    // engine commits only the objects among these that differ from the branch.
    const n = w.chunkedChanges ?? changes.length;
    return `${RESYNC_SUBJECT}\n\nRe-listed ${target}: ${n} object${n === 1 ? '' : 's'} not pending in the open window were compared with the branch; this commit holds those that differed.`;
  }
  if (w.kind === 'snapshot') {
    const writes = changes.filter((c) => c.op === 'write').length;
    const deletes = changes.length - writes;
    return `Snapshot of ${target}: ${writes} object${writes === 1 ? '' : 's'}${deletes ? `, ${deletes} removed` : ''}`;
  }
  if (changes.length === 1) return `${verb(changes[0]!)} ${describe(changes[0]!)}`;
  const verbs = new Set(changes.map(verb));
  const summary = verbs.size === 1 ? [...verbs][0]! : 'Change';
  const lines = changes.slice(0, 100).map((c) => `- ${verb(c).toLowerCase()} ${describe(c)}`);
  if (changes.length > 100) lines.push(`- ... and ${changes.length - 100} more`);
  return `${summary} ${changes.length} objects in ${target}\n\n${lines.join('\n')}`;
}
