// CommitRequest: a one-shot "save" that closes a GitTarget's pending changes into one commit.
import { Type, type Static } from '@sinclair/typebox';
import { ConditionsSchema, LocalObjectReferenceSchema, kindSchema } from './meta.js';
import { type FieldError, invalidValue } from './field-errors.js';

/**
 * Longest message, in characters (design contract): a commit subject and a body of a few
 * paragraphs. It bounds what a message puts in every `git log` and in the table's Message column,
 * and what trailer parsing reads (linear anyway).
 */
export const MESSAGE_MAX = 1024;

export const CommitRequestSpecSchema = Type.Object(
  {
    targetRef: Type.Object(LocalObjectReferenceSchema.properties, {
      additionalProperties: false,
      description: 'The GitTarget whose pending changes this request commits (same namespace).',
    }),
    message: Type.String({
      minLength: 1,
      maxLength: MESSAGE_MAX,
      description:
        'Commit message, 1..1024 characters of plain text: newline and tab allowed, CRLF stored as LF, other control characters refused. A trailer naming a person (Co-authored-by, Signed-off-by, ...) other than the submitter requires the RBAC verb assert-author on the GitTarget.',
    }),
    author: Type.Optional(
      Type.Object(
        {
          name: Type.String({ minLength: 1, maxLength: 256, description: 'Author name.' }),
          email: Type.String({ minLength: 3, maxLength: 256, description: 'Author email.' }),
        },
        {
          additionalProperties: false,
          description:
            'Commit author to assert. Requires the RBAC verb assert-author on the GitTarget; omitted means the submitter is the author.',
        },
      ),
    ),
    closeDelaySeconds: Type.Optional(
      Type.Integer({ minimum: 0, maximum: 300, default: 0, description: 'Keep collecting changes for this long after attaching, 0..300.' }),
    ),
    ttlSecondsAfterFinished: Type.Optional(
      Type.Integer({ minimum: 0, maximum: 31536000, default: 3600, description: 'Delete the request this long after it finished.' }),
    ),
  },
  { additionalProperties: false, description: 'CommitRequestSpec is immutable after creation.' },
);

export type CommitRequestSpec = Static<typeof CommitRequestSpecSchema>;

export const CommitRequestStatusSchema = Type.Object(
  {
    observedGeneration: Type.Optional(Type.Integer({ format: 'int64' })),
    submitter: Type.Optional(
      Type.Object(
        {
          username: Type.String(),
          uid: Type.Optional(Type.String()),
          groups: Type.Optional(Type.Array(Type.String())),
          extra: Type.Optional(Type.Record(Type.String(), Type.Array(Type.String()))),
        },
        { additionalProperties: false, description: 'Who created the request, recorded by the server from the authenticated identity.' },
      ),
    ),
    conditions: Type.Optional(ConditionsSchema),
    sha: Type.Optional(Type.String({ description: 'The commit made for this request.' })),
    branch: Type.Optional(Type.String({ description: 'The branch the commit was pushed to.' })),
  },
  { additionalProperties: false },
);

export const CommitRequestSchema = kindSchema(CommitRequestSpecSchema, CommitRequestStatusSchema, "CommitRequest closes a GitTarget's pending changes into one commit with a message and an author.");

// Plain text: newline and tab are the only control characters. ESC starts terminal escape
// sequences that `git log` passes to the reader's terminal, NUL ends a C string early in git's own
// readers, and a lone CR moves the cursor back over what a line showed. C1 controls (U+0080..U+009F)
// are escapes to some terminals too.
const FORBIDDEN_CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f]/;

/**
 * CRLF line ends become LF, as `git commit` stores them (its message cleanup strips trailing
 * whitespace, CR included): the stored message is the committed one, and the trailer rules read
 * the same lines git will. Runs on create and update, so a re-applied manifest compares equal.
 */
export function normalizeCommitRequest(obj: Record<string, unknown>): void {
  const spec = obj.spec as Record<string, unknown> | undefined;
  if (spec && typeof spec.message === 'string' && spec.message.includes('\r\n')) spec.message = spec.message.replace(/\r\n/g, '\n');
}
const EMAIL = /^[^\s@<>]+@[^\s@<>]+$/;

export function validateCommitRequest(obj: Record<string, unknown>): FieldError[] {
  const errs: FieldError[] = [];
  const spec = (obj.spec ?? {}) as Record<string, unknown>;
  if (typeof spec.message === 'string') {
    const m = FORBIDDEN_CONTROL.exec(spec.message);
    if (m) {
      const code = m[0].charCodeAt(0).toString(16).padStart(2, '0');
      const what = code === '0d' ? 'a carriage return not followed by a newline' : `\\x${code}`;
      errs.push(invalidValue('spec.message', spec.message, `must be plain text: no control characters other than newline and tab (found ${what} at offset ${m.index})`));
    } else if (spec.message.trim() === '') {
      errs.push(invalidValue('spec.message', spec.message, 'must not be blank'));
    }
  }
  const author = spec.author as Record<string, unknown> | undefined;
  if (author && typeof author.email === 'string' && !EMAIL.test(author.email)) {
    errs.push(invalidValue('spec.author.email', author.email, 'must be an email address (name@domain)'));
  }
  if (author && typeof author.name === 'string' && /[<>\n\r\x00]/.test(author.name)) {
    errs.push(invalidValue('spec.author.name', author.name, 'must not contain "<", ">" or line breaks'));
  }
  return errs;
}

export function validateCommitRequestUpdate(obj: Record<string, unknown>, old: Record<string, unknown>): FieldError[] {
  if (JSON.stringify(obj.spec ?? null) !== JSON.stringify(old.spec ?? null)) {
    return [invalidValue('spec', obj.spec, 'field is immutable; a CommitRequest cannot be changed after creation, create a new one')];
  }
  return [];
}
