// Start-up step of run.ts: the audit listener (src/attribution/endpoint.ts), once the API serves,
// when --audit-client-ca-file is given; its facts go to the same store as the API's.
import type { AttributionFacts } from '../attribution/types.js';
import type { AuditMetrics } from '../attribution/metrics.js';
import type { Logger } from '../metrics/logger.js';
import type { CompletedConfig } from './config.js';

export interface RunningAudit {
  port: number;
  url: string;
  close(): Promise<void>;
}

export async function startAudit(c: CompletedConfig, facts: AttributionFacts, metrics: AuditMetrics, log: Logger): Promise<RunningAudit | undefined> {
  const { opts } = c;
  if (opts.mode !== 'serve' || !opts.audit.clientCAFile) return undefined;
  const { startAuditListener, AUDIT_PATH } = await import('../attribution/endpoint.js');
  const listener = await startAuditListener(
    {
      tls: { certPem: c.tls.certPem, keyPem: c.tls.keyPem, clientCAFile: opts.audit.clientCAFile },
      facts,
      log,
      metrics,
      maxRequestBytes: opts.audit.maxRequestBytes,
      connections: opts.connections,
    },
    opts.audit.port,
    opts.audit.bindAddress,
  );
  const host = opts.audit.bindAddress === '0.0.0.0' || opts.audit.bindAddress === '::' ? '127.0.0.1' : opts.audit.bindAddress;
  const url = `https://${host.includes(':') ? `[${host}]` : host}:${listener.port}${AUDIT_PATH}`;
  log.info('serving audit webhook', { url, port: listener.port, factTTL: `${opts.audit.factTtlMs / 1000}s` });
  // Before the kubectl line, which is what scripts and tests wait for: the port is known by then.
  process.stdout.write(`reverser-apiserver audit webhook is serving on ${url}\n`);
  return { port: listener.port, url, close: () => listener.close() };
}
