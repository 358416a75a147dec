// The resources of configbutler.ai/v1alpha1, described once. Discovery, OpenAPI, validation,
// tables and field selectors are all derived from these definitions.
import type { TSchema } from '@sinclair/typebox';
import type { FieldError } from './field-errors.js';
import { CommitRequestSchema, validateCommitRequest, validateCommitRequestUpdate } from './commitrequest.js';
import { GitTargetSchema, normalizeGitTarget, validateGitTarget, validateGitTargetUpdate } from './gittarget.js';

export const GROUP = 'configbutler.ai';
export const VERSION = 'v1alpha1';
export const GROUP_VERSION = `${GROUP}/${VERSION}`;

type Obj = Record<string, any>;

export interface PrinterColumn {
  name: string;
  type: 'string' | 'integer' | 'number' | 'boolean' | 'date';
  format?: string;
  description: string;
  priority: number;
  /** JSONPath-like source, published in kcp APIResourceSchemas and docs. */
  jsonPath: string;
  value(obj: Obj): string | number | boolean | null;
}

export interface ResourceDefinition {
  group: string;
  version: string;
  kind: string;
  listKind: string;
  plural: string;
  singular: string;
  shortNames: string[];
  categories: string[];
  namespaced: boolean;
  schema: TSchema;
  columns: PrinterColumn[];
  /** Field selector keys beyond metadata.name / metadata.namespace, with how to read them. */
  selectableFields: Record<string, (obj: Obj) => string | undefined>;
  normalize?(obj: Obj): void;
  validateCreate(obj: Obj): FieldError[];
  validateUpdate(obj: Obj, old: Obj): FieldError[];
}

export function condition(obj: Obj, type: string): Obj | undefined {
  const conds = obj?.status?.conditions;
  return Array.isArray(conds) ? conds.find((c: Obj) => c?.type === type) : undefined;
}

const readyStatus: PrinterColumn = {
  name: 'Ready',
  type: 'string',
  description: 'Status of the Ready condition',
  priority: 0,
  jsonPath: '.status.conditions[?(@.type=="Ready")].status',
  value: (o) => condition(o, 'Ready')?.status ?? '',
};
const readyReason: PrinterColumn = {
  name: 'Reason',
  type: 'string',
  description: 'Reason of the Ready condition',
  priority: 0,
  jsonPath: '.status.conditions[?(@.type=="Ready")].reason',
  value: (o) => condition(o, 'Ready')?.reason ?? '',
};
const readyMessage: PrinterColumn = {
  name: 'Message',
  type: 'string',
  description: 'Message of the Ready condition',
  priority: 1,
  jsonPath: '.status.conditions[?(@.type=="Ready")].message',
  value: (o) => condition(o, 'Ready')?.message ?? '',
};
const age: PrinterColumn = {
  name: 'Age',
  type: 'date',
  description: 'Time since the object was created',
  priority: 0,
  jsonPath: '.metadata.creationTimestamp',
  value: (o) => o?.metadata?.creationTimestamp ?? null,
};

export const gitTargets: ResourceDefinition = {
  group: GROUP,
  version: VERSION,
  kind: 'GitTarget',
  listKind: 'GitTargetList',
  plural: 'gittargets',
  singular: 'gittarget',
  shortNames: ['gt'],
  categories: ['gitops'],
  namespaced: true,
  schema: GitTargetSchema,
  columns: [
    readyStatus,
    readyReason,
    { name: 'Branch', type: 'string', description: 'Branch committed to', priority: 0, jsonPath: '.spec.branch', value: (o) => o?.spec?.branch ?? '' },
    { name: 'Path', type: 'string', description: 'Folder in the repository', priority: 0, jsonPath: '.spec.path', value: (o) => o?.spec?.path ?? '' },
    {
      name: 'Last Commit',
      type: 'string',
      description: 'Short SHA of the last pushed commit',
      priority: 0,
      jsonPath: '.status.lastCommit.sha',
      value: (o) => (typeof o?.status?.lastCommit?.sha === 'string' ? o.status.lastCommit.sha.slice(0, 7) : ''),
    },
    age,
    {
      name: 'Repository',
      type: 'string',
      description: 'Repository URL',
      priority: 1,
      jsonPath: '.spec.repository.url',
      value: (o) => o?.spec?.repository?.url ?? '',
    },
    {
      name: 'Pending',
      type: 'integer',
      description: 'Changes waiting in the open commit window',
      priority: 1,
      jsonPath: '.status.pendingChanges',
      value: (o) => (typeof o?.status?.pendingChanges === 'number' ? o.status.pendingChanges : null),
    },
    readyMessage,
  ],
  selectableFields: {
    'spec.branch': (o) => o?.spec?.branch,
    'spec.repository.url': (o) => o?.spec?.repository?.url,
  },
  normalize: normalizeGitTarget,
  validateCreate: validateGitTarget,
  validateUpdate: (o, old) => [...validateGitTargetUpdate(o, old), ...validateGitTarget(o)],
};

export const commitRequests: ResourceDefinition = {
  group: GROUP,
  version: VERSION,
  kind: 'CommitRequest',
  listKind: 'CommitRequestList',
  plural: 'commitrequests',
  singular: 'commitrequest',
  shortNames: ['creq'],
  categories: ['gitops'],
  namespaced: true,
  schema: CommitRequestSchema,
  columns: [
    {
      name: 'GitTarget',
      type: 'string',
      description: 'The GitTarget committed',
      priority: 0,
      jsonPath: '.spec.targetRef.name',
      value: (o) => o?.spec?.targetRef?.name ?? '',
    },
    readyStatus,
    readyReason,
    {
      name: 'SHA',
      type: 'string',
      description: 'Short SHA of the commit',
      priority: 0,
      jsonPath: '.status.sha',
      value: (o) => (typeof o?.status?.sha === 'string' ? o.status.sha.slice(0, 7) : ''),
    },
    {
      name: 'Author',
      type: 'string',
      description: 'Commit author: the asserted author, else the submitter',
      priority: 0,
      jsonPath: '.spec.author.email',
      value: (o) => (o?.spec?.author ? `${o.spec.author.name} <${o.spec.author.email}>` : (o?.status?.submitter?.username ?? '')),
    },
    age,
    {
      name: 'Submitter',
      type: 'string',
      description: 'Who created the request',
      priority: 1,
      jsonPath: '.status.submitter.username',
      value: (o) => o?.status?.submitter?.username ?? '',
    },
    {
      name: 'Commit Message',
      type: 'string',
      description: 'First line of the commit message',
      priority: 1,
      jsonPath: '.spec.message',
      value: (o) => (typeof o?.spec?.message === 'string' ? o.spec.message.split('\n')[0] : ''),
    },
  ],
  selectableFields: {
    'spec.targetRef.name': (o) => o?.spec?.targetRef?.name,
  },
  validateCreate: validateCommitRequest,
  validateUpdate: (o, old) => [...validateCommitRequestUpdate(o, old), ...validateCommitRequest(o)],
};

export const RESOURCES: ResourceDefinition[] = [gitTargets, commitRequests];

export function findResource(plural: string): ResourceDefinition | undefined {
  return RESOURCES.find((r) => r.plural === plural);
}
