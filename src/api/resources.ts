// The resources of configbutler.ai/v1alpha1 (and, for the sandbox, the small Kubernetes core of
// core-v1.ts and apps-v1.ts), described once.
import { age, readyMessage, readyReason, readyStatus, type ResourceDefinition } from './definition.js';
import { SANDBOX_CORE_RESOURCES } from './core-v1.js';
import { deployments } from './apps-v1.js';
import { coreEvents, eventsV1Events } from './events.js';
import { CommitRequestSchema, normalizeCommitRequest, validateCommitRequest, validateCommitRequestUpdate } from './commitrequest.js';
import { GitTargetSchema, normalizeGitTarget, validateGitTarget, validateGitTargetUpdate } from './gittarget.js';
import { RepositoryScanSchema, validateRepositoryScan } from './repositoryscan.js';

export const GROUP = 'configbutler.ai';
export const VERSION = 'v1alpha1';
export const GROUP_VERSION = `${GROUP}/${VERSION}`;

export type { PrinterColumn, ResourceDefinition } from './definition.js';
export { apiVersionOf, condition } from './definition.js';

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
  statusSubresource: true,
  generation: true,
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
    {
      name: 'Streams',
      type: 'string',
      description: 'Source watch streams listed and watching, of all',
      priority: 1,
      jsonPath: '.status.streams.summary',
      value: (o) => o?.status?.streams?.summary ?? '',
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
  statusSubresource: true,
  generation: true,
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
  normalize: normalizeCommitRequest,
  validateCreate: validateCommitRequest,
  validateUpdate: (o, old) => [...validateCommitRequestUpdate(o, old), ...validateCommitRequest(o)],
};

/** configbutler.ai/v1alpha1: the server's own group. */
/** Create-only: the acceptance gate's verdict comes back in status; nothing is stored (registry/repositoryscan-strategy.ts). */
export const repositoryScans: ResourceDefinition = {
  group: GROUP,
  version: VERSION,
  kind: 'RepositoryScan',
  listKind: 'RepositoryScanList',
  plural: 'repositoryscans',
  singular: 'repositoryscan',
  shortNames: [],
  categories: [],
  namespaced: true,
  statusSubresource: false,
  generation: false,
  schema: RepositoryScanSchema,
  columns: [],
  selectableFields: {},
  verbs: ['create'],
  validateCreate: validateRepositoryScan,
  validateUpdate: () => [],
};

export const RESOURCES: ResourceDefinition[] = [gitTargets, commitRequests, repositoryScans];

/** The sandbox's small Kubernetes core: v1 namespaces, configmaps, secrets, serviceaccounts, events; apps/v1 deployments; events.k8s.io/v1 events. */
export const SANDBOX_RESOURCES: ResourceDefinition[] = [...SANDBOX_CORE_RESOURCES, coreEvents, deployments, eventsV1Events];

/** The resources a server serves: its own group unless it runs as a standalone sandbox, the sandbox's when enabled. */
export function servedResources(opts: { configbutler: boolean; sandbox: boolean }): ResourceDefinition[] {
  return [...(opts.sandbox ? SANDBOX_RESOURCES : []), ...(opts.configbutler ? RESOURCES : [])];
}
