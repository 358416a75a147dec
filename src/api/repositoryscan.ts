// RepositoryScan: "may this folder become a GitTarget, and if not, why", asked of the server. A
// create-only resource like TokenReview or SubjectAccessReview: `kubectl create -f scan.yaml -o
// yaml` returns the acceptance gate's verdict in `status` (src/analyzer/schema.ts, the same
// document as `reverser-apiserver analyze --format json` and the library), and nothing is stored.
import { Type } from '@sinclair/typebox';
import { LocalObjectReferenceSchema, kindSchema } from './meta.js';
import { type FieldError, invalidValue } from './field-errors.js';
import { ScanReportSchema } from '../analyzer/schema.js';
import { validateRepositoryURL, validateTargetPath } from '../model/destination.js';
import { validateBranchName } from '../model/branch-name.js';

export const RepositoryScanSpecSchema = Type.Object(
  {
    repository: Type.Object(
      {
        url: Type.String({ minLength: 1, description: 'The repository, as a GitTarget names it: https://, http://, file:///path.git or local:<name>.' }),
        secretRef: Type.Optional(
          Type.Object(LocalObjectReferenceSchema.properties, {
            additionalProperties: false,
            description: 'Credentials Secret in this namespace (username/password or token keys). The requester must be allowed to get it.',
          }),
        ),
      },
      { additionalProperties: false },
    ),
    branch: Type.Optional(Type.String({ description: "The branch to read; default: the repository's default branch. A missing branch is judged as the default branch holds it." })),
    path: Type.Optional(Type.String({ description: 'The folder to judge ("." is the root). Omitted: every folder of the repository.' })),
    scope: Type.Optional(
      Type.Union([Type.Literal('Folder'), Type.Literal('Repository')], {
        description: 'Folder: one verdict for path. Repository: a verdict for path and every folder below it. Default: Folder when path is set, else Repository.',
      }),
    ),
  },
  { additionalProperties: false },
);

export const RepositoryScanSchema = kindSchema(
  RepositoryScanSpecSchema,
  ScanReportSchema,
  'RepositoryScan asks whether folders of a repository may become GitTargets (the writer\'s acceptance gate). Create-only: the verdict is returned in status and nothing is stored.',
);

export function validateRepositoryScan(obj: Record<string, unknown>): FieldError[] {
  const errs: FieldError[] = [];
  const spec = (obj.spec ?? {}) as { repository?: { url?: unknown }; branch?: unknown; path?: unknown };
  const url = spec.repository?.url;
  if (typeof url === 'string') {
    const bad = validateRepositoryURL(url);
    if (bad) errs.push(invalidValue('spec.repository.url', url, bad));
  }
  if (typeof spec.branch === 'string') {
    const bad = validateBranchName(spec.branch);
    if (bad) errs.push(invalidValue('spec.branch', spec.branch, bad));
  }
  if (typeof spec.path === 'string') {
    const bad = validateTargetPath(spec.path);
    if (bad) errs.push(invalidValue('spec.path', spec.path, bad));
  }
  return errs;
}
