// Wires APIService self-registration into `serve`: the hosting-cluster client, the CA bundle to
// publish (re-read when its file changes, so a rotated CA reaches the APIService within seconds).
import { readFileSync } from 'node:fs';
import type { Registry } from 'prom-client';
import { HostingClient } from '../auth/hosting.js';
import { FILE_RESYNC_MS, watchFileContent } from '../auth/filewatch.js';
import { APIServiceRegistrar, caFileBesideCert } from '../registration/index.js';
import type { Logger } from '../metrics/logger.js';
import type { ServeOptions } from './options.js';

export interface RunningRegistration {
  registrar: APIServiceRegistrar;
  stop(): void;
}

const HOSTING_TIMEOUT_MS = 10_000;
const CA_FILE_POLL_MS = FILE_RESYNC_MS;

export async function startRegistration(
  opts: ServeOptions,
  tls: { generatedCAFile?: string; servingCertPem: string },
  log: Logger,
  registry: Registry,
): Promise<RunningRegistration> {
  const caFile =
    opts.registration.caFile ?? (opts.tlsCertFile ? caFileBesideCert(opts.tlsCertFile) : undefined) ?? tls.generatedCAFile;
  // Without a CA file the serving certificate is published as its own trust anchor (self-signed,
  // or a chain whose root the bundle then contains); Go's verifier accepts a leaf found in its roots.
  const readCA = caFile ? () => readFileSync(caFile, 'utf8') : () => (opts.tlsCertFile ? readFileSync(opts.tlsCertFile, 'utf8') : tls.servingCertPem);
  // This process keeps serving the certificate it started with until it restarts, so a rotated CA
  // is published beside the one that signed that certificate, never instead of it: the aggregator
  // keeps reaching this replica while the new one rolls out.
  const startPem = readCA();
  const caPem = () => {
    const now = readCA();
    return now.includes(startPem.trim()) ? now : `${now.trimEnd()}\n${startPem}`;
  };
  const client = await HostingClient.create({ kubeconfig: opts.kubeconfig, inCluster: !opts.kubeconfig, timeoutMs: HOSTING_TIMEOUT_MS });
  const registrar = new APIServiceRegistrar(client, opts.registration, caPem, log, registry);
  const watched = caFile ?? opts.tlsCertFile;
  const unwatch = watched
    ? watchFileContent(watched, CA_FILE_POLL_MS, () => void registrar.trigger(), () => undefined)
    : () => undefined;
  registrar.start();
  return {
    registrar,
    stop() {
      unwatch();
      registrar.stop();
      client.close();
    },
  };
}
