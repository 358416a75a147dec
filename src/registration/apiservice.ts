// APIService self-registration (docs/architecture.md). Every refresh: ask the hosting cluster's discovery
// whether apiregistration.k8s.io/v1 serves apiservices; when it does, create or update
// v1alpha1.configbutler.ai so its Service reference, priorities and caBundle match ours. When it
// does not (kcp, plain API servers), or our account may not touch APIServices, the server keeps
// serving: the state shows on /readyz?verbose and in a metric, a line is logged when the state
// changes (never per retry), and the next refresh tries again, so registration starts as soon as
// the API or the permission appears, without a restart.
import { Gauge, type Registry } from '../metrics/prom.js';
import { GROUP, VERSION } from '../api/resources.js';
import type { Logger } from '../metrics/logger.js';
import type { RegistrationOptions } from './options.js';
import { runEvery } from '../periodic/shared-timer.js';

export const APISERVICE_NAME = `${VERSION}.${GROUP}`;
const APIREGISTRATION = '/apis/apiregistration.k8s.io/v1';

/** What the registrar needs from the hosting cluster client (src/auth/hosting.ts HostingClient). */
export interface RegistrationClient {
  request(method: 'GET' | 'POST' | 'PUT', path: string, body?: unknown): Promise<{ status: number; body: unknown }>;
}

export type RegistrationState = 'pending' | 'registered' | 'api-absent' | 'forbidden' | 'failed';
export const REGISTRATION_STATES: RegistrationState[] = ['pending', 'registered', 'api-absent', 'forbidden', 'failed'];

interface APIServiceSpec {
  group: string;
  version: string;
  groupPriorityMinimum: number;
  versionPriority: number;
  service: { namespace: string; name: string; port: number };
  caBundle: string;
  insecureSkipTLSVerify?: boolean;
}

interface APIServiceObject {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; resourceVersion?: string; [k: string]: unknown };
  spec?: Partial<APIServiceSpec> & Record<string, unknown>;
  [k: string]: unknown;
}

function statusOf(e: unknown): number | undefined {
  const s = (e as { status?: unknown }).status;
  return typeof s === 'number' ? s : undefined;
}

export class APIServiceRegistrar {
  private state: RegistrationState = 'pending';
  private detail = 'not checked yet';
  private stopTimer: (() => void) | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = false;
  /** The caBundle last written by us: a change means the CA rotated (worth an info line). */
  private writtenCA: string | undefined;
  private readonly gauge: Gauge<'state'>;

  constructor(
    private readonly client: RegistrationClient,
    private readonly opts: RegistrationOptions,
    /** The PEM bundle to publish; called on every refresh, so a rotated CA is picked up. */
    private readonly caBundlePem: () => string,
    private readonly log: Logger,
    registry: Registry,
  ) {
    this.gauge = new Gauge({
      name: 'reverser_apiservice_registration_state',
      help: `State of the APIService ${APISERVICE_NAME} in the hosting cluster: 1 for the current state, 0 for the others.`,
      labelNames: ['state'],
      registers: [registry],
    });
    this.setState('pending', 'not checked yet');
  }

  /** First check at once, then one per refresh interval, beside the process's other jobs of that period (src/periodic/shared-timer.ts). */
  start(): void {
    void this.trigger();
    this.stopTimer = runEvery(this.opts.refreshMs, () => void this.trigger());
  }

  /** Runs a check now (after the one in flight, if any). Used by the timer and when the CA file changes. */
  trigger(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      do {
        this.again = false;
        await this.sync();
      } while (this.again && !this.stopped);
    })().finally(() => (this.running = undefined));
    return this.running;
  }

  stop(): void {
    this.stopped = true;
    this.stopTimer?.();
    this.stopTimer = undefined;
  }

  current(): { state: RegistrationState; detail: string } {
    return { state: this.state, detail: this.detail };
  }

  /** A /readyz line that never fails readiness: serving does not depend on being registered. */
  healthInfo(): string {
    const every = `${Math.round(this.opts.refreshMs / 1000)}s`;
    switch (this.state) {
      case 'registered':
        return `APIService ${APISERVICE_NAME} registered`;
      case 'pending':
        return `APIService ${APISERVICE_NAME} not checked yet`;
      default:
        return `APIService ${APISERVICE_NAME} not registered: ${this.detail}; re-checking every ${every}`;
    }
  }

  private setState(state: RegistrationState, detail: string, logLine?: () => void): void {
    const changed = state !== this.state;
    this.state = state;
    this.detail = detail;
    for (const s of REGISTRATION_STATES) this.gauge.set({ state: s }, s === state ? 1 : 0);
    if (changed && logLine) logLine();
  }

  private desiredSpec(): APIServiceSpec {
    return {
      group: GROUP,
      version: VERSION,
      groupPriorityMinimum: this.opts.groupPriorityMinimum,
      versionPriority: this.opts.versionPriority,
      service: { ...this.opts.service },
      caBundle: Buffer.from(this.caBundlePem()).toString('base64'),
    };
  }

  private async sync(): Promise<void> {
    let spec: APIServiceSpec;
    try {
      spec = this.desiredSpec();
    } catch (e) {
      this.fail(`cannot read the CA bundle: ${(e as Error).message}`);
      return;
    }
    try {
      if (!(await this.apiServed())) {
        const why = 'apiregistration.k8s.io/v1 apiservices is not served by the hosting cluster';
        this.setState('api-absent', why, () =>
          this.log.info(`${why}; serving without an APIService, re-checking every ${Math.round(this.opts.refreshMs / 1000)}s`),
        );
        return;
      }
      for (let attempt = 1; ; attempt++) {
        try {
          await this.ensure(spec);
          return;
        } catch (e) {
          if (statusOf(e) === 409 && attempt < 3) continue; // someone else wrote it meanwhile: read again
          throw e;
        }
      }
    } catch (e) {
      if (statusOf(e) === 403) {
        const why = `forbidden to manage apiservices: ${(e as Error).message}`;
        this.setState('forbidden', why, () =>
          this.log.warn(`APIService ${APISERVICE_NAME} not registered: ${why}; serving continues, re-checking every ${Math.round(this.opts.refreshMs / 1000)}s`),
        );
        return;
      }
      this.fail((e as Error).message);
    }
  }

  private fail(why: string): void {
    this.setState('failed', why, () =>
      this.log.warn(`APIService ${APISERVICE_NAME} not registered: ${why}; serving continues, re-checking every ${Math.round(this.opts.refreshMs / 1000)}s`),
    );
  }

  /** Discovery of apiregistration.k8s.io/v1: served when it lists apiservices; 404 means absent. */
  private async apiServed(): Promise<boolean> {
    try {
      const r = await this.client.request('GET', APIREGISTRATION);
      const resources = (r.body as { resources?: Array<{ name?: string }> } | undefined)?.resources ?? [];
      return resources.some((x) => x.name === 'apiservices');
    } catch (e) {
      if (statusOf(e) === 404) return false;
      throw e;
    }
  }

  private async ensure(spec: APIServiceSpec): Promise<void> {
    const path = `${APIREGISTRATION}/apiservices/${APISERVICE_NAME}`;
    let existing: APIServiceObject | undefined;
    try {
      existing = (await this.client.request('GET', path)).body as APIServiceObject;
    } catch (e) {
      if (statusOf(e) !== 404) throw e;
    }
    if (!existing) {
      await this.client.request('POST', `${APIREGISTRATION}/apiservices`, {
        apiVersion: 'apiregistration.k8s.io/v1',
        kind: 'APIService',
        metadata: { name: APISERVICE_NAME },
        spec,
      });
      this.writtenCA = spec.caBundle;
      this.registered(`created APIService ${APISERVICE_NAME}`, spec);
      return;
    }
    if (matches(existing.spec, spec)) {
      this.writtenCA ??= spec.caBundle;
      this.registered(`APIService ${APISERVICE_NAME} is current`, spec);
      return;
    }
    const rotated = this.writtenCA !== undefined && this.writtenCA !== spec.caBundle;
    const { insecureSkipTLSVerify: _drop, ...rest } = existing.spec ?? {};
    await this.client.request('PUT', path, { ...existing, spec: { ...rest, ...spec } });
    const first = this.writtenCA === undefined || this.state !== 'registered';
    this.writtenCA = spec.caBundle;
    if (rotated) this.log.info(`updated APIService ${APISERVICE_NAME}: the serving CA changed`);
    else if (!first) this.log.debug(`updated APIService ${APISERVICE_NAME}: its spec had been changed by someone else`);
    this.registered(`updated APIService ${APISERVICE_NAME}`, spec);
  }

  private registered(what: string, spec: APIServiceSpec): void {
    this.setState('registered', what, () =>
      this.log.info(what, { service: `${spec.service.namespace}/${spec.service.name}:${spec.service.port}` }),
    );
  }
}

function matches(have: APIServiceObject['spec'], want: APIServiceSpec): boolean {
  if (!have) return false;
  return (
    have.group === want.group &&
    have.version === want.version &&
    have.groupPriorityMinimum === want.groupPriorityMinimum &&
    have.versionPriority === want.versionPriority &&
    have.service?.namespace === want.service.namespace &&
    have.service?.name === want.service.name &&
    (have.service?.port ?? 443) === want.service.port &&
    have.caBundle === want.caBundle &&
    !have.insecureSkipTLSVerify
  );
}
