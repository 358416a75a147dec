// TLS handshakes in progress, bounded per client address and in total. A handshake is CPU spent
// on the event loop before anyone is authenticated (the server's signature, the key exchange):
// 2,000 connections opened at once by one client were as many handshakes run back to back,
// holding the event loop for hundreds of milliseconds at a time while every other client waited
// (bench/attack attacks-http.ts, "Idle connections"). With at most `perAddress` handshakes in
// progress per address, one address can queue at most that many handshakes' worth of work into
// one turn of the event loop, whatever number of connections it opens; with at most `total` in
// progress over every address, so can a client that connects from many addresses (an IPv6 /64 is
// 2^64 of them).
//
// Connections beyond a bound wait, unread, for a handshake to finish (a client that opens a burst
// of connections is served, a little later); a connection still waiting when the handshake
// timeout has passed since it was accepted is closed, as a handshake that never completes is.
// When a slot frees, the addresses that have connections waiting take turns (round robin, each
// address's own in arrival order), so one address's long queue does not stand before another
// address's only connection. Already established connections are never affected.
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
 * Installs the gate on a TLS (or HTTP/2 secure) server; call once, before it listens. A bound of 0
 * is no bound; with both 0 nothing is installed.
 */
export function gateHandshakes(server: NetServer, perAddress: number, total: number, handshakeTimeoutMs: number): HandshakeGate {
  let waitedOut = 0;
  if (perAddress <= 0 && total <= 0) return { waitedOut: () => waitedOut };
  const perAddressBound = perAddress > 0 ? perAddress : Infinity;
  const totalBound = total > 0 ? total : Infinity;
  const start = server.listeners('connection') as Listener[];
  server.removeAllListeners('connection');
  const addresses = new Map<string, AddressState>();
  // Addresses with connections waiting, in turn order: the one served goes to the back.
  const queued = new Set<string>();
  // TCP sockets whose handshake runs, and the address whose slot each holds.
  const inProgress = new Map<Socket, string>();
  // What a waiting socket must undo when its turn comes (its timer and listeners).
  const stopWaiting = new WeakMap<Socket, () => void>();

  /**
   * Starts waiting connections while there are free slots. An address at its own bound is passed
   * over; there are at most total / perAddress of those, so a turn looks at few addresses.
   */
  const dispatch = (): void => {
    while (inProgress.size < totalBound) {
      let next: string | undefined;
      for (const address of queued) {
        if (addresses.get(address)!.inProgress < perAddressBound) {
          next = address;
          break;
        }
      }
      if (next === undefined) return;
      const state = addresses.get(next)!;
      const socket = state.waiting.values().next().value!;
      state.waiting.delete(socket);
      queued.delete(next);
      if (state.waiting.size > 0) queued.add(next);
      stopWaiting.get(socket)?.();
      begin(socket, next, state);
    }
  };

  const release = (socket: Socket): void => {
    const address = inProgress.get(socket);
    if (address === undefined) return;
    inProgress.delete(socket);
    const state = addresses.get(address)!;
    state.inProgress--;
    if (state.inProgress === 0 && state.waiting.size === 0) addresses.delete(address);
    dispatch();
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
    // Starting at once passes nobody: after every dispatch the slots are all taken, or every
    // address still waiting is at its own bound (and so is this one if it has connections waiting).
    if (state.inProgress < perAddressBound && inProgress.size < totalBound) return begin(socket, address, state);
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
      if (s.waiting.size === 0) queued.delete(address);
      if (s.inProgress === 0 && s.waiting.size === 0) addresses.delete(address);
    };
    socket.once('close', forget);
    stopWaiting.set(socket, () => {
      clearTimeout(timer);
      socket.off('error', swallow);
      socket.off('close', forget);
    });
    s.waiting.add(socket);
    queued.add(address);
  });
  server.on('secureConnection', (tls: TLSSocket) => {
    const raw = (tls as unknown as { _parent?: Socket })._parent;
    if (raw) release(raw);
  });
  return { waitedOut: () => waitedOut };
}
