// GitTarget: a destination (repository, branch, folder) plus which objects of a source cluster to
// mirror into it. Schema (types, validation, OpenAPI), defaults, the server's own rules and the
// printer columns live here.
import { Type, type Static } from '@sinclair/typebox';
import { ConditionsSchema, kindSchema } from './meta.js';
import { DNS1123_SUBDOMAIN_MSG, isDNS1123Subdomain } from './object-meta.js';
import { type FieldError, forbiddenField, invalidValue } from './field-errors.js';
// What the git engine can write to is decided by the shared destination rules (src/model).
import { validateRepositoryURL, validateTargetPath } from '../model/destination.js';
import { validateBranchName } from '../model/branch-name.js';

/** Drops trailing slashes ("tenants/a/" → "tenants/a"); "." stays the root. */
function normalizeTargetPath(path: string): string {
  const trimmed = path.replace(/\/+$/, '');
  return trimmed === '' ? path : trimmed;
}

const IMMUTABLE_DESTINATION = 'field is immutable; delete and recreate the GitTarget to change its destination';
const IMMUTABLE_SOURCE = 'field is immutable; delete and recreate the GitTarget to change the cluster it mirrors';

export const GitTargetSpecSchema = Type.Object(
  {
    repository: Type.Object(
      {
        url: Type.String({
          minLength: 1,
          description:
            'Repository URL: https://, http://, file:///absolute/path.git, or local:<name> (a bare repository under <data-dir>/git). SSH is not supported.',
        }),
        secretRef: Type.Optional(
          Type.Object(
            { name: Type.String({ minLength: 1, description: 'Name of a Secret in the same namespace.' }) },
            {
              additionalProperties: false,
              description: 'Credentials: keys username/password, or token/bearerToken. Flux- and Argo CD-shaped Secrets work as they are.',
            },
          ),
        ),
      },
      { additionalProperties: false, description: 'The Git repository to write to. Immutable.' },
    ),
    branch: Type.String({
      minLength: 1,
      maxLength: 255,
      description: 'Branch to commit to; created from the default branch when missing. Immutable.',
    }),
    path: Type.String({
      minLength: 1,
      maxLength: 1024,
      description: 'Folder inside the repository; "." is the root. No leading "/", no "..". Immutable.',
    }),
    source: Type.Optional(
      Type.Object(
        {
          kubeConfig: Type.Optional(
            Type.Object(
              {
                secretRef: Type.Object(
                  {
                    name: Type.String({ minLength: 1, description: "Secret holding a kubeconfig, in the GitTarget's namespace on the hosting cluster." }),
                    // No default: without a key, "value" then "value.yaml" are tried (Flux's order).
                    key: Type.Optional(Type.String({ minLength: 1, description: 'Key of the kubeconfig in the Secret; when omitted, "value", then "value.yaml".' })),
                  },
                  { additionalProperties: false },
                ),
              },
              { additionalProperties: false, description: 'Reach the source cluster with a kubeconfig stored in a Secret.' },
            ),
          ),
        },
        { additionalProperties: false, description: "The cluster to mirror; omitted means the server's default source. Immutable." },
      ),
    ),
    resources: Type.Optional(
      Type.Array(
        Type.Object(
          {
            group: Type.String({ description: 'API group; "" for the core group.' }),
            version: Type.Optional(Type.String({ minLength: 1, description: "API version, e.g. v1; omitted means the group's preferred version in the source." })),
            resource: Type.String({ minLength: 1, description: 'Plural resource name, e.g. configmaps.' }),
            namespaces: Type.Optional(
              Type.Array(Type.String({ minLength: 1 }), { description: 'Only these namespaces; omitted means all.', 'x-kubernetes-list-type': 'set' }),
            ),
            labelSelector: Type.Optional(Type.String({ description: 'Only objects matching this label selector.' })),
          },
          { additionalProperties: false },
        ),
        {
          description: 'The resource types to mirror, one entry per group and resource (server-side apply merges entries by that key).',
          'x-kubernetes-list-type': 'map',
          'x-kubernetes-list-map-keys': ['group', 'resource'],
        },
      ),
    ),
    commit: Type.Optional(
      Type.Object(
        {
          idleSeconds: Type.Optional(
            Type.Integer({ minimum: 0, maximum: 86400, default: 5, description: 'Close the commit window after this many seconds without a change.' }),
          ),
          maxAgeSeconds: Type.Optional(
            Type.Integer({ minimum: 1, maximum: 604800, default: 600, description: 'Close the commit window at the latest this long after it opened.' }),
          ),
          mode: Type.Optional(
            Type.Union([Type.Literal('Auto'), Type.Literal('OnRequest')], {
              default: 'Auto',
              description: 'Auto: idle timer and max age close windows. OnRequest: only a CommitRequest or max age closes them.',
            }),
          ),
        },
        { additionalProperties: false, default: {}, description: 'When pending changes become a commit.' },
      ),
    ),
    prune: Type.Optional(
      Type.Object(
        {
          mode: Type.Optional(
            Type.Union([Type.Literal('Never'), Type.Literal('OnEvent'), Type.Literal('Always')], {
              default: 'OnEvent',
              description: 'Never: keep every file. OnEvent: mirror observed deletes only. Always: a complete resync may also remove files.',
            }),
          ),
        },
        { additionalProperties: false, default: {}, description: 'What deletes reach Git.' },
      ),
    ),
    includeClusterNoise: Type.Optional(
      Type.Boolean({ default: false, description: 'Also mirror cluster-generated objects (kube-root-ca.crt, service-account tokens, leader-election objects, events).' }),
    ),
    suspend: Type.Optional(Type.Boolean({ default: false, description: 'Stop mirroring and committing until set back to false.' })),
    attribution: Type.Optional(
      Type.Object(
        {
          auditRoute: Type.Optional(
            Type.String({
              minLength: 1,
              maxLength: 253,
              description:
                'The audit route (a lowercase DNS subdomain) whose facts name the author of each mirrored change: the route the source cluster\'s kube-apiserver posts its audit events to. Omitted: "hosting" for the default source when the audit listener is enabled, else no per-edit attribution (a CommitRequest names the author).',
            }),
          ),
        },
        { additionalProperties: false, description: 'Per-edit attribution from the source cluster\'s audit log.' },
      ),
    ),
  },
  { additionalProperties: false, description: 'GitTargetSpec is the desired destination and scope of the mirror.' },
);

export const GitTargetStatusSchema = Type.Object(
  {
    observedGeneration: Type.Optional(Type.Integer({ format: 'int64', description: 'The generation the status reflects.' })),
    conditions: Type.Optional(ConditionsSchema),
    lastCommit: Type.Optional(
      Type.Object(
        { sha: Type.String({ description: 'Commit SHA.' }), time: Type.String({ format: 'date-time', description: 'Commit time.' }) },
        { additionalProperties: false, description: 'The last commit pushed for this target.' },
      ),
    ),
    streams: Type.Optional(
      Type.Object(
        {
          ready: Type.Integer({ minimum: 0 }),
          total: Type.Integer({ minimum: 0 }),
          summary: Type.Optional(Type.String({ description: 'ready/total, for display.' })),
        },
        { additionalProperties: false, description: 'Watch streams of the source cluster.' },
      ),
    ),
    pendingChanges: Type.Optional(Type.Integer({ minimum: 0, description: 'Changes waiting in the open commit window.' })),
    authority: Type.Optional(
      Type.Object(
        {
          username: Type.String({ description: 'The user whose permissions the GitTarget reads and uses credentials with.' }),
          uid: Type.Optional(Type.String()),
          groups: Type.Optional(Type.Array(Type.String())),
          extra: Type.Optional(Type.Record(Type.String(), Type.Array(Type.String()))),
          verifiedAt: Type.String({ format: 'date-time', description: 'When the server verified this authority at the last write that changed what is read or which credentials are used.' }),
        },
        {
          additionalProperties: false,
          description:
            'Whose authority the GitTarget runs under: the user of the last create or update that changed what is read or which credentials are used, recorded by the server (a client-supplied value is ignored) and re-verified periodically.',
        },
      ),
    ),
  },
  { additionalProperties: false, description: 'GitTargetStatus is the observed state.' },
);

export const GitTargetSchema = kindSchema(GitTargetSpecSchema, GitTargetStatusSchema, 'GitTarget is a Git destination (repository, branch, folder) and the objects of a source cluster mirrored into it.');
export type GitTargetSpec = Static<typeof GitTargetSpecSchema>;

function dig(obj: unknown, ...path: string[]): unknown {
  let cur = obj;
  for (const p of path) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string, unknown>)[p];
  }
  return cur;
}

/** Normalizations applied before validation (trailing "/" of spec.path is dropped). */
export function normalizeGitTarget(obj: Record<string, unknown>): void {
  const spec = obj.spec as Record<string, unknown> | undefined;
  if (spec && typeof spec.path === 'string') spec.path = normalizeTargetPath(spec.path);
}

/** The server's own rules beyond the schema. */
export function validateGitTarget(obj: Record<string, unknown>): FieldError[] {
  const errs: FieldError[] = [];
  const url = dig(obj, 'spec', 'repository', 'url');
  if (typeof url === 'string') {
    const why = validateRepositoryURL(url);
    if (why) errs.push(invalidValue('spec.repository.url', url, why));
  }
  const branch = dig(obj, 'spec', 'branch');
  if (typeof branch === 'string' && branch !== '') {
    const why = validateBranchName(branch);
    if (why) errs.push(invalidValue('spec.branch', branch, `${why} (git check-ref-format: no spaces or ~^:?*[\\, no "..", "@{", "//", no leading "." or "/", no trailing "/" or ".lock")`));
  }
  const path = dig(obj, 'spec', 'path');
  if (typeof path === 'string') {
    const why = validateTargetPath(path);
    if (why) errs.push(invalidValue('spec.path', path, why));
  }
  const resources = dig(obj, 'spec', 'resources');
  if (Array.isArray(resources)) {
    resources.forEach((r: Record<string, unknown>, i) => {
      if (r && r.group === '' && r.resource === 'secrets') {
        errs.push(
          forbiddenField(
            `spec.resources[${i}].resource`,
            'mirroring Secrets is refused: Secret data would be written to Git in plaintext, and encryption is not available yet',
          ),
        );
      }
    });
  }
  const route = dig(obj, 'spec', 'attribution', 'auditRoute');
  if (typeof route === 'string' && route !== '' && !isDNS1123Subdomain(route)) {
    errs.push(invalidValue('spec.attribution.auditRoute', route, DNS1123_SUBDOMAIN_MSG));
  }
  const idle = dig(obj, 'spec', 'commit', 'idleSeconds');
  const maxAge = dig(obj, 'spec', 'commit', 'maxAgeSeconds');
  if (typeof idle === 'number' && typeof maxAge === 'number' && maxAge < idle) {
    errs.push(invalidValue('spec.commit.maxAgeSeconds', maxAge, 'must be greater than or equal to spec.commit.idleSeconds'));
  }
  return errs;
}

function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
}

export function validateGitTargetUpdate(obj: Record<string, unknown>, old: Record<string, unknown>): FieldError[] {
  const errs: FieldError[] = [];
  for (const f of ['repository', 'branch', 'path'] as const) {
    if (!same(dig(obj, 'spec', f), dig(old, 'spec', f))) errs.push(invalidValue(`spec.${f}`, dig(obj, 'spec', f), IMMUTABLE_DESTINATION));
  }
  if (!same(dig(obj, 'spec', 'source'), dig(old, 'spec', 'source'))) {
    errs.push(invalidValue('spec.source', dig(obj, 'spec', 'source'), IMMUTABLE_SOURCE));
  }
  return errs;
}
