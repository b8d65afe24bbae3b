// loadFavor({ worker: true }) where the worker cannot start (a Content-Security-Policy that
// forbids it, or its script missing from the deployment) or cannot load its module (this
// script's URL has ?missing-wasm: a wasmUrl that answers 404): loadFavor must reject with an
// error that says what failed, not hang, and the synchronous API must still work. Writes JSON
// into #result.
import { loadFavor } from 'favor-attention';

import { report } from './report.js';

async function run() {
  const t0 = performance.now();
  const pending = new Promise((resolve) => setTimeout(() => resolve('still pending after 20 s'), 20_000));
  const options = new URL(import.meta.url).searchParams.has('missing-wasm')
    ? { worker: true, wasmUrl: new URL('./does-not-exist.wasm', import.meta.url) } : { worker: true };
  const outcome = await Promise.race([loadFavor(options).then(
    (favor) => `resolved (threads: ${favor.info.threads})`,
    (error) => `rejected: ${error?.name}: ${error?.message ?? error}`,
  ), pending]);
  const ms = performance.now() - t0;
  const sync = await loadFavor({ threads: 1 });
  const t = { data: new Float32Array(40 * 8).fill(0.5), dims: [40, 8] };
  return { outcome, ms, single: sync.exactAttention(t, t, t).data[0] };
}

report(run());
