// The gate's rules for one file, from its name and text alone: what objects it holds and what
// keeps the writer from owning it. Pure and synchronous, so the git engine's folder index
// (src/git/folder-index.ts) runs exactly these rules on every file it reads, and the analyzer's
// scans (src/analyzer/scan.ts) run them on whole repositories.
import { isAlias, isMap, isScalar, parseAllDocuments, visit, Scalar, type Document } from 'yaml';
import { readPlainManifest, type DocumentOutcome } from './plain-yaml.js';
import type { Finding, ObjectIdentity } from './types.js';

export const MANIFEST_FILE = /\.ya?ml$/i;

/**
 * Files a folder of manifests may hold besides objects: documentation, Git metadata, and the
 * context files tools keep beside manifests (kustomization, SOPS rules). They are kept, never
 * parsed as objects and never written.
 */
const CONTEXT_FILE = /^(?:readme(?:\..*)?|license(?:\..*)?|licence(?:\..*)?|notice(?:\..*)?|changelog(?:\..*)?|owners(?:_aliases)?|codeowners|.*\.md|.*\.txt|\.gitignore|\.gitattributes|\.gitkeep|\.keep|\.gittargetignore|\.sops\.ya?ml|kustomization\.ya?ml|kustomization)$/i;

/** A finding about one file, without `file` (the caller knows the path; analyses are cached by content). */
export type FileFinding = Omit<Finding, 'file'>;

export interface FileAnalysis {
  objects: ObjectIdentity[];
  findings: FileFinding[];
}

function baseName(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}

/** True for files the gate accepts without reading: documentation and context files. */
export function isContextFile(path: string): boolean {
  return CONTEXT_FILE.test(baseName(path));
}

/** True when the file must be read (a manifest candidate); false for context files and other content. */
export function needsReading(path: string): boolean {
  return MANIFEST_FILE.test(path) && !isContextFile(path);
}

/** The finding for a file that is neither a manifest nor a context file, or undefined. */
export function nonYamlFinding(path: string): FileFinding | undefined {
  if (MANIFEST_FILE.test(path) || isContextFile(path)) return undefined;
  return { reason: 'NonYAMLContent', message: 'not a YAML file: a GitTarget folder holds manifests (.yaml, .yml) and documentation only', permanent: true };
}

function identityOf(v: unknown): ObjectIdentity | undefined {
  if (!v || typeof v !== 'object' || Array.isArray(v)) return undefined;
  const o = v as Record<string, unknown>;
  const meta = o.metadata as Record<string, unknown> | undefined;
  if (typeof o.apiVersion !== 'string' || !o.apiVersion || typeof o.kind !== 'string' || !o.kind) return undefined;
  if (!meta || typeof meta !== 'object' || typeof meta.name !== 'string' || !meta.name) return undefined;
  const ns = typeof meta.namespace === 'string' && meta.namespace ? meta.namespace : undefined;
  return ns ? { apiVersion: o.apiVersion, kind: o.kind, namespace: ns, name: meta.name } : { apiVersion: o.apiVersion, kind: o.kind, name: meta.name };
}

function groupOf(apiVersion: string): string {
  const slash = apiVersion.indexOf('/');
  return slash < 0 ? '' : apiVersion.slice(0, slash);
}

const TEMPLATE = /\{\{|\{%/;
const TEMPLATE_G = /\{\{|\{%/g;

/** Anchors, aliases or merge keys anywhere in the document; collects the ranges of quoted and block scalars. */
function aliasesIn(doc: Document.Parsed, quoted: Array<[number, number]>): boolean {
  let found = false;
  visit(doc, {
    Alias() {
      found = true;
    },
    Pair(_, pair) {
      if (isScalar(pair.key) && pair.key.value === '<<' && pair.key.type === Scalar.PLAIN) found = true;
    },
    Node(_, node) {
      if ((node as { anchor?: string }).anchor) found = true;
      if (isScalar(node) && node.type !== Scalar.PLAIN && node.range) quoted.push([node.range[0], node.range[1]]);
    },
  });
  return found;
}

/**
 * Template expressions outside quoted and block scalars: `name: {{ .Values.x }}` parses as YAML
 * (a flow map inside a flow map) but is an input to a renderer; the same text inside a quoted or
 * block scalar is data (an alerting rule's template, say) and is kept.
 */
function templatedOutsideScalars(text: string, quoted: Array<[number, number]>): boolean {
  if (!TEMPLATE.test(text)) return false;
  for (const m of text.matchAll(TEMPLATE_G)) {
    const at = m.index ?? 0;
    if (!quoted.some(([s, e]) => at >= s && at < e)) return true;
  }
  return false;
}

/** Not a template, not a Helm chart: documents the writer could hold, judged as objects. */
function judgeDocuments(docs: readonly DocumentOutcome[], aliases: boolean): FileAnalysis {
  const findings: FileAnalysis['findings'] = [];
  const objects: ObjectIdentity[] = [];
  docs.forEach((d, i) => {
    if (d === 'empty') return;
    if (d !== 'notAnObject') {
      objects.push(d);
      return;
    }
    const which = docs.length > 1 ? `document ${i + 1} is` : 'is';
    findings.push({ reason: 'NotAnObject', message: `${which} not a Kubernetes object: it needs apiVersion, kind and metadata.name`, permanent: true });
  });
  if (aliases) findings.push(ALIASES);
  const owners = new Set(objects.map((o) => `${o.namespace ?? ''}|${groupOf(o.apiVersion)}|${o.kind}`));
  if (owners.size > 1) {
    const list = [...owners].map((o) => {
      const [ns, group, kind] = o.split('|');
      return `${kind}${group ? '.' + group : ''} in ${ns ? `namespace ${ns}` : 'the cluster scope'}`;
    });
    findings.push({ reason: 'MultiOwnerFile', message: `mixes objects of several owners (${list.join(', ')}): keep one kind and namespace per file`, permanent: true });
  }
  return { objects, findings };
}

const ALIASES: FileFinding = { reason: 'AnchorsOrAliases', message: 'uses YAML anchors, aliases or merge keys (<<): rewriting it would expand them', permanent: true };

/**
 * The rules for one manifest file (`path` matters only for its name: Chart.yaml). A file that does
 * not parse holds no objects (the writer never edits it); its finding says whether it looks like a
 * template or is simply broken. Most manifests are read by the plain reader (plain-yaml.ts); it
 * answers only when it is certain, and the full `yaml` parser reads the rest.
 */
export function analyzeManifest(path: string, text: string): FileAnalysis {
  if (baseName(path) === 'Chart.yaml') return chartFile();
  const plain = readPlainManifest(text);
  return plain ? judgeDocuments(plain, false) : analyzeParsed(text);
}

/** The same rules through the full `yaml` parser only (exported for the differential test). */
export function analyzeManifestFully(path: string, text: string): FileAnalysis {
  return baseName(path) === 'Chart.yaml' ? chartFile() : analyzeParsed(text);
}

function chartFile(): FileAnalysis {
  return { objects: [], findings: [{ reason: 'Templated', message: 'makes its folder a Helm chart: its manifests are rendered by helm, not objects', permanent: true }] };
}

function analyzeParsed(text: string): FileAnalysis {
  const docs = parseAllDocuments(text, { prettyErrors: false, logLevel: 'error' });
  const list = Array.isArray(docs) ? docs : [];
  const broken = list.find((d) => d.errors.length > 0);
  if (broken) {
    if (TEMPLATE.test(text)) return { objects: [], findings: [{ reason: 'Templated', message: 'holds template expressions ({{ ... }}) and does not parse as YAML', permanent: true }] };
    return { objects: [], findings: [{ reason: 'InvalidYAML', message: `does not parse as YAML: ${broken.errors[0].message.split('\n')[0]}`, permanent: true }] };
  }
  const quoted: Array<[number, number]> = [];
  let aliases = false;
  for (const d of list) aliases = aliasesIn(d, quoted) || aliases;
  if (templatedOutsideScalars(text, quoted)) {
    // A template holds no objects the writer could edit, and its documents are not judged as objects: the template is the finding.
    const findings: FileFinding[] = [{ reason: 'Templated', message: 'holds template expressions ({{ ... }}) outside quoted values: an input to a renderer, not objects', permanent: true }];
    if (aliases) findings.push(ALIASES);
    return { objects: [], findings };
  }
  const outcomes: DocumentOutcome[] = list.map((d) => {
    if (d.contents === null || (isScalar(d.contents) && d.contents.value === null)) return 'empty';
    let js: unknown;
    try {
      js = isMap(d.contents) && !isAlias(d.contents) ? d.toJS() : undefined;
    } catch {
      js = undefined; // an alias bomb or a cycle: no object the writer could hold
    }
    return identityOf(js) ?? 'notAnObject';
  });
  return judgeDocuments(outcomes, aliases);
}
