// Checks every file and address flag of `serve` before anything is written: a mistake exits 2 with
// a message naming the flag (docs/configuration.md), and the data directory is not created or
// touched (no generated CA, no store files left behind by a start that could never succeed).
import { readFileSync } from 'node:fs';
import { X509Certificate, createPrivateKey, type KeyObject } from 'node:crypto';
import { isIP } from 'node:net';
import { FlagError, type ServeOptions } from './options.js';

function readFlagFile(flag: string, path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    const why = err.code === 'ENOENT' ? 'no such file' : err.code === 'EACCES' ? 'permission denied' : err.code === 'EISDIR' ? 'is a directory' : err.message;
    throw new FlagError(`--${flag}: cannot read ${path}: ${why}`);
  }
}

function certificate(flag: string, path: string): X509Certificate {
  const text = readFlagFile(flag, path);
  if (!text.includes('-----BEGIN CERTIFICATE-----')) throw new FlagError(`--${flag}: ${path} is not a PEM certificate (no "-----BEGIN CERTIFICATE-----" block)`);
  try {
    return new X509Certificate(text);
  } catch (e) {
    throw new FlagError(`--${flag}: ${path} holds no readable PEM certificate: ${(e as Error).message}`);
  }
}

function privateKey(flag: string, path: string): KeyObject {
  const text = readFlagFile(flag, path);
  if (!/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(text)) throw new FlagError(`--${flag}: ${path} is not a PEM private key (no "-----BEGIN ... PRIVATE KEY-----" block)`);
  try {
    return createPrivateKey(text);
  } catch (e) {
    throw new FlagError(`--${flag}: ${path} holds no readable PEM private key: ${(e as Error).message}`);
  }
}

/** Throws FlagError naming the first unusable flag. Reads files; writes nothing. */
export function preflightServe(opts: ServeOptions): void {
  if (isIP(opts.bindAddress) === 0) {
    throw new FlagError(`--bind-address: must be an IP address (e.g. 127.0.0.1, 0.0.0.0 or ::), got ${JSON.stringify(opts.bindAddress)}`);
  }
  if (opts.tlsCertFile && opts.tlsKeyFile) {
    const cert = certificate('tls-cert-file', opts.tlsCertFile);
    const key = privateKey('tls-private-key-file', opts.tlsKeyFile);
    if (!cert.checkPrivateKey(key)) {
      throw new FlagError(`--tls-private-key-file: ${opts.tlsKeyFile} is not the private key of the certificate in --tls-cert-file ${opts.tlsCertFile}`);
    }
  }
  if (opts.kubeconfig) {
    const text = readFlagFile('kubeconfig', opts.kubeconfig);
    if (!/^\s*clusters\s*:/m.test(text) && !/"clusters"\s*:/.test(text)) throw new FlagError(`--kubeconfig: ${opts.kubeconfig} is not a kubeconfig (no clusters)`);
  }
  if (opts.authn.clientCAFile) certificate('client-ca-file', opts.authn.clientCAFile);
  if (opts.authn.requestHeader.clientCAFile) certificate('requestheader-client-ca-file', opts.authn.requestHeader.clientCAFile);
  if (opts.audit.clientCAFile) {
    certificate('audit-client-ca-file', opts.audit.clientCAFile);
    if (isIP(opts.audit.bindAddress) === 0) {
      throw new FlagError(`--audit-bind-address: must be an IP address (e.g. 127.0.0.1, 0.0.0.0 or ::), got ${JSON.stringify(opts.audit.bindAddress)}`);
    }
  }
  if (opts.authz.policyFile) readFlagFile('authorization-policy-file', opts.authz.policyFile);
}
