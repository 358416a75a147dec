// A load generator in its own process (so its timing is not disturbed by the server's event
// loop): GETs one path at a fixed concurrency for a fixed time and prints, as JSON, each
// request's start time (epoch ms) and latency.
import { readFileSync } from 'node:fs';
import { agentFor, runLoad, type Target } from '../common/load.js';

const [host, port, certDir, path, durationMs, concurrency] = process.argv.slice(2);
const tls = { ca: readFileSync(`${certDir}/ca.crt`, 'utf8'), cert: readFileSync(`${certDir}/admin.crt`, 'utf8'), key: readFileSync(`${certDir}/admin.key`, 'utf8') };
const target: Target = { host: host!, port: Number(port), tls };
const agent = agentFor(target, Number(concurrency));
const starts: number[] = [];
const origin = performance.timeOrigin;
const r = await runLoad(target, agent, {
  durationMs: Number(durationMs),
  concurrency: Number(concurrency),
  expect: 200,
  next: () => {
    starts.push(origin + performance.now());
    return { method: 'GET', path: path! };
  },
});
agent.destroy();
process.stdout.write(JSON.stringify({ starts, lat: r.lat, errors: r.errors, firstError: r.firstError }));
