// A TCP relay between kube-apiserver's audit webhook and our audit listener. kube-apiserver reads
// its webhook kubeconfig once, at start, so the tests point it here and move the other end: to a
// restarted server, to another replica, or nowhere (`block`: every connection is cut at once, as a
// firewall that resets would, and kube-apiserver's posts fail and are retried with its backoff).
// TLS passes through untouched: kube-apiserver still verifies our certificate and we its client one.
import { createConnection, createServer, type AddressInfo, type Server, type Socket } from 'node:net';

export interface Relay {
  port: number;
  /** Connections relayed so far (each carries one or more audit posts). */
  readonly connections: number;
  /** Relay new connections to 127.0.0.1:`port`. */
  to(port: number): void;
  /** Cut every open connection and refuse (reset) new ones until `to` is called again. */
  block(): void;
  close(): Promise<void>;
}

/**
 * `delayMs`: every byte from the destination reaches the client that much later (in order): a
 * slow link, e.g. so that a watch's events arrive after the audit posts of the same writes.
 */
export async function startRelay(target?: number, opts: { delayMs?: number } = {}): Promise<Relay> {
  const delayMs = opts.delayMs ?? 0;
  let dest: number | undefined = target;
  let connections = 0;
  const open = new Set<Socket>();
  const server: Server = createServer((inbound) => {
    open.add(inbound);
    inbound.once('close', () => open.delete(inbound));
    inbound.on('error', () => {});
    if (dest === undefined) {
      inbound.resetAndDestroy();
      return;
    }
    connections++;
    const outbound = createConnection({ host: '127.0.0.1', port: dest });
    open.add(outbound);
    outbound.once('close', () => open.delete(outbound));
    outbound.on('error', () => inbound.destroy());
    inbound.on('error', () => outbound.destroy());
    inbound.pipe(outbound);
    if (delayMs > 0) {
      // Same delay for every chunk: timers of equal duration fire in the order they were set.
      outbound.on('data', (chunk: Buffer) => setTimeout(() => inbound.destroyed || inbound.write(chunk), delayMs));
      outbound.once('end', () => setTimeout(() => inbound.end(), delayMs));
    } else {
      outbound.pipe(inbound);
    }
    inbound.once('close', () => outbound.destroy());
    outbound.once('close', () => (delayMs > 0 ? setTimeout(() => inbound.destroy(), delayMs + 1) : inbound.destroy()));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const cutAll = () => {
    for (const s of open) s.destroy();
    open.clear();
  };
  return {
    port: (server.address() as AddressInfo).port,
    get connections() {
      return connections;
    },
    to(port) {
      // A new destination: connections to the old one end, so kube-apiserver reconnects here.
      cutAll();
      dest = port;
    },
    block() {
      dest = undefined;
      cutAll();
    },
    close: () =>
      new Promise<void>((resolve) => {
        cutAll();
        server.close(() => resolve());
      }),
  };
}
