// The APIService re-check's period (src/registration/options.ts DEFAULT_DISCOVERY_REFRESH): five
// minutes unless --discovery-refresh-interval says otherwise. Every re-check is a discovery GET to
// the hosting cluster, usually over a new TLS connection; at 30 s it was the costliest thing a
// server at rest did (docs/architecture.md "At rest and at start-up"). Parsed as `serve` parses it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseServeFlags } from '../../src/cli/options.js';

const hosting = ['--kubeconfig', '/nonexistent/kubeconfig'];

test('--discovery-refresh-interval: 5m by default; 1s..24h accepted; anything else refused naming the flag', () => {
  assert.equal(parseServeFlags(hosting).registration.refreshMs, 300_000);
  assert.equal(parseServeFlags([...hosting, '--discovery-refresh-interval=30s']).registration.refreshMs, 30_000);
  assert.equal(parseServeFlags([...hosting, '--discovery-refresh-interval=24h']).registration.refreshMs, 86_400_000);
  for (const bad of ['500ms', '25h', 'soon'])
    assert.throws(() => parseServeFlags([...hosting, `--discovery-refresh-interval=${bad}`]), (e: Error) => e.message.includes('--discovery-refresh-interval: must be a duration between 1s and 24h'), bad);
});
