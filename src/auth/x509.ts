// Client-certificate verification done by hand. Node's TLS layer checks a peer against the union of
// every CA in the server's `ca` option and `socket.authorized` does not say which one signed it, so
// each authenticator verifies the presented chain against its own CA bundle.
import { X509Certificate } from 'node:crypto';
import type { TLSSocket } from 'node:tls';
import type { AuthnRequest, Authenticator, AuthnResult, UserInfo } from './types.js';

const CLIENT_AUTH = '1.3.6.1.5.5.7.3.2';
const ANY_EKU = '2.5.29.37.0';
const MAX_DEPTH = 8;

/** Splits a PEM bundle into certificates; throws with `what` in the message when one is unreadable. */
export function parsePEMBundle(pem: string, what: string): X509Certificate[] {
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  if (blocks.length === 0) throw new Error(`${what}: no PEM certificate found`);
  return blocks.map((b, i) => {
    try {
      return new X509Certificate(b);
    } catch (e) {
      throw new Error(`${what}: certificate #${i + 1} is unreadable: ${(e as Error).message}`);
    }
  });
}

function timeValid(c: X509Certificate, now: number): boolean {
  return Date.parse(c.validFrom) <= now && now <= Date.parse(c.validTo);
}

function allowsClientAuth(c: X509Certificate): boolean {
  // No EKU extension means "any usage", as in Go's crypto/x509.
  const eku = c.keyUsage as string[] | undefined;
  return !eku || eku.length === 0 || eku.includes(CLIENT_AUTH) || eku.includes(ANY_EKU);
}

function issued(issuer: X509Certificate, child: X509Certificate): boolean {
  try {
    return child.checkIssued(issuer) && child.verify(issuer.publicKey);
  } catch {
    return false;
  }
}

/**
 * Verifies `chain` (leaf first; later entries are candidate intermediates) up to one of `roots`,
 * requiring the clientAuth extended key usage. Returns undefined on success, else a reason.
 */
export function verifyClientChain(chain: X509Certificate[], roots: X509Certificate[], now = Date.now()): string | undefined {
  const leaf = chain[0];
  if (!leaf) return 'no client certificate';
  if (!timeValid(leaf, now)) return 'x509: certificate has expired or is not yet valid';
  if (!allowsClientAuth(leaf)) return 'x509: certificate specifies an incompatible key usage';
  const rootPrints = new Set(roots.map((r) => r.fingerprint256));
  let cur = leaf;
  const used = new Set<X509Certificate>([leaf]);
  for (let depth = 0; depth < MAX_DEPTH; depth++) {
    if (rootPrints.has(cur.fingerprint256)) return undefined;
    for (const root of roots) {
      if (timeValid(root, now) && issued(root, cur)) return undefined;
    }
    const next = chain.find((c) => !used.has(c) && c.ca && timeValid(c, now) && allowsClientAuth(c) && issued(c, cur));
    if (!next) break;
    used.add(next);
    cur = next;
  }
  return 'x509: certificate signed by unknown authority';
}

/** Reads one subject attribute's values (CN, O) from a certificate, via Node's structured legacy object. */
export function subjectValues(c: X509Certificate, key: 'CN' | 'O'): string[] {
  const subject = c.toLegacyObject().subject as unknown as Record<string, string | string[] | undefined>;
  const v = subject?.[key];
  return v === undefined ? [] : Array.isArray(v) ? v : [v];
}

// A connection's chain is parsed once (peerChainFromSocket), so its certificate objects are reused
// by every request on it: derive the user and the fingerprint once per certificate object.
const userByCert = new WeakMap<X509Certificate, UserInfo>();
const printByCert = new WeakMap<X509Certificate, string>();

export function userFromCertificate(leaf: X509Certificate): UserInfo {
  let u = userByCert.get(leaf);
  if (!u) {
    u = Object.freeze({ username: subjectValues(leaf, 'CN')[0] ?? '', groups: Object.freeze(subjectValues(leaf, 'O')) as string[] }) as UserInfo;
    userByCert.set(leaf, u);
  }
  return u;
}

function fingerprint(c: X509Certificate): string {
  let f = printByCert.get(c);
  if (f === undefined) {
    f = c.fingerprint256;
    printByCert.set(c, f);
  }
  return f;
}

/** Holds the current CA bundle of one trust purpose; swapped atomically on rotation. */
export class DynamicCA {
  private certs: X509Certificate[] = [];
  private pemText: string | undefined;
  /** Bumped on every change so verification caches know to forget. */
  generation = 0;
  private listeners: Array<() => void> = [];

  constructor(private readonly what: string) {}

  /** Replaces the bundle; an unreadable bundle throws and leaves the previous one in place. */
  set(pem: string | undefined): boolean {
    const text = pem && pem.trim().length > 0 ? pem : undefined;
    if (text === this.pemText) return false;
    this.certs = text ? parsePEMBundle(text, this.what) : [];
    this.pemText = text;
    this.generation++;
    for (const l of this.listeners) l();
    return true;
  }

  roots(): X509Certificate[] {
    return this.certs;
  }

  pem(): string | undefined {
    return this.pemText;
  }

  onChange(l: () => void): void {
    this.listeners.push(l);
  }
}

interface CachedVerdict {
  generation: number;
  expires: number;
  error?: string;
}

/**
 * Remembers verification verdicts per presented chain (by fingerprints) so signature checks are not
 * repeated on every request of a keep-alive client. Entries die on CA rotation and after a minute.
 */
export class ChainVerifier {
  private cache = new Map<string, CachedVerdict>();
  constructor(private readonly ca: DynamicCA, private readonly maxEntries = 2048) {}

  verify(chain: X509Certificate[], now = Date.now()): string | undefined {
    let key = '';
    for (const c of chain) key += fingerprint(c);
    const hit = this.cache.get(key);
    if (hit && hit.generation === this.ca.generation && hit.expires > now) return hit.error;
    const error = this.ca.roots().length === 0 ? 'no CA configured' : verifyClientChain(chain, this.ca.roots(), now);
    const leafEnd = Date.parse(chain[0]!.validTo);
    if (this.cache.size >= this.maxEntries) this.cache.delete(this.cache.keys().next().value!);
    this.cache.set(key, { generation: this.ca.generation, expires: Math.min(now + 60_000, leafEnd), error });
    return error;
  }
}

/** `--client-ca-file`: user = CN, groups = O. Not applicable (anonymous) without a certificate or CA. */
export class X509Authenticator implements Authenticator {
  private readonly verifier: ChainVerifier;
  constructor(private readonly ca: DynamicCA) {
    this.verifier = new ChainVerifier(ca);
  }

  async authenticate(req: AuthnRequest): Promise<AuthnResult> {
    const chain = req.peerChain;
    if (!chain || chain.length === 0 || this.ca.roots().length === 0) return { kind: 'anonymous' };
    const err = this.verifier.verify(chain);
    if (err) return { kind: 'error', message: `client certificate: ${err}` };
    const user = userFromCertificate(chain[0]!);
    if (!user.username) return { kind: 'error', message: 'client certificate: subject has no common name' };
    return { kind: 'user', user };
  }
}

/**
 * The peer chain of a TLS connection, leaf first; undefined when no certificate was sent. Costly
 * (getPeerCertificate(true) plus parsing): callers read it once per connection (the API server
 * keeps it per TLS socket / HTTP/2 session).
 */
export function peerChainFromSocket(socket: TLSSocket): X509Certificate[] | undefined {
  const out: X509Certificate[] = [];
  const peer = socket.getPeerCertificate?.(true);
  const seen = new Set<string>();
  let c: typeof peer | undefined = peer;
  while (c && c.raw && !seen.has(c.fingerprint256)) {
    seen.add(c.fingerprint256);
    out.push(new X509Certificate(c.raw));
    c = c.issuerCertificate as typeof peer | undefined;
  }
  return out.length > 0 ? out : undefined;
}
