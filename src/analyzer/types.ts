// The public shape of the acceptance gate's answer ("may this folder become a GitTarget, and if
// not, why"). One JSON document for all three faces: the served RepositoryScan resource's status,
// `reverser-apiserver analyze --format json`, and the library (package export
// `reverser-apiserver/analyzer`). Changing a field or a reason code's meaning bumps SCHEMA_VERSION;
// test/analyzer/contract.test.ts holds the schema's fingerprint and fails when they part.

/** Version of this document's shape. */
export const SCHEMA_VERSION = 'analyzer.configbutler.ai/v1' as const;

/**
 * Stable reason codes. All but PathConflict are structural facts of the folder's files: they are
 * `permanent` (only a commit to the repository changes them). PathConflict depends on other
 * GitTargets and ends when they do.
 */
export type Reason =
  /** A .yaml/.yml file does not parse as YAML. */
  | 'InvalidYAML'
  /** A YAML document that is not a Kubernetes object (apiVersion, kind and metadata.name). */
  | 'NotAnObject'
  /** Two files (or two documents) hold the same object (group, kind, namespace, name). */
  | 'DuplicateIdentity'
  /** Template syntax ({{ }}) or a Helm chart: the file is an input to a renderer, not an object. */
  | 'Templated'
  /** YAML anchors, aliases or merge keys (<<): a faithful rewrite would expand them. */
  | 'AnchorsOrAliases'
  /** One file holds objects of several owners (namespaces or kinds), which separate streams write. */
  | 'MultiOwnerFile'
  /** A file that is not YAML where objects are expected (docs and context files are allowed). */
  | 'NonYAMLContent'
  /** A file placed in the layout's namespace folder holds an object of another namespace. */
  | 'NamespaceMismatch'
  /** Another GitTarget on the same repository and branch claims an equal or nested folder. */
  | 'PathConflict';

export const REASONS: readonly Reason[] = [
  'InvalidYAML',
  'NotAnObject',
  'DuplicateIdentity',
  'Templated',
  'AnchorsOrAliases',
  'MultiOwnerFile',
  'NonYAMLContent',
  'NamespaceMismatch',
  'PathConflict',
];

export interface Finding {
  reason: Reason;
  message: string;
  /** Repository-relative path of the file the finding is about (absent for PathConflict). */
  file?: string;
  /** True for structural facts of the repository's content; false when it can end by itself. */
  permanent: boolean;
}

/** One object a file holds, as the writer identifies it (never by path). */
export interface ObjectIdentity {
  apiVersion: string;
  kind: string;
  namespace?: string;
  name: string;
}

export interface FileReport {
  /** Repository-relative path. */
  path: string;
  objects: ObjectIdentity[];
}

export interface FolderVerdict {
  /** Repository-relative folder; "." is the root. */
  path: string;
  acceptable: boolean;
  findings: Finding[];
}

export interface ScanReport {
  schemaVersion: typeof SCHEMA_VERSION;
  /** What was scanned: a URL, a local path, or absent when the caller handed files in. */
  repository?: string;
  branch?: string;
  /** The commit scanned, when the source is a Git repository with that branch. */
  commit?: string;
  /** False when the branch does not exist yet (not a refusal: a GitTarget creates it). */
  branchExists: boolean;
  /** One verdict per scanned folder, sorted by path. */
  folders: FolderVerdict[];
  /** The manifest files under the scanned folders and the objects each holds, sorted by path. */
  files: FileReport[];
}

/** A folder another GitTarget writes (for PathConflict). */
export interface FolderClaim {
  path: string;
  /** Shown in the finding only when the requester may see it; otherwise a neutral description. */
  description: string;
}
