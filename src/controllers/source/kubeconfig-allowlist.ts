// A kubeconfig from a tenant's Secret, read as data: parsed once, checked against an allowlist, and
// returned as the options the client is built from (KubeConfig.loadFromOptions in kubeconfig.ts),
// never as text for another parser. Why one parser: @kubernetes/client-node parses with js-yaml
// (YAML 1.1), which expands `<<` merge keys; the `yaml` package (YAML 1.2) keeps `<<` as an
// ordinary key. A check made on one parse and a client built from the other let
// `user: {<<: {exec: ...}}` through and ran the command in the server (test/security/kubeconfig-attack.test.ts).
//
// Refused: YAML merge keys, anchors, aliases and tags (no kubeconfig needs them, and they are where
// parsers disagree), duplicate keys, and every field not listed below. That covers every spelling
// of a file reference (token-file, tokenFile, client-certificate, client-key, certificate-authority),
// exec and auth-provider, proxy-url (a proxy the tenant names would see every request), username and
// password, impersonation and extensions.
import { CST, Lexer, isAlias, isScalar, parseDocument, visit, type Document } from 'yaml';

export type AllowlistRefusalReason =
  | 'KubeConfigInvalid'
  | 'KubeConfigYAMLFeatureNotAllowed'
  | 'KubeConfigExecNotAllowed'
  | 'KubeConfigFileReferenceNotAllowed'
  | 'KubeConfigInsecureTLSNotAllowed'
  | 'KubeConfigFieldNotAllowed';

export interface AllowedCluster {
  name: string;
  server: string;
  caData?: string;
  tlsServerName?: string;
}
export interface AllowedUser {
  name: string;
  token?: string;
  certData?: string;
  keyData?: string;
}
export interface AllowedContext {
  name: string;
  cluster: string;
  user: string;
  namespace?: string;
}
export interface AllowedKubeconfig {
  clusters: AllowedCluster[];
  users: AllowedUser[];
  contexts: AllowedContext[];
  currentContext: string;
}

export type AllowlistResult = { ok: true; kubeconfig: AllowedKubeconfig } | { ok: false; reason: AllowlistRefusalReason; message: string };

/**
 * Larger than any real kubeconfig (one cluster with a CA and a client certificate is ~8 KiB); bounds
 * the parser's work on tenant input (64 KiB of flow items parse in ~0.2 s on a loaded 2-core machine).
 */
export const MAX_KUBECONFIG_BYTES = 64 * 1024;
/**
 * YAML tokens (scalars, indicators, whitespace runs): a kubeconfig entry takes ~20, so this admits
 * ~100 clusters and users; the parser's cost grows with tokens, not bytes (a 60 KiB flow map of
 * 6,000 keys took over a second to parse), so the count is bounded before parsing.
 */
export const MAX_KUBECONFIG_TOKENS = 4096;
/** A kubeconfig nests 4 levels (users[0].user.token); flow collections deeper than this are refused before parsing. */
const MAX_FLOW_DEPTH = 32;

const FILE_KEYS: Record<string, string> = {
  'token-file': 'an inline token',
  tokenFile: 'an inline token',
  'client-certificate': 'client-certificate-data',
  'client-key': 'client-key-data',
  'certificate-authority': 'certificate-authority-data',
};
const EXEC_KEYS = ['exec', 'auth-provider'];
const TOP_KEYS = ['apiVersion', 'kind', 'clusters', 'users', 'contexts', 'current-context', 'preferences'];
const CLUSTER_KEYS = ['server', 'certificate-authority-data', 'tls-server-name', 'insecure-skip-tls-verify'];
const USER_KEYS = ['token', 'client-certificate-data', 'client-key-data'];
const CONTEXT_KEYS = ['cluster', 'user', 'namespace'];

const YAML_FEATURES = 'YAML merge keys, anchors, aliases and tags are refused in a kubeconfig Secret';

class Refusal extends Error {
  constructor(
    readonly reason: AllowlistRefusalReason,
    message: string,
  ) {
    super(message);
  }
}

/** Flow-collection depth (`[[[...`) outside quoted strings: the parser recurses on it, so it is bounded first. */
function flowDepth(text: string): number {
  let depth = 0;
  let max = 0;
  let quote: string | undefined;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quote) {
      if (c === '\\' && quote === '"') i++;
      else if (c === quote) quote = undefined;
      continue;
    }
    if (c === '"' || c === "'") quote = c;
    else if (c === '[' || c === '{') max = Math.max(max, ++depth);
    else if (c === ']' || c === '}') depth = Math.max(0, depth - 1);
  }
  return max;
}

/** Refuses what only YAML (not a kubeconfig) has, on the composed document too: merge keys, anchors, aliases, explicit tags. */
function refuseYAMLFeatures(doc: Document): void {
  const no = (what: string) => {
    throw new Refusal('KubeConfigYAMLFeatureNotAllowed', `uses ${what}; ${YAML_FEATURES}`);
  };
  visit(doc, {
    Map: (_k, m) => {
      const keys = new Set<string>();
      for (const p of m.items) {
        const key = isScalar(p.key) ? String(p.key.value) : undefined;
        if (key === undefined) continue;
        if (keys.has(key)) throw new Refusal('KubeConfigInvalid', 'is not valid YAML: Map keys must be unique');
        keys.add(key);
      }
    },
    Alias: (_k, n) => no(`an alias (*${n.source})`),
    Node: (_k, n) => {
      if ('anchor' in n && n.anchor) no(`an anchor (&${n.anchor})`);
      if (n.tag) no(`a tag (${n.tag})`);
    },
    Pair: (_k, p) => {
      if (isScalar(p.key) && p.key.value === '<<') no('a merge key (<<)');
      if (isAlias(p.key)) no('an alias as a key');
      if (p.key !== null && !isScalar(p.key)) no('a non-scalar key');
    },
  });
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);

function str(v: unknown, where: string, required = true): string | undefined {
  if (v === undefined || v === null) {
    if (required) throw new Refusal('KubeConfigInvalid', `${where} is missing`);
    return undefined;
  }
  if (typeof v !== 'string' || v === '') throw new Refusal('KubeConfigInvalid', `${where} must be a non-empty string`);
  return v;
}

function checkKeys(body: Obj, allowed: string[], where: string, entry: string): void {
  for (const k of Object.keys(body)) {
    if (allowed.includes(k)) continue;
    if (Object.hasOwn(FILE_KEYS, k)) throw new Refusal('KubeConfigFileReferenceNotAllowed', `${entry} reads a file (${k}) from the server's disk; use ${FILE_KEYS[k]}`);
    if (EXEC_KEYS.includes(k)) throw new Refusal('KubeConfigExecNotAllowed', `${entry} uses ${k}, which would run code in the server; use a token or a client certificate (*-data)`);
    throw new Refusal('KubeConfigFieldNotAllowed', `${where}.${k} is not allowed in a kubeconfig Secret (allowed: ${allowed.join(', ')})`);
  }
}

function entries(doc: Obj, list: string, field: string, keys: string[]): Array<{ name: string; body: Obj }> {
  const items = doc[list];
  if (items === undefined || items === null) return [];
  if (!Array.isArray(items)) throw new Refusal('KubeConfigInvalid', `"${list}" must be a list`);
  const seen = new Set<string>();
  return items.map((it, i) => {
    if (!isObj(it)) throw new Refusal('KubeConfigInvalid', `${list}[${i}] must be a mapping`);
    checkKeys(it, ['name', field], `${list}[${i}]`, `${list}[${i}]`);
    const name = str(it.name, `${list}[${i}].name`)!;
    if (seen.has(name)) throw new Refusal('KubeConfigInvalid', `${list} has two entries named "${name}"`);
    seen.add(name);
    const body = it[field] ?? {};
    if (!isObj(body)) throw new Refusal('KubeConfigInvalid', `${list}[${i}].${field} must be a mapping`);
    checkKeys(body, keys, `${list}[${i}].${field}`, `${field} "${name}"`);
    return { name, body };
  });
}

/** The whole check. Every entry is checked, not only the current context's: a later switch must not slip one in. */
export function allowlistKubeconfig(text: string): AllowlistResult {
  try {
    if (Buffer.byteLength(text, 'utf8') > MAX_KUBECONFIG_BYTES) throw new Refusal('KubeConfigInvalid', `is larger than ${MAX_KUBECONFIG_BYTES} bytes`);
    if (flowDepth(text) > MAX_FLOW_DEPTH) throw new Refusal('KubeConfigInvalid', `nests deeper than ${MAX_FLOW_DEPTH} levels`);
    // Anchors, aliases and tags are refused from the lexer's tokens (linear), before the composer
    // resolves aliases (quadratic in their number): an alias bomb costs one pass over the text.
    let tokens = 0;
    for (const token of new Lexer().lex(text)) {
      if (++tokens > MAX_KUBECONFIG_TOKENS) throw new Refusal('KubeConfigInvalid', `has more than ${MAX_KUBECONFIG_TOKENS} YAML tokens`);
      const type = CST.tokenType(token);
      if (type === 'anchor') throw new Refusal('KubeConfigYAMLFeatureNotAllowed', `uses an anchor (${token}); ${YAML_FEATURES}`);
      if (type === 'alias') throw new Refusal('KubeConfigYAMLFeatureNotAllowed', `uses an alias (${token}); ${YAML_FEATURES}`);
      if (type === 'tag') throw new Refusal('KubeConfigYAMLFeatureNotAllowed', `uses a tag (${token}); ${YAML_FEATURES}`);
    }
    let doc: Document;
    try {
      // uniqueKeys compares each key with every earlier one (quadratic): duplicates are found below, with a Set.
      doc = parseDocument(text, { merge: false, uniqueKeys: false, strict: true, prettyErrors: false, keepSourceTokens: false });
    } catch (e) {
      throw new Refusal('KubeConfigInvalid', `is not valid YAML: ${String((e as Error).message).split('\n')[0]!.slice(0, 200)}`);
    }
    // First line only: parser messages go on to quote the text, and the text holds credentials.
    if (doc.errors.length) throw new Refusal('KubeConfigInvalid', `is not valid YAML: ${doc.errors[0]!.message.split('\n')[0]!.slice(0, 200)}`);
    refuseYAMLFeatures(doc);
    const root: unknown = doc.toJS({ maxAliasCount: 0 });
    if (!isObj(root)) throw new Refusal('KubeConfigInvalid', 'is not a kubeconfig (not a mapping)');
    checkKeys(root, TOP_KEYS, 'the top level', 'the top level');
    if (root.preferences !== undefined && root.preferences !== null && !(isObj(root.preferences) && Object.keys(root.preferences).length === 0)) {
      throw new Refusal('KubeConfigFieldNotAllowed', 'preferences must be empty in a kubeconfig Secret');
    }
    const clusters = entries(root, 'clusters', 'cluster', CLUSTER_KEYS).map(({ name, body }) => {
      const skip = body['insecure-skip-tls-verify'];
      if (skip === true) throw new Refusal('KubeConfigInsecureTLSNotAllowed', `cluster "${name}" sets insecure-skip-tls-verify; give certificate-authority-data instead`);
      if (skip !== undefined && skip !== null && skip !== false) throw new Refusal('KubeConfigInvalid', `cluster "${name}": insecure-skip-tls-verify must be false when given`);
      const c: AllowedCluster = { name, server: str(body.server, `cluster "${name}" server`)! };
      const ca = str(body['certificate-authority-data'], `cluster "${name}" certificate-authority-data`, false);
      const sni = str(body['tls-server-name'], `cluster "${name}" tls-server-name`, false);
      if (ca) c.caData = ca;
      if (sni) c.tlsServerName = sni;
      return c;
    });
    const users = entries(root, 'users', 'user', USER_KEYS).map(({ name, body }) => {
      const u: AllowedUser = { name };
      const token = str(body.token, `user "${name}" token`, false);
      const cert = str(body['client-certificate-data'], `user "${name}" client-certificate-data`, false);
      const key = str(body['client-key-data'], `user "${name}" client-key-data`, false);
      if (!!cert !== !!key) throw new Refusal('KubeConfigInvalid', `user "${name}" needs both client-certificate-data and client-key-data`);
      if (token) u.token = token;
      if (cert) u.certData = cert;
      if (key) u.keyData = key;
      return u;
    });
    const contexts = entries(root, 'contexts', 'context', CONTEXT_KEYS).map(({ name, body }) => {
      const c: AllowedContext = { name, cluster: str(body.cluster, `context "${name}" cluster`)!, user: str(body.user, `context "${name}" user`)! };
      const ns = str(body.namespace, `context "${name}" namespace`, false);
      if (ns) c.namespace = ns;
      if (!clusters.some((x) => x.name === c.cluster)) throw new Refusal('KubeConfigInvalid', `context "${name}" names cluster "${c.cluster}", which is not in clusters`);
      if (!users.some((x) => x.name === c.user)) throw new Refusal('KubeConfigInvalid', `context "${name}" names user "${c.user}", which is not in users`);
      return c;
    });
    const currentContext = str(root['current-context'], 'current-context')!;
    if (!contexts.some((c) => c.name === currentContext)) throw new Refusal('KubeConfigInvalid', `current-context "${currentContext}" is not in contexts`);
    return { ok: true, kubeconfig: { clusters, users, contexts, currentContext } };
  } catch (e) {
    if (e instanceof Refusal) return { ok: false, reason: e.reason, message: e.message };
    // A parser limit (a stack overflow on pathological input) is the tenant's input, not our crash.
    return { ok: false, reason: 'KubeConfigInvalid', message: `cannot be parsed: ${String((e as Error)?.message ?? e).split('\n')[0]!.slice(0, 200)}` };
  }
}
