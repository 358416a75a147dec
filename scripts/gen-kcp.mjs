// Writes the generated kcp manifests (APIResourceSchemas, APIExport) to apiservice/kcp/.
// Run after a build: `npm run gen:kcp`. test/kcp/manifests.test.ts fails when the files drift.
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generatedKcpFiles } from '../dist/src/kcp/manifests.js';

const dir = join(dirname(fileURLToPath(import.meta.url)), '..', 'apiservice', 'kcp');
for (const [name, text] of Object.entries(generatedKcpFiles())) {
  writeFileSync(join(dir, name), text);
  console.log(`wrote apiservice/kcp/${name}`);
}

// docs/kcp.md shows generated files verbatim (checked by test/kcp/manifests.test.ts): refresh them.
const docPath = join(dir, '..', '..', 'docs', 'kcp.md');
let doc = readFileSync(docPath, 'utf8');
for (const [name, text] of Object.entries(generatedKcpFiles())) {
  const marker = `<!-- file: apiservice/kcp/${name} -->\n\`\`\`yaml\n`;
  const start = doc.indexOf(marker);
  if (start < 0) continue;
  const end = doc.indexOf('```\n', start + marker.length);
  doc = doc.slice(0, start + marker.length) + text + doc.slice(end);
}
writeFileSync(docPath, doc);
console.log('refreshed docs/kcp.md');
