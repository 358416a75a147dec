// The docs name files that exist: every `src/...`, `test/...`, `scripts/...`, `bench/...` path
// quoted in README.md and docs/*.md is in the repository.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = fileURLToPath(new URL('../../../', import.meta.url));

test('every repository path quoted in README.md and docs/*.md exists', () => {
  const docs = ['README.md', ...readdirSync(join(REPO, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
  const missing: string[] = [];
  for (const doc of docs) {
    const text = readFileSync(join(REPO, doc), 'utf8');
    for (const m of text.matchAll(/`((?:src|test|scripts|bench|apiservice|charts|certs|docs)\/[A-Za-z0-9_./-]*)`/g)) {
      const path = m[1]!.replace(/\/$/, '');
      if (path.includes('*') || path.includes('<')) continue;
      if (!existsSync(join(REPO, path))) missing.push(`${doc}: ${path}`);
    }
  }
  assert.deepEqual(missing, []);
});
