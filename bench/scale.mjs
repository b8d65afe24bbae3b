#!/usr/bin/env node
// Scale test: FAVOR+ (positive, m = 256) bidirectional and causal at L = 1,048,576, d = 64 in
// Node through the public API of the wasm build, in a fresh process. Prints one JSON line:
// per run the time, whether the output is finite, and the wasm heap size after the call.
//   node bench/scale.mjs [--L 1048576]
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';

import { createApi } from '../web/api.js';
import { gaussian } from './lib/inputs.mjs';

const { values: args } = parseArgs({ options: { L: { type: 'string', default: '1048576' } } });
const L = Number(args.L), d = 64, m = 256;
const MiB = 2 ** 20;

// The same loading as web/node.js (SIMD build), keeping the Module to read the heap size.
const { default: createModule } = await import('../dist/favor-simd.js');
const wasmBinary = await readFile(new URL('../dist/favor-simd.wasm', import.meta.url));
const Module = await createModule({ wasmBinary });
const favor = createApi(Module, { simd: true });
const heap = () => Module.HEAPU8.length;

const result = { L, d, m, heapBeforeBytes: heap(), runs: [] };
const featureMap = favor.createFeatureMap({ dim: d, features: m, kernel: 'positive', sampling: 'orthogonal', seed: 42 });
const t0 = performance.now();
const q = { data: gaussian(L * d, 11, 0.5), dims: [L, d] };
const k = { data: gaussian(L * d, 12, 0.5), dims: [L, d] };
const v = { data: gaussian(L * d, 13, 0.5), dims: [L, d] };
result.inputMs = performance.now() - t0;
result.inputBytes = 3 * L * d * 4;
for (const causal of [false, true]) {
  const run = { causal };
  try {
    const t = performance.now();
    const out = favor.favorAttention(q, k, v, { featureMap, causal });
    run.ms = performance.now() - t;
    let finite = true;
    for (let i = 0; i < out.data.length; ++i) if (!Number.isFinite(out.data[i])) { finite = false; break; }
    run.finite = finite;
    run.dims = out.dims;
  } catch (e) {
    run.error = `${e.name}: ${e.message}`;
  }
  run.heapAfterBytes = heap();
  run.rssAfterMiB = Math.round(process.memoryUsage().rss / MiB);
  result.runs.push(run);
}
featureMap.dispose();
console.log(JSON.stringify(result));
