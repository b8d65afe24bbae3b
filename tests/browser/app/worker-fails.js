// loadFavor({ worker: true }) where the worker cannot start (a Content-Security-Policy that
// forbids it, or its script missing from the deployment): loadFavor must reject with an error
// that says what to do, not hang, and the synchronous API must still work. Writes JSON into #result.
import { loadFavor } from 'favor-attention';

import { report } from './report.js';

async function run() {
  const t0 = performance.now();
  const pending = new Promise((resolve) => setTimeout(() => resolve('still pending after 20 s'), 20_000));
  const outcome = await Promise.race([loadFavor({ worker: true }).then(
    (favor) => `resolved (threads: ${favor.info.threads})`,
    (error) => `rejected: ${error?.name}: ${error?.message ?? error}`,
  ), pending]);
  const ms = performance.now() - t0;
  const sync = await loadFavor({ threads: 1 });
  const t = { data: new Float32Array(40 * 8).fill(0.5), dims: [40, 8] };
  return { outcome, ms, single: sync.exactAttention(t, t, t).data[0] };
}

report(run());
