// The analyzer's published contract: the package export `reverser-apiserver/analyzer` is the
// library the server runs (same functions, typed), its report validates against the schema, and the
// schema cannot change without a SCHEMA_VERSION bump: the fingerprint below is the schema's hash for
// that version. A change to the schema (a field, a reason code) fails here until SCHEMA_VERSION is
// bumped and the new fingerprint recorded beside it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import AjvModule from 'ajv';
// ajv is CommonJS: its class is the default export's default under NodeNext (as src/api/validation.ts).
const Ajv = (AjvModule as unknown as { default: typeof AjvModule }).default ?? AjvModule;
import { ScanReportSchema } from '../../src/analyzer/schema.js';
import * as lib from '../../src/public/analyzer.js';
import { FIXTURE } from './fixture.js';

const FINGERPRINTS: Record<string, string> = {
  'analyzer.configbutler.ai/v1': '8923d5e3bdd45ee4f3a838e19de30547cfa686a159d6f3670f753ef25a333ffe',
};

test('the report schema matches the fingerprint recorded for SCHEMA_VERSION', () => {
  const hash = createHash('sha256').update(JSON.stringify(ScanReportSchema)).digest('hex');
  assert.equal(
    hash,
    FINGERPRINTS[lib.SCHEMA_VERSION],
    `the analyzer's report schema changed (src/analyzer/schema.ts): bump SCHEMA_VERSION in src/analyzer/types.ts and record ${hash} for it here`,
  );
  // Every reason code is in the schema's enumeration, and nothing else is.
  const reasons = (ScanReportSchema as any).properties.folders.items.properties.findings.items.properties.reason.anyOf.map((x: { const: string }) => x.const);
  assert.deepEqual(reasons, [...lib.REASONS]);
});

test('reports validate against the schema (a malformed one does not)', async () => {
  const validate = new (Ajv as any)({ strict: false }).compile(ScanReportSchema) as ((v: unknown) => boolean) & { errors?: unknown };
  const report = await lib.scanFiles(Object.entries(FIXTURE).map(([path, content]) => ({ path, content })), { scope: 'repository' });
  assert.ok(validate(report), JSON.stringify(validate.errors));
  assert.equal(validate({ ...report, folders: [{ path: '.', acceptable: false, findings: [{ reason: 'Unheard', message: 'x', permanent: true }] }] }), false);
});

test('the package export reverser-apiserver/analyzer is this library, with type declarations', async () => {
  const pkg = JSON.parse(readFileSync(join(process.cwd(), 'package.json'), 'utf8')) as { exports: Record<string, { types: string; default: string }> };
  const entry = pkg.exports['./analyzer'];
  assert.ok(existsSync(join(process.cwd(), entry.types)), `${entry.types} is built`);
  const dts = readFileSync(join(process.cwd(), entry.types), 'utf8');
  for (const name of ['scanFolder', 'scanRepository', 'scanFiles']) assert.match(dts, new RegExp(`export declare function ${name}\\(`));
  assert.match(dts, /SCHEMA_VERSION/);
  // Self-reference by package name, as a dependent project imports it.
  const published = (await import('reverser-apiserver/analyzer' as string)) as typeof lib;
  assert.equal(published.SCHEMA_VERSION, lib.SCHEMA_VERSION);
  const a = await published.scanFiles([{ path: 'x/cm.yaml', content: FIXTURE['dup/one.yaml'] }], { path: 'x' });
  assert.deepEqual(a, await lib.scanFiles([{ path: 'x/cm.yaml', content: FIXTURE['dup/one.yaml'] }], { path: 'x' }));
});
