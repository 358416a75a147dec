// Generated commit messages for windows without a CommitRequest message. First-seen order.
import type { Window } from './record.js';
import type { PendingChange } from './types.js';

function describe(c: PendingChange): string {
  if (c.op === 'write') {
    const m = c.object.metadata;
    return `${c.resource ?? c.object.kind} ${m.namespace ? `${m.namespace}/` : ''}${m.name}`;
  }
  return `${c.ref.kind} ${c.ref.namespace ? `${c.ref.namespace}/` : ''}${c.ref.name}`;
}

/** The subject of a commit of what changed while no replica watched the source (docs/git-engine.md). */
export const RESYNC_SUBJECT = 'Resync: changes made while reverser-apiserver was not watching';

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
  const verb = (c: PendingChange) => (c.op === 'write' ? 'Update' : 'Delete');
  if (changes.length === 1) return `${verb(changes[0])} ${describe(changes[0])}`;
  const lines = changes.slice(0, 100).map((c) => `- ${verb(c).toLowerCase()} ${describe(c)}`);
  if (changes.length > 100) lines.push(`- ... and ${changes.length - 100} more`);
  return `Update ${changes.length} objects in ${target}\n\n${lines.join('\n')}`;
}
