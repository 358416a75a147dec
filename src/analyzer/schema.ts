// The JSON Schema of the gate's report (src/analyzer/types.ts), for the served RepositoryScan's
// OpenAPI and for the contract test (test/analyzer/contract.test.ts), which validates every face's
// output against it and holds its fingerprint for SCHEMA_VERSION: changing this schema without a
// version bump fails the build.
import { Type, type TSchema } from '@sinclair/typebox';
import { REASONS } from './types.js';

const ObjectIdentitySchema = Type.Object(
  {
    apiVersion: Type.String(),
    kind: Type.String(),
    namespace: Type.Optional(Type.String()),
    name: Type.String(),
  },
  { additionalProperties: false },
);

export const FindingSchema = Type.Object(
  {
    reason: Type.Union(REASONS.map((r) => Type.Literal(r)), { description: 'Stable reason code' }),
    message: Type.String(),
    file: Type.Optional(Type.String({ description: 'Repository-relative path of the file' })),
    permanent: Type.Boolean({ description: 'A structural fact of the content (only a commit changes it)' }),
  },
  { additionalProperties: false },
);

export const FolderVerdictSchema = Type.Object(
  {
    path: Type.String({ description: 'Repository-relative folder; "." is the root' }),
    acceptable: Type.Boolean(),
    findings: Type.Array(FindingSchema),
  },
  { additionalProperties: false },
);

export const ScanReportSchema: TSchema = Type.Object(
  {
    schemaVersion: Type.Literal('analyzer.configbutler.ai/v1'),
    repository: Type.Optional(Type.String()),
    branch: Type.Optional(Type.String()),
    commit: Type.Optional(Type.String()),
    branchExists: Type.Boolean(),
    folders: Type.Array(FolderVerdictSchema),
    files: Type.Array(Type.Object({ path: Type.String(), objects: Type.Array(ObjectIdentitySchema) }, { additionalProperties: false })),
  },
  { additionalProperties: false },
);
