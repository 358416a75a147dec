// Writes the generated kcp manifests (APIResourceSchemas, APIExport) to apiservice/kcp/.
// Run after a build: `npm run gen:kcp`. test/kcp/manifests.test.ts fails when the files drift.
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generatedKcpFiles } from '../dist/src/kcp/manifests.js';

const dir = join(dirname(fileURLToPath(import.meta.url)), '..', 'apiservice', 'kcp');
for (const [name, text] of Object.entries(generatedKcpFiles())) {
  writeFileSync(join(dir, name), text);
  console.log(`wrote apiservice/kcp/${name}`);
}
