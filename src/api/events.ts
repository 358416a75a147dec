// The sandbox's Events: core/v1 `events` (what `kubectl describe` lists, with the field selectors
// involvedObject.* it sends) and events.k8s.io/v1 `events` (what recorders write). The controllers'
// recorder writes core/v1 Events into the sandbox (src/controllers/events/sinks.ts). Unlike
// kube-apiserver, the sandbox keeps the two APIs' objects apart: an Event created through one is
// not listed by the other (docs/sandbox.md).
import { Type } from '@sinclair/typebox';
import { type ResourceDefinition } from './definition.js';
import { envelopeSchema } from './meta.js';
import { METADATA_MERGE_KEYS } from './core-v1.js';
import type { FieldError } from './field-errors.js';

type Obj = Record<string, any>;

const Str = (description: string) => Type.Optional(Type.String({ description }));
const Time = (description: string) => Type.Optional(Type.Union([Type.String(), Type.Null()], { description }));
const Int = (description: string) => Type.Optional(Type.Integer({ format: 'int32', description }));

const ObjectReference = (description: string) =>
  Type.Optional(
    Type.Object(
      {
        apiVersion: Str('API version of the referent.'),
        kind: Str('Kind of the referent.'),
        namespace: Str('Namespace of the referent.'),
        name: Str('Name of the referent.'),
        uid: Str('UID of the referent.'),
        resourceVersion: Str('Specific resourceVersion to which this reference is made, if any.'),
        fieldPath: Str('A part of the object the event is about.'),
      },
      { additionalProperties: false, description },
    ),
  );

const Series = Type.Optional(
  Type.Object(
    {
      count: Int('Number of occurrences in this series up to the last heartbeat time.'),
      lastObservedTime: Time('Time of the last occurrence observed.'),
      state: Str('Deprecated.'),
    },
    { additionalProperties: false, description: 'Data about the Event series this event represents.' },
  ),
);

const Source = (description: string) =>
  Type.Optional(Type.Object({ component: Str('Component from which the event is generated.'), host: Str('Node name on which the event is generated.') }, { additionalProperties: false, description }));

export const CoreEventSchema = envelopeSchema(
  {
    involvedObject: ObjectReference('The object that this event is about.'),
    reason: Str('A short, machine understandable string that gives the reason for the transition into the object\'s current status.'),
    message: Str('A human-readable description of the status of this operation.'),
    source: Source('The component reporting this event.'),
    firstTimestamp: Time('The time at which the event was first recorded.'),
    lastTimestamp: Time('The time at which the most recent occurrence of this event was recorded.'),
    count: Int('The number of times this event has occurred.'),
    type: Str('Type of this event (Normal, Warning).'),
    eventTime: Time('Time when this Event was first observed (MicroTime).'),
    series: Series,
    action: Str('What action was taken/failed regarding to the Regarding object.'),
    related: ObjectReference('Optional secondary object for more complex actions.'),
    reportingComponent: Str('Name of the controller that emitted this Event, e.g. configbutler.ai/reverser-apiserver.'),
    reportingInstance: Str('ID of the controller instance.'),
  },
  'Event is a report of an event somewhere in the cluster.',
);

export const EventsV1EventSchema = envelopeSchema(
  {
    eventTime: Time('Time when this Event was first observed (MicroTime). Required.'),
    series: Series,
    reportingController: Str('Name of the controller that emitted this Event. Required.'),
    reportingInstance: Str('ID of the controller instance. Required.'),
    action: Str('What action was taken/failed regarding to the regarding object. Required.'),
    reason: Str('Why the action was taken. Required.'),
    regarding: ObjectReference('The object this Event is about.'),
    related: ObjectReference('Optional secondary object for more complex actions.'),
    note: Str('A human-readable description of the status of this operation (at most 1 kB).'),
    type: Str('Type of this event (Normal, Warning).'),
    deprecatedSource: Source('Deprecated field assuring backward compatibility with core.v1 Event type.'),
    deprecatedFirstTimestamp: Time('Deprecated field assuring backward compatibility with core.v1 Event type.'),
    deprecatedLastTimestamp: Time('Deprecated field assuring backward compatibility with core.v1 Event type.'),
    deprecatedCount: Int('Deprecated field assuring backward compatibility with core.v1 Event type.'),
  },
  'Event is a report of an event somewhere in the cluster (events.k8s.io/v1).',
);

const lastSeen = (o: Obj): string | null => o?.series?.lastObservedTime ?? o?.lastTimestamp ?? o?.deprecatedLastTimestamp ?? o?.eventTime ?? o?.metadata?.creationTimestamp ?? null;

function validateType(o: Obj): FieldError[] {
  return o?.type === undefined || o.type === 'Normal' || o.type === 'Warning' ? [] : [{ type: 'FieldValueNotSupported', field: 'type', value: o.type, detail: 'supported values: "Normal", "Warning"' } as FieldError];
}

function validateEventsV1(o: Obj): FieldError[] {
  const out = validateType(o);
  for (const f of ['eventTime', 'reportingController', 'reportingInstance', 'action', 'reason']) {
    if (o?.[f] === undefined || o[f] === null || o[f] === '') out.push({ type: 'FieldValueRequired', field: f, detail: `${f} is required` } as FieldError);
  }
  if (typeof o?.note === 'string' && Buffer.byteLength(o.note) > 1024) out.push({ type: 'FieldValueTooLong', field: 'note', detail: 'must have at most 1024 bytes' } as FieldError);
  return out;
}

const ref = (o: Obj | undefined) => `${(o?.kind ?? '').toLowerCase()}/${o?.name ?? ''}`;

type Selectors = ResourceDefinition['selectableFields'];

/** Field selectors on fields of the event itself, unset fields matching "". */
const ownFields = (...names: string[]): Selectors => Object.fromEntries(names.map((n) => [n, (o: Obj) => o?.[n] ?? '']));

/** Field selectors on fields of the object reference an event is about (`involvedObject`, `regarding`). */
const referenceFields = (reference: string, ...names: string[]): Selectors =>
  Object.fromEntries(names.map((n) => [`${reference}.${n}`, (o: Obj) => o?.[reference]?.[n] ?? '']));

/** What core/v1 and events.k8s.io/v1 Events share: kube-apiserver serves both from one storage. */
const EVENT = {
  version: 'v1',
  kind: 'Event',
  listKind: 'EventList',
  plural: 'events',
  singular: 'event',
  namespaced: true,
  statusSubresource: false,
  generation: false,
} as const;

export const coreEvents: ResourceDefinition = {
  ...EVENT,
  group: '',
  shortNames: ['ev'],
  categories: [],
  schema: CoreEventSchema,
  columns: [
    { name: 'Last Seen', type: 'date', description: 'Time of the last occurrence', priority: 0, jsonPath: '.lastTimestamp', value: lastSeen },
    { name: 'Type', type: 'string', description: 'Type of this event', priority: 0, jsonPath: '.type', value: (o) => o?.type ?? '' },
    { name: 'Reason', type: 'string', description: 'Reason of this event', priority: 0, jsonPath: '.reason', value: (o) => o?.reason ?? '' },
    { name: 'Object', type: 'string', description: 'The object this event is about', priority: 0, jsonPath: '.involvedObject.name', value: (o) => ref(o?.involvedObject) },
    { name: 'Message', type: 'string', description: 'Message of this event', priority: 0, jsonPath: '.message', value: (o) => o?.message ?? '' },
  ],
  // The field selectors of kube-apiserver's core/v1 events (pkg/registry/core/event/strategy.go).
  selectableFields: {
    ...referenceFields('involvedObject', 'kind', 'namespace', 'name', 'uid', 'apiVersion', 'resourceVersion', 'fieldPath'),
    ...ownFields('reason', 'reportingComponent', 'type'),
    source: (o) => o?.source?.component ?? '',
  },
  strategicMerge: METADATA_MERGE_KEYS,
  validateCreate: validateType,
  validateUpdate: validateType,
};

export const eventsV1Events: ResourceDefinition = {
  ...EVENT,
  group: 'events.k8s.io',
  shortNames: ['ev'],
  categories: [],
  schema: EventsV1EventSchema,
  columns: coreEvents.columns.map((c) =>
    c.name === 'Object' ? { ...c, jsonPath: '.regarding.name', value: (o: Obj) => ref(o?.regarding) } : c.name === 'Message' ? { ...c, jsonPath: '.note', value: (o: Obj) => o?.note ?? '' } : c,
  ),
  selectableFields: {
    ...referenceFields('regarding', 'kind', 'namespace', 'name', 'uid', 'apiVersion'),
    ...ownFields('reason', 'reportingController', 'type'),
  },
  validateCreate: validateEventsV1,
  validateUpdate: validateEventsV1,
};
