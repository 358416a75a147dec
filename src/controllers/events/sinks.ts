// Where the recorder's Events go (recorder.ts):
// - the hosting cluster: events.k8s.io/v1 in the object's namespace, so `kubectl describe` through
//   the aggregation layer finds them (kube-apiserver serves the same Events as core/v1, whose field
//   selectors involvedObject.* kubectl uses); a GitTarget in a kcp workspace gets them in that
//   workspace (`/clusters/<workspace>/apis/events.k8s.io/...`);
// - the sandbox (no hosting cluster): the server's own core/v1 events, through the registry as the
//   system identity, so `kubectl describe` against this server finds them;
// - nowhere: said once in the log.
import { StatusError } from '../../api/status.js';
import { DEFAULT_CLUSTER } from '../../storage/types.js';
import type { Logger } from '../../metrics/logger.js';
import type { Registries } from '../../registry/registries.js';
import { systemContext, systemWriteOptions } from '../../registry/context.js';
import type { EventSeries, EventSink, EventsV1Event } from './recorder.js';

const path = (namespace: string, name?: string) => `/apis/events.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/events${name ? `/${encodeURIComponent(name)}` : ''}`;

/** The hosting cluster's client as the sink needs it (src/auth/hosting.ts HostingClient; its errors carry the HTTP `status`). */
export interface HostingRequester {
  request(method: 'POST' | 'PATCH', path: string, body: unknown, cluster?: string): Promise<unknown>;
}

export class HostingEventSink implements EventSink {
  readonly where = 'the hosting cluster (events.k8s.io/v1)';
  constructor(
    private readonly client: HostingRequester,
    /** Objects of a logical cluster other than the default go to that kcp workspace. */
    private readonly workspaces: boolean,
  ) {}

  private cluster(c: string): string | undefined {
    return this.workspaces && c !== DEFAULT_CLUSTER ? c : undefined;
  }

  async create(cluster: string, ev: EventsV1Event): Promise<void> {
    await this.client.request('POST', path(ev.metadata.namespace), ev, this.cluster(cluster));
  }

  async patchSeries(cluster: string, namespace: string, name: string, series: EventSeries): Promise<'ok' | 'gone'> {
    try {
      await this.client.request('PATCH', path(namespace, name), { series }, this.cluster(cluster));
      return 'ok';
    } catch (e) {
      if ((e as { status?: number })?.status === 404) return 'gone';
      throw e;
    }
  }
}

/** The core/v1 form of an events.k8s.io/v1 Event (as kube-apiserver converts it). */
export function coreEventOf(ev: EventsV1Event): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name: ev.metadata.name, namespace: ev.metadata.namespace },
    involvedObject: ev.regarding,
    reason: ev.reason,
    message: ev.note,
    type: ev.type,
    eventTime: ev.eventTime,
    action: ev.action,
    reportingComponent: ev.reportingController,
    reportingInstance: ev.reportingInstance,
    source: {},
    ...(ev.series ? { series: ev.series } : {}),
  };
}

export class SandboxEventSink implements EventSink {
  readonly where = "the sandbox's events (core/v1)";
  constructor(private readonly registries: Registries) {}

  private reg() {
    const reg = this.registries.lookup('', 'v1', 'events');
    if (!reg) throw new Error('the sandbox serves no core/v1 events');
    return reg;
  }

  async create(cluster: string, ev: EventsV1Event): Promise<void> {
    await this.reg().create(systemContext(cluster), ev.metadata.namespace, coreEventOf(ev), systemWriteOptions());
  }

  async patchSeries(cluster: string, namespace: string, name: string, series: EventSeries): Promise<'ok' | 'gone'> {
    try {
      await this.reg().patch(systemContext(cluster), namespace, name, (cur) => ({ ...cur, series }), systemWriteOptions(), '');
      return 'ok';
    } catch (e) {
      if (e instanceof StatusError && e.status.code === 404) return 'gone';
      throw e;
    }
  }
}

export class NoEventSink implements EventSink {
  readonly where = 'nowhere';
  private said = false;
  constructor(private readonly log: Logger) {}
  private once(): void {
    if (!this.said) this.log.info('events are not recorded: no hosting cluster (--kubeconfig or in-cluster) and no --sandbox to write them to');
    this.said = true;
  }
  async create(): Promise<void> {
    this.once();
  }
  async patchSeries(): Promise<'ok'> {
    this.once();
    return 'ok';
  }
}
