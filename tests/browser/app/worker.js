// loadFavor({ worker: true }) in a page: the same results as the synchronous API, and animation
// frames keep coming during a ~2 s call through the worker, while a synchronous call of the
// same size freezes the page. Writes JSON into #result.
import { loadFavor } from 'favor-attention';

import { report } from './report.js';

const gaussian = (n, seed) => {
  let a = seed >>> 0;
  const u = () => { a = (a + 0x6d2b79f5) >>> 0; let t = Math.imul(a ^ (a >>> 15), a | 1); t ^= t + Math.imul(t ^ (t >>> 7), t | 61); return (((t ^ (t >>> 14)) >>> 0) + 0.5) / 4294967296; };
  return Float32Array.from({ length: n }, () => 0.5 * Math.sqrt(-2 * Math.log(u())) * Math.cos(2 * Math.PI * u()));
};
const tensor = (L, d, seed) => ({ data: gaussian(L * d, seed), dims: [L, d] });

// Animation frames per second while `call` runs (started from a frame, as a page would).
async function framesDuring(call) {
  let frames = 0, counting = true;
  const tick = () => { if (counting) { frames++; requestAnimationFrame(tick); } };
  await new Promise((r) => requestAnimationFrame(r));
  requestAnimationFrame(tick);
  const t0 = performance.now();
  await call();
  const ms = performance.now() - t0;
  await new Promise((r) => setTimeout(r, 0));
  counting = false;
  return { fps: (1000 * frames) / ms, ms };
}

async function run() {
  const sync = await loadFavor({ threads: 1 });
  const worker = await loadFavor({ worker: true, threads: 1 });
  const d = 64;
  // Same results.
  const q = tensor(300, d, 1), k = tensor(300, d, 2);
  const a = sync.exactAttention(q, k, k, { causal: true }).data, b = (await worker.exactAttention(q, k, k, { causal: true })).data;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff = Math.max(diff, Math.abs(a[i] - b[i]));
  // A call of ~2 s: exact attention's time grows like L^2, calibrated at L = 2048 (the fastest of
  // three calls: the first may run before the engine's optimizing tier and take several times longer).
  const small = tensor(2048, d, 3);
  let perCall = Infinity;
  for (let i = 0; i < 3; i++) {
    const t0 = performance.now();
    sync.exactAttention(small, small, small);
    perCall = Math.min(perCall, performance.now() - t0);
  }
  let L = Math.min(32768, Math.round(2048 * Math.sqrt(2000 / Math.max(perCall, 1))));
  let big = tensor(L, d, 4);
  let throughWorker = await framesDuring(() => worker.exactAttention(big, big, big));
  // A busy host can slow the calibration more than the call (seen once in CI: 0.97 s at the L
  // calibrated for 2 s): then lengthen the call from its own time, twice at most.
  for (let again = 0; again < 2 && throughWorker.ms < 1500 && L < 32768; again++) {
    L = Math.min(32768, Math.round(L * Math.sqrt(2000 / Math.max(throughWorker.ms, 1))));
    big = tensor(L, d, 4);
    throughWorker = await framesDuring(() => worker.exactAttention(big, big, big));
  }
  const synchronous = await framesDuring(async () => sync.exactAttention(big, big, big));
  worker.dispose();
  return { maxAbsDiff: diff, L, throughWorker, synchronous, info: worker.info };
}

report(run());
