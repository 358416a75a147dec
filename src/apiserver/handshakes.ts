// TLS handshakes in progress, bounded per client address. A handshake is CPU spent on the event
// loop before anyone is authenticated (the server's signature, the key exchange): 2,000 connections
// opened at once by one client were as many handshakes run back to back, holding the event loop
// for hundreds of milliseconds at a time while every other client waited (bench/attack
// attacks-http.ts, "Idle connections"). With at most `perAddress` handshakes in progress per
// address, one address can queue at most that many handshakes' worth of work into one turn of the
// event loop, whatever number of connections it opens.
//
// Connections beyond the bound wait, unread, in arrival order, for a handshake of their address to
// finish (a client that opens a burst of connections is served, a little later); a connection
// still waiting when the handshake timeout has passed since it was accepted is closed, as a
// handshake that never completes is. Already established connections are never affected.
//
// How: node's TLS server starts a handshake in its 'connection' listener (tlsConnectionListener,
// which wraps the accepted TCP socket into a TLSSocket). The gate takes that listener's place and
// calls it when the address has a free slot. Bytes the client sent meanwhile (its ClientHello)
// stay in the TCP socket's buffer, and the TLSSocket reads them first (node's initRead). A slot is
// free again when the server reports the connection secure ('secureConnection', whose TLSSocket's
// `_parent` is the TCP socket it wrapped) or the TCP socket closes (a failed or timed-out handshake).
import type { Server as NetServer, Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';

export interface HandshakeGate {
  /** Connections closed because they waited for a handshake slot longer than the handshake timeout. */
  waitedOut(): number;
}

interface AddressState {
  inProgress: number;
  /** Connections waiting for a slot, in arrival order (a Set: a closing one leaves in O(1)). */
  waiting: Set<Socket>;
}

type Listener = (socket: Socket) => void;

/**
 * Installs the gate on a TLS (or HTTP/2 secure) server; call once, before it listens. `perAddress`
 * 0 installs nothing (no bound).
 */
export function gateHandshakes(server: NetServer, perAddress: number, handshakeTimeoutMs: number): HandshakeGate {
  let waitedOut = 0;
  if (perAddress <= 0) return { waitedOut: () => waitedOut };
  const start = server.listeners('connection') as Listener[];
  server.removeAllListeners('connection');
  const addresses = new Map<string, AddressState>();
  // TCP sockets whose handshake runs, and the address whose slot each holds.
  const inProgress = new Map<Socket, string>();
  // What a waiting socket must undo when its turn comes (its timer and listeners).
  const stopWaiting = new WeakMap<Socket, () => void>();

  const release = (socket: Socket): void => {
    const address = inProgress.get(socket);
    if (address === undefined) return;
    inProgress.delete(socket);
    const state = addresses.get(address)!;
    state.inProgress--;
    const next = state.waiting.values().next();
    if (!next.done) {
      state.waiting.delete(next.value);
      stopWaiting.get(next.value)?.();
      begin(next.value, address, state);
    } else if (state.inProgress === 0) addresses.delete(address);
  };

  const begin = (socket: Socket, address: string, state: AddressState): void => {
    state.inProgress++;
    inProgress.set(socket, address);
    socket.once('close', () => release(socket));
    for (const l of start) l.call(server, socket);
  };

  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress ?? '';
    let state = addresses.get(address);
    if (!state) addresses.set(address, (state = { inProgress: 0, waiting: new Set() }));
    if (state.inProgress < perAddress) return begin(socket, address, state);
    // Wait for a slot. Until the TLS socket takes over, errors of the raw socket (a client that
    // resets) are ours to swallow; the queue forgets a socket that closes while it waits.
    const swallow = () => {};
    socket.on('error', swallow);
    const timer = setTimeout(() => {
      waitedOut++;
      socket.destroy();
    }, handshakeTimeoutMs);
    timer.unref();
    const s = state;
    const forget = () => {
      clearTimeout(timer);
      s.waiting.delete(socket);
      if (s.inProgress === 0 && s.waiting.size === 0) addresses.delete(address);
    };
    socket.once('close', forget);
    stopWaiting.set(socket, () => {
      clearTimeout(timer);
      socket.off('error', swallow);
      socket.off('close', forget);
    });
    s.waiting.add(socket);
  });
  server.on('secureConnection', (tls: TLSSocket) => {
    const raw = (tls as unknown as { _parent?: Socket })._parent;
    if (raw) release(raw);
  });
  return { waitedOut: () => waitedOut };
}
