// The sandbox's apps/v1 deployments: schema-less beyond metadata (spec and status are kept as given),
// enough to be listed, watched and mirrored. Nothing runs them: the sandbox has no controllers.
import { Type } from '@sinclair/typebox';
import { age, type ResourceDefinition } from './definition.js';
import { envelopeSchema } from './meta.js';
import { METADATA_MERGE_KEYS } from './core-v1.js';

type Obj = Record<string, any>;

const Unstructured = (description: string) => Type.Object({}, { additionalProperties: true, description });

export const DeploymentSchema = envelopeSchema(
  {
    spec: Type.Optional(Unstructured('Specification of the desired behavior of the Deployment (not validated by the sandbox).')),
    status: Type.Optional(Unstructured('Most recently observed status of the Deployment.')),
  },
  'Deployment enables declarative updates for Pods and ReplicaSets.',
);

const containers = (o: Obj): Obj[] => (Array.isArray(o?.spec?.template?.spec?.containers) ? o.spec.template.spec.containers : []);
const num = (v: unknown): number => (typeof v === 'number' ? v : 0);

// The list fields kubectl's strategic merge patches of a Deployment merge by key (from the Go types).
const podSpecMergeKeys = (prefix: string): Record<string, string> => {
  const out: Record<string, string> = {
    [`${prefix}.volumes`]: 'name',
    [`${prefix}.imagePullSecrets`]: 'name',
    [`${prefix}.hostAliases`]: 'ip',
  };
  for (const c of ['containers', 'initContainers', 'ephemeralContainers']) {
    out[`${prefix}.${c}`] = 'name';
    out[`${prefix}.${c}.env`] = 'name';
    out[`${prefix}.${c}.ports`] = 'containerPort';
    out[`${prefix}.${c}.volumeMounts`] = 'mountPath';
    out[`${prefix}.${c}.volumeDevices`] = 'devicePath';
  }
  return out;
};

export const deployments: ResourceDefinition = {
  group: 'apps',
  version: 'v1',
  kind: 'Deployment',
  listKind: 'DeploymentList',
  plural: 'deployments',
  singular: 'deployment',
  shortNames: ['deploy'],
  categories: ['all'],
  namespaced: true,
  statusSubresource: true,
  generation: true,
  schema: DeploymentSchema,
  columns: [
    {
      name: 'Ready',
      type: 'string',
      description: 'Number of the pod with ready state',
      priority: 0,
      jsonPath: '.status.readyReplicas',
      value: (o) => `${num(o?.status?.readyReplicas)}/${typeof o?.spec?.replicas === 'number' ? o.spec.replicas : 1}`,
    },
    { name: 'Up-to-date', type: 'integer', description: 'Total number of non-terminated pods targeted by this deployment that have the desired template spec', priority: 0, jsonPath: '.status.updatedReplicas', value: (o) => num(o?.status?.updatedReplicas) },
    { name: 'Available', type: 'integer', description: 'Total number of available pods (ready for at least minReadySeconds) targeted by this deployment', priority: 0, jsonPath: '.status.availableReplicas', value: (o) => num(o?.status?.availableReplicas) },
    age,
    { name: 'Containers', type: 'string', description: 'Names of each container in the template', priority: 1, jsonPath: '.spec.template.spec.containers[*].name', value: (o) => containers(o).map((c) => c?.name).join(',') },
    { name: 'Images', type: 'string', description: 'Images referenced by each container in the template', priority: 1, jsonPath: '.spec.template.spec.containers[*].image', value: (o) => containers(o).map((c) => c?.image).join(',') },
    {
      name: 'Selector',
      type: 'string',
      description: 'Label selector for pods',
      priority: 1,
      jsonPath: '.spec.selector',
      value: (o) => Object.entries((o?.spec?.selector?.matchLabels ?? {}) as Obj).map(([k, v]) => `${k}=${v}`).join(','),
    },
  ],
  selectableFields: {},
  strategicMerge: { ...METADATA_MERGE_KEYS, ...podSpecMergeKeys('spec.template.spec'), 'spec.template.metadata.finalizers': '', 'status.conditions': 'type' },
  validateCreate: () => [],
  validateUpdate: () => [],
};
