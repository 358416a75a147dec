// Flags of what the server does with tenant input on its own behalf (docs/security.md "Trust
// boundaries"): where it may connect, whether credentials may go over plain http, whether a
// GitTarget may name a path on the server's disk. Parsed here so src/cli/options.ts only lists them.
import { parseCIDR, type EgressOptions } from './egress.js';

export interface TenantInputOptions {
  allowInsecureCredentials: boolean;
  allowFileRepositories: boolean;
  egress: EgressOptions;
}

export const TENANT_INPUT_FLAGS = [
  {
    name: 'allow-insecure-credentials',
    description: 'Development only: let git credentials (spec.repository.secretRef) and kubeconfig Secret tokens go to plain http:// servers. Refused by default.',
    default: 'false',
  },
  {
    name: 'allow-file-repositories',
    description: "Let GitTargets name file:// repositories (any path the server can write; not partitioned per tenant): single-tenant installations only. Refused by default.",
    default: 'false',
  },
  { name: 'egress-deny-cidrs', description: 'Comma-separated CIDRs the server never connects to for git remotes and kubeconfig Secret servers, in addition to the always-refused link-local ranges (169.254.0.0/16, fe80::/10, fd00:ec2::254).' },
  { name: 'egress-allow-cidrs', description: 'Comma-separated CIDRs: when given, git remotes and kubeconfig Secret servers must resolve inside them.' },
  { name: 'egress-allow-hosts', description: 'Comma-separated host names (or *.suffix) exempt from the egress CIDR rules: the operator vouches for what they resolve to.' },
];

export class TenantInputFlagError extends Error {}

function list(v: string | undefined): string[] {
  return (v ?? '').split(',').map((s) => s.trim()).filter(Boolean);
}

export function parseTenantInputFlags(values: Record<string, string | undefined>): TenantInputOptions {
  const bool = (name: string) => {
    const v = values[name] ?? 'false';
    if (v !== 'true' && v !== 'false') throw new TenantInputFlagError(`--${name}: must be true or false, got ${JSON.stringify(v)}`);
    return v === 'true';
  };
  const cidrs = (name: string) => {
    const l = list(values[name]);
    for (const c of l) {
      try {
        parseCIDR(c);
      } catch (e) {
        throw new TenantInputFlagError(`--${name}: ${(e as Error).message}`);
      }
    }
    return l;
  };
  const hosts = list(values['egress-allow-hosts']);
  for (const h of hosts) if (!/^(\*\.)?[A-Za-z0-9.-]+$/.test(h)) throw new TenantInputFlagError(`--egress-allow-hosts: "${h}" is not a host name or *.suffix`);
  return {
    allowInsecureCredentials: bool('allow-insecure-credentials'),
    allowFileRepositories: bool('allow-file-repositories'),
    egress: { denyCIDRs: cidrs('egress-deny-cidrs'), allowCIDRs: cidrs('egress-allow-cidrs'), allowHosts: hosts },
  };
}
