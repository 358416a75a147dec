// Client-certificate verification is OpenSSL's: the TLS server verifies the presented chain during
// the handshake against the union of the client CA and requestheader CA bundles (signatures,
// validity, CA:TRUE, path length, name constraints, keyCertSign, and the sslclient purpose, i.e.
// the clientAuth extended key usage on the leaf and on any CA that carries the extension). What the
// TLS layer cannot say is which bundle anchors the chain, so each authenticator then requires the
// root of the verified chain to be in its own, current bundle (a CA removed by rotation stops
// authenticating even on open connections), and re-checks validity dates (long-lived connections).
import { X509Certificate, createHash } from 'node:crypto';
import type { TLSSocket } from 'node:tls';
import type { AuthnRequest, Authenticator, AuthnResult, PeerVerification, UserInfo } from './types.js';

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

/** OpenSSL's verify error codes (as node reports them) in the words of Go's crypto/x509. */
function describeOpenSSLError(code: string | undefined): string {
  switch (code) {
    case 'CERT_HAS_EXPIRED':
    case 'CERT_NOT_YET_VALID':
      return 'x509: certificate has expired or is not yet valid';
    case 'INVALID_PURPOSE':
      return 'x509: certificate specifies an incompatible key usage';
    case 'INVALID_CA':
    case 'KEYUSAGE_NO_CERTSIGN':
      return `x509: a certificate in the chain is not allowed to sign certificates (${code})`;
    case 'PATH_LENGTH_EXCEEDED':
      return 'x509: too many intermediates for path length constraint';
    case undefined:
    case '':
      return 'x509: the certificate chain was not verified';
    default:
      return `x509: certificate signed by unknown authority (${code})`;
  }
}

const dates = new WeakMap<X509Certificate, [number, number]>();

function timeValid(c: X509Certificate, now: number): boolean {
  let d = dates.get(c);
  if (!d) {
    d = [Date.parse(c.validFrom), Date.parse(c.validTo)];
    dates.set(c, d);
  }
  return d[0] <= now && now <= d[1];
}

/**
 * Checks a chain the TLS layer verified (leaf first, root last) against one trust bundle.
 * Returns undefined on success, else a reason.
 */
export function verifyClientChain(chain: X509Certificate[], verified: PeerVerification | undefined, roots: Set<string>, now = Date.now()): string | undefined {
  if (chain.length === 0) return 'no client certificate';
  if (!verified?.authorized) return describeOpenSSLError(verified?.error);
  const root = chain[chain.length - 1]!;
  if (!roots.has(fingerprint(root))) return 'x509: certificate signed by unknown authority';
  for (const c of chain) if (!timeValid(c, now)) return 'x509: certificate has expired or is not yet valid';
  return undefined;
}

/** Reads one subject attribute's values (CN, O) from a certificate, via Node's structured legacy object. */
export function subjectValues(c: X509Certificate, key: 'CN' | 'O'): string[] {
  const subject = c.toLegacyObject().subject as unknown as Record<string, string | string[] | undefined>;
  const v = subject?.[key];
  return v === undefined ? [] : Array.isArray(v) ? v : [v];
}

// A connection's chain is parsed once (the server keeps it per connection), so its certificate
// objects are reused by every request on it: derive the user and the fingerprint once per object.
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
  private prints = new Set<string>();
  private pemText: string | undefined;
  private listeners: Array<() => void> = [];

  constructor(private readonly what: string) {}

  /** Replaces the bundle; an unreadable bundle throws and leaves the previous one in place. */
  set(pem: string | undefined): boolean {
    const text = pem && pem.trim().length > 0 ? pem : undefined;
    if (text === this.pemText) return false;
    this.certs = text ? parsePEMBundle(text, this.what) : [];
    this.prints = new Set(this.certs.map((c) => c.fingerprint256));
    this.pemText = text;
    for (const l of this.listeners) l();
    return true;
  }

  roots(): X509Certificate[] {
    return this.certs;
  }

  /** SHA-256 fingerprints of the bundle's certificates. */
  fingerprints(): Set<string> {
    return this.prints;
  }

  pem(): string | undefined {
    return this.pemText;
  }

  onChange(l: () => void): void {
    this.listeners.push(l);
  }
}

/** Verifies presented chains for one trust purpose (one bundle). */
export class ChainVerifier {
  constructor(private readonly ca: DynamicCA) {}

  verify(chain: X509Certificate[], verified: PeerVerification | undefined, now = Date.now()): string | undefined {
    if (this.ca.roots().length === 0) return 'no CA configured';
    return verifyClientChain(chain, verified, this.ca.fingerprints(), now);
  }
}

/** The extra key kube-apiserver sets on every authenticated user to identify its credential (user.CredentialIDKey). */
export const CREDENTIAL_ID_EXTRA = 'authentication.kubernetes.io/credential-id';
const clientUserByCert = new WeakMap<X509Certificate, UserInfo>();

/**
 * A client certificate's user as kube-apiserver's CommonNameUserConversion makes it
 * (k8s.io/apiserver pkg/authentication/request/x509): CN, O, and the credential id
 * `X509SHA256=<hex sha-256 of the certificate>` (what `kubectl auth whoami` shows as Extra).
 */
function clientCertificateUser(leaf: X509Certificate): UserInfo {
  let u = clientUserByCert.get(leaf);
  if (!u) {
    const id = `X509SHA256=${createHash('sha256').update(leaf.raw).digest('hex')}`;
    u = Object.freeze({ ...userFromCertificate(leaf), extra: Object.freeze({ [CREDENTIAL_ID_EXTRA]: Object.freeze([id]) as string[] }) }) as UserInfo;
    clientUserByCert.set(leaf, u);
  }
  return u;
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
    const err = this.verifier.verify(chain, req.peerVerified);
    if (err) return { kind: 'error', message: `client certificate: ${err}` };
    const user = clientCertificateUser(chain[0]!);
    if (!user.username) return { kind: 'error', message: 'client certificate: subject has no common name' };
    return { kind: 'user', user };
  }
}

/** What OpenSSL concluded about the peer's chain in the handshake. */
export function peerVerificationFromSocket(socket: TLSSocket): PeerVerification {
  const error = socket.authorizationError as unknown;
  return socket.authorized ? { authorized: true } : { authorized: false, error: error === undefined || error === null ? undefined : String((error as { code?: string }).code ?? error) };
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
