// ruvector-attention-wasm (npm; Rust compiled with wasm-bindgen), as a user comparing npm packages
// would call it. Its attention classes take one query at a time:
//   compute(query: Float32Array, keys, values): Float32Array
// with keys and values as JS arrays of row vectors (the glue converts them element by element on
// every call; plain number arrays and Float32Array rows are both accepted, see its .d.ts and
// serde conversion). L queries are therefore a loop of L calls over all keys, causal ones over
// keys.slice(0, i + 1). What it offers for our two kernels:
//   exact  WasmFlashAttention(dim, block_size): checked against our exact attention like any peer
//   favor  WasmLinearAttention(dim, num_features), "Linear (Performer-style)": it takes no
//          projection W (its features are its own), so it cannot compute FAVOR+ with our W; it is
//          timed, and its output error against exact attention is reported, marked as a different
//          computation.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { timed } from './methods.mjs';

const require = createRequire(import.meta.url);
const NAME = 'ruvector-attention-wasm';
const FLASH_BLOCK = 64;  // block sizes 16 ... 256 time the same here (the per-call conversion dominates)

export async function ruvector({ d, dv, m, maxCallMs }) {
  const ru = await import(NAME);
  const dir = path.dirname(require.resolve(NAME));
  ru.initSync({ module: readFileSync(path.join(dir, 'ruvector_attention_wasm_bg.wasm')) });
  const version = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')).version;
  const classes = { exact: new ru.WasmFlashAttention(d, FLASH_BLOCK), favor: new ru.WasmLinearAttention(d, m) };

  let cell = null;  // { L, q, keys, values }
  const rows = (x, n, width) => Array.from({ length: n }, (_, i) => Array.from(x.subarray(i * width, (i + 1) * width)));
  const call = (kind, causal) => {
    const { L, q, keys, values } = cell;
    const out = new Float32Array(L * dv);
    const a = classes[kind];
    for (let i = 0; i < L; ++i) {
      const query = q.subarray(i * d, (i + 1) * d);
      out.set(causal ? a.compute(query, keys.slice(0, i + 1), values.slice(0, i + 1)) : a.compute(query, keys, values), i * dv);
    }
    return out;
  };

  // Cost per (query, key) pair of each class, from a small probe (best of 3, so that a load phase
  // on a shared machine does not inflate it): its time is quadratic in L (every call converts and
  // reads all keys), so the first size is predicted too.
  const perPair = {};
  {
    const S = 256, probe = Float32Array.from({ length: S * d }, (_, i) => Math.sin(i));
    cell = { L: 8, q: probe, keys: rows(probe, S, d), values: rows(probe, S, dv) };
    for (const kind of ['exact', 'favor']) {
      call(kind, false);
      perPair[kind] = Infinity;
      for (let r = 0; r < 3; ++r) {
        const t0 = performance.now();
        call(kind, false);
        perPair[kind] = Math.min(perPair[kind], (performance.now() - t0) / (8 * S));
      }
    }
    cell = null;
  }

  return {
    id: 'ruvector',
    label: `${NAME} (wasm, one query per call)`,
    short: 'ruvector-attention-wasm',
    version,
    notes: `L calls of compute(q_i: Float32Array, keys, values) (causal: keys.slice(0, i + 1)); exact: WasmFlashAttention(${d}, block ${FLASH_BLOCK}); FAVOR+ row: WasmLinearAttention(${d}, ${m}) (no W input: not the same computation); keys and values as arrays of number arrays, built once per size (not timed)`,
    differs(kind) {
      return kind === 'favor' ? `WasmLinearAttention draws its own ${m} features and takes no projection W, so it cannot compute FAVOR+ with ours` : null;
    },
    growth() { return 2; },
    limit({ kind, causal, L }) {
      const pairs = causal ? 0.5 : 1;
      if (perPair[kind] * L * L * pairs <= maxCallMs) return null;
      const from = Math.sqrt(maxCallMs / (perPair[kind] * pairs));
      return `a loop of L calls at ~${(perPair[kind] * 1000).toFixed(1)} µs per (query, key) pair: predicted beyond the ${maxCallMs / 1000} s limit from L ≈ ${Math.round(from)}`;
    },
    async prepare(c) {
      cell = { L: c.L, q: c.q, keys: rows(c.k, c.L, c.d), values: rows(c.v, c.L, c.dv) };
    },
    async output(kind, causal) { return call(kind, causal); },
    time: timed(call),
    async release() { cell = null; },
    close() { for (const a of Object.values(classes)) a.free(); },
  };
}
