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

export function generatedMessage(w: Window, target: string): string {
  const changes = w.changes.map((x) => x.change);
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
