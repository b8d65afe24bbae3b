// A cross-origin isolated page whose Content-Security-Policy does not allow blob: workers: the
// pthreads pool cannot start. loadFavor must reject (by loadTimeout at the latest), not hang,
// and a single-threaded load must still work afterwards.
import { loadFavor } from 'favor-attention';

const out = document.getElementById('result');
const pending = new Promise((resolve) => setTimeout(() => resolve('still pending after 20 s'), 20_000));
const t0 = performance.now();
const load = loadFavor({ threads: 2, loadTimeout: 3000 }).then(
  (favor) => `resolved with ${favor.info.threads} threads`,
  (error) => `rejected: ${error?.code ?? ''} ${error?.message ?? error}`,
);
const outcome = await Promise.race([load, pending]);
const ms = performance.now() - t0;
const one = await loadFavor({ threads: 1 });
const t = { data: new Float32Array(40 * 8).fill(0.5), dims: [40, 8] };
out.textContent = JSON.stringify({
  outcome, ms, isolated: globalThis.crossOriginIsolated, single: [one.info.threads, one.exactAttention(t, t, t).data[0]],
});
out.dataset.status = 'ok';
