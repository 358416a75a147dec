// Where the server may connect on a tenant's behalf: git remotes (src/git/http-client.ts) and the
// servers of kubeconfig Secrets (src/controllers/source/client.ts). Both are chosen by whoever
// writes a GitTarget or a Secret, so without a rule a tenant could make the server fetch cloud
// metadata credentials (169.254.169.254) or probe the operator's network.
//
// The rule is applied twice: statically on the URL (a literal address or a metadata name is refused
// at validation, with no DNS), and at connect time on every address the name resolves to (a name
// that resolves to a refused address is refused when connecting: DNS rebinding cannot pass a name
// that looked harmless at validation). Loopback is allowed by default (development, the sandbox
// and the tests run on it); docs/security.md tells multi-tenant operators to deny it.
import { BlockList, isIP } from 'node:net';
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';

/** Link-local and cloud-metadata addresses: refused always (unless a host is explicitly allowed). */
export const BUILTIN_DENIED_CIDRS = ['169.254.0.0/16', 'fe80::/10', 'fd00:ec2::254/128'];
/** Names of cloud metadata services (GCP, Azure/AWS aliases); compared lowercased, without a trailing dot. */
export const METADATA_HOSTS = ['metadata', 'metadata.google.internal', 'metadata.goog', 'instance-data', 'instance-data.ec2.internal'];

export interface EgressOptions {
  /** --egress-deny-cidrs: refused in addition to the built-in link-local ranges. */
  denyCIDRs?: string[];
  /** --egress-allow-cidrs: when non-empty, only addresses inside these ranges are allowed. */
  allowCIDRs?: string[];
  /** --egress-allow-hosts: names (exact, or `*.suffix`) allowed whatever they resolve to; the operator vouches for them. */
  allowHosts?: string[];
}

export const EGRESS_DENIED = 'EGRESS_DENIED';

export class EgressDeniedError extends Error {
  readonly code = EGRESS_DENIED;
  constructor(message: string) {
    super(message);
    this.name = 'EgressDeniedError';
  }
}

/** Parses `a.b.c.d/n` or `v6::/n` (a bare address is /32 or /128). Throws with a message naming the value. */
export function parseCIDR(s: string): { address: string; prefix: number; family: 'ipv4' | 'ipv6' } {
  const [addr, bits, extra] = s.trim().split('/');
  const v = isIP(addr ?? '');
  if (!v || extra !== undefined) throw new Error(`"${s}" is not an IP address or CIDR`);
  const max = v === 4 ? 32 : 128;
  const prefix = bits === undefined ? max : Number(bits);
  if (!/^\d+$/.test(bits ?? String(max)) || prefix > max) throw new Error(`"${s}" has an invalid prefix length`);
  return { address: addr!, prefix, family: v === 4 ? 'ipv4' : 'ipv6' };
}

function blockList(cidrs: readonly string[]): BlockList {
  const b = new BlockList();
  for (const c of cidrs) {
    const { address, prefix, family } = parseCIDR(c);
    b.addSubnet(address, prefix, family);
  }
  return b;
}

/** `[::1]` → `::1`, lowercased, trailing dot dropped; `::ffff:1.2.3.4` → `1.2.3.4` (the IPv4 it reaches). */
export function normalizeHost(host: string): string {
  let h = host.trim().toLowerCase();
  if (h.startsWith('[') && h.endsWith(']')) h = h.slice(1, -1);
  while (h.endsWith('.')) h = h.slice(0, -1);
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(h);
  if (mapped) return mapped[1]!;
  // ::ffff:a9fe:a9fe is the same mapped address written in hex.
  const hex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(h);
  if (hex) {
    const hi = parseInt(hex[1]!, 16);
    const lo = parseInt(hex[2]!, 16);
    return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  }
  return h;
}

const builtin = blockList(BUILTIN_DENIED_CIDRS);

/**
 * The static part of the rule, needing no flags and no DNS: a literal link-local address or a
 * metadata name. Returns why it is refused, or undefined. Used at validation (src/model/destination.ts,
 * src/controllers/source/kubeconfig-allowlist.ts).
 */
export function builtinEgressRefusal(host: string): string | undefined {
  const h = normalizeHost(host);
  if (METADATA_HOSTS.includes(h)) return `"${h}" is a cloud metadata service name; the server never connects there`;
  const v = isIP(h);
  if (v && builtin.check(h, v === 4 ? 'ipv4' : 'ipv6')) return `${h} is a link-local (cloud metadata) address; the server never connects there`;
  return undefined;
}

type Resolver = (host: string, cb: (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void) => void;

const systemResolver: Resolver = (host, cb) => dnsLookup(host, { all: true, verbatim: true }, cb);

export class EgressPolicy {
  private readonly deny: BlockList;
  private readonly allow: BlockList | undefined;
  private readonly allowHosts: string[];

  /** `resolve` is the DNS lookup (the system resolver; tests give a fixed table to exercise rebinding on loopback). */
  constructor(
    opts: EgressOptions = {},
    private readonly resolve: Resolver = systemResolver,
  ) {
    this.deny = blockList([...BUILTIN_DENIED_CIDRS, ...(opts.denyCIDRs ?? [])]);
    this.allow = opts.allowCIDRs?.length ? blockList(opts.allowCIDRs) : undefined;
    this.allowHosts = (opts.allowHosts ?? []).map(normalizeHost);
  }

  private hostAllowed(h: string): boolean {
    return this.allowHosts.some((a) => (a.startsWith('*.') ? h.endsWith(a.slice(1)) : a === h));
  }

  /** Why `address` (an IP) may not be reached for `host`, or undefined. */
  addressRefusal(host: string, address: string): string | undefined {
    const a = normalizeHost(address);
    const family = isIP(a) === 4 ? 'ipv4' : 'ipv6';
    const via = normalizeHost(host) === a ? a : `${normalizeHost(host)} (${a})`;
    if (builtin.check(a, family)) return `egress to ${via} is refused: a link-local (cloud metadata) address`;
    if (this.deny.check(a, family)) return `egress to ${via} is refused by --egress-deny-cidrs`;
    if (this.allow && !this.allow.check(a, family)) return `egress to ${via} is refused: not inside --egress-allow-cidrs`;
    return undefined;
  }

  /** The check that needs no DNS: names allowed by --egress-allow-hosts, metadata names, literal addresses. */
  hostRefusal(host: string): string | undefined {
    const h = normalizeHost(host);
    if (this.hostAllowed(h)) return undefined;
    if (METADATA_HOSTS.includes(h)) return `egress to ${h} is refused: a cloud metadata service name`;
    return isIP(h) ? this.addressRefusal(h, h) : undefined;
  }

  /** Throws EgressDeniedError when `host` is refused without DNS (call before every request: literals bypass `lookup`). */
  assertHost(host: string): void {
    const why = this.hostRefusal(host);
    if (why) throw new EgressDeniedError(why);
  }

  /**
   * A `lookup` for http(s) agents and requests: resolves, then refuses the connection when any
   * address of the name is refused (a name with one good and one bad address is refused: which one
   * a connection takes is not ours to choose).
   */
  readonly lookup = (hostname: string, options: { all?: boolean; family?: number | string } | number, callback: (...args: any[]) => void): void => {
    const all = typeof options === 'object' && options?.all === true;
    const h = normalizeHost(hostname);
    const allowedByName = this.hostAllowed(h);
    this.resolve(hostname, (err, addresses) => {
      if (err) return callback(err);
      const f = typeof options === 'number' ? options : options?.family;
      const family = f === 'IPv4' ? 4 : f === 'IPv6' ? 6 : typeof f === 'number' ? f : 0;
      const usable = addresses.filter((a) => !family || a.family === family);
      if (usable.length === 0) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }));
      if (!allowedByName) {
        for (const a of usable) {
          const why = this.addressRefusal(hostname, a.address);
          if (why) return callback(new EgressDeniedError(why));
        }
      }
      if (all) callback(null, usable);
      else callback(null, usable[0]!.address, usable[0]!.family);
    });
  };
}
