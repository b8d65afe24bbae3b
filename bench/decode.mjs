#!/usr/bin/env node
// Generation and grouped-query heads, side by side in one run (issue 14's targets), 1 thread, wasm:
//  - decode: one position per append, 8 heads, d = dv = 64, FAVOR+ m = 256 (positive,
//    orthogonal), at contexts 1k, 16k and 128k: tokens per second of the FAVOR+ state and of the
//    exact state (a KV cache), and both state sizes. Filling an exact cache of 128k positions
//    through append is an O(C^2) causal prefill (~9 TFLOP, minutes here): exact decode is
//    measured at 1k and 16k and its per-token time, linear in the context, extrapolated to 128k
//    (marked as predicted in the report).
//  - grouped-query heads: favorAttention with Hq = 8, Hkv = 2 (Hq / Hkv = 4) against the same call
//    on K and V repeated by hand, L = 4096, bidirectional and causal.
// Writes its section into BENCHMARKS.md (between <!-- decode --> markers) or --out FILE, and
// bench/decode-results.json.
//
//   node bench/decode.mjs [--quick] [--out FILE.md]
import { readFileSync, writeFileSync, existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import { loadFavor } from 'favor-attention';

import { gaussian, median } from './lib/inputs.mjs';

const repo = fileURLToPath(new URL('..', import.meta.url));
const { values: args } = parseArgs({ options: { quick: { type: 'boolean', default: false }, out: { type: 'string' } } });
const H = 8, d = 64, m = 256, sigma = 0.5;
const contexts = args.quick ? [1024, 16384] : [1024, 16384, 131072];
const steps = args.quick ? 100 : 400;

const favor = await loadFavor({ threads: 1 });
const tensor = (dims, seed) => ({ data: gaussian(dims.reduce((a, b) => a * b, 1), seed, sigma), dims });
const now = () => performance.now();

// Tokens per second of `steps` appends of one position (median of 3 rounds of steps / 3).
function decodeRate(state, seed) {
  const inputs = Array.from({ length: 16 }, (_, i) => tensor([H, 1, d], seed + i));
  const rounds = [];
  for (let r = 0; r < 3; r++) {
    const t0 = now();
    const n = Math.ceil(steps / 3);
    for (let s = 0; s < n; s++) {
      const x = inputs[s % inputs.length];
      state.append(x, x, x);
    }
    rounds.push(n / ((now() - t0) / 1000));
  }
  return median(rounds);
}

// Fills a state with C positions in appends of at most 4096.
function prefill(state, C, seed) {
  const t0 = now();
  for (let a = 0; a < C; a += 4096) {
    const n = Math.min(4096, C - a);
    const x = tensor([H, n, d], seed + a);
    state.append(x, x, x);
  }
  return now() - t0;
}

const fm = favor.createFeatureMap({ dim: d, features: m, seed: 42 });
// Warm-up (the JIT, the wasm heap's growth, first allocations): not measured.
for (const options of [{ method: 'favor', featureMap: fm }, { method: 'exact' }]) {
  const warm = favor.createCausalState(options);
  prefill(warm, 2048, 5);
  decodeRate(warm, 50);
  warm.dispose();
}
const rows = [];
for (const C of contexts) {
  const row = { context: C };
  const fs = favor.createCausalState({ method: 'favor', featureMap: fm });
  row.favorPrefillMs = prefill(fs, C, 1);
  row.favorTokensPerSecond = decodeRate(fs, 100);
  row.favorStateBytes = fs.stateBytes;
  fs.dispose();
  row.exactStateBytesEstimate = H * C * 2 * d * 4;
  if (C <= 16384) {
    const es = favor.createCausalState({ method: 'exact' });
    row.exactPrefillMs = prefill(es, C, 1);
    row.exactTokensPerSecond = decodeRate(es, 100);
    row.exactStateBytes = es.stateBytes;
    es.dispose();
  }
  rows.push(row);
  console.error(JSON.stringify(row));
}

// Grouped-query heads: Hq = 8 over Hkv = 2, against K and V repeated by hand.
const L = 4096, hq = 8, hkv = 2, g = hq / hkv;
const q = tensor([hq, L, d], 7), k = tensor([hkv, L, d], 8), v = tensor([hkv, L, d], 9);
const repeat = (t) => {
  const block = L * d, data = new Float32Array(t.data.length * g);
  for (let h = 0; h < hkv; h++) for (let r = 0; r < g; r++) data.set(t.data.subarray(h * block, (h + 1) * block), (h * g + r) * block);
  return { data, dims: [hq, L, d] };
};
const kr = repeat(k), vr = repeat(v);
const gqa = [];
for (const causal of [false, true]) {
  const grouped = [], repeated = [];
  for (let r = 0; r < (args.quick ? 3 : 7); r++) {  // alternating, so that a slow phase hits both
    let t0 = now();
    favor.favorAttention(q, k, v, { featureMap: fm, causal });
    grouped.push(now() - t0);
    t0 = now();
    favor.favorAttention(q, kr, vr, { featureMap: fm, causal });
    repeated.push(now() - t0);
  }
  const a = favor.favorAttention(q, k, v, { featureMap: fm, causal }).data, b = favor.favorAttention(q, kr, vr, { featureMap: fm, causal }).data;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff = Math.max(diff, Math.abs(a[i] - b[i]));
  gqa.push({ causal, groupedMs: median(grouped), repeatedMs: median(repeated), speedup: median(repeated) / median(grouped), maxAbsDiff: diff });
  console.error(JSON.stringify(gqa.at(-1)));
}

const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
const fmt = (x, digits = 0) => x.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
const mib = (b) => `${fmt(b / 2 ** 20, 2)} MiB`;
const flat = rows.map((r) => r.favorTokensPerSecond);
const flatness = Math.min(...flat) / Math.max(...flat);
// exact's per-token time grows linearly with C (a + b C, fitted on the measured contexts); FAVOR+'s is flat
const measured = rows.filter((r) => r.exactTokensPerSecond);
const [e0, e1] = [measured[0], measured[measured.length - 1]];
const slope = (1 / e1.exactTokensPerSecond - 1 / e0.exactTokensPerSecond) / (e1.context - e0.context);
const intercept = 1 / e0.exactTokensPerSecond - slope * e0.context;
for (const r of rows) if (!r.exactTokensPerSecond) r.exactPredictedTokensPerSecond = 1 / (intercept + slope * r.context);
const crossover = slope > 0 ? Math.max(0, (1 / median(flat) - intercept) / slope) : Infinity;
const md = [];
md.push('<!-- decode -->');
md.push('## Generation and grouped-query heads (issue 14)');
md.push('');
md.push(`\`node bench/decode.mjs\`${args.quick ? ' --quick' : ''}, ${new Date().toISOString().slice(0, 10)}, ${cpu}, Node ${process.version}, wasm SIMD, 1 thread. ` +
  `Decode: one position per append, ${H} heads, d = dv = ${d}, FAVOR+ positive orthogonal m = ${m}; inputs N(0, ${sigma}²).`);
md.push('');
md.push('| context | FAVOR+ state: tokens/s | its bytes | exact state (KV cache): tokens/s | its bytes | FAVOR+ / exact |');
md.push('|---|---|---|---|---|---|');
for (const r of rows) {
  const exact = r.exactTokensPerSecond ?? r.exactPredictedTokensPerSecond;
  md.push(`| ${fmt(r.context)} | ${fmt(r.favorTokensPerSecond)} | ${mib(r.favorStateBytes)} | ${fmt(exact)}${r.exactTokensPerSecond ? '' : ' (predicted: linear fit)'} | ${mib(r.exactStateBytes ?? r.exactStateBytesEstimate)}${r.exactStateBytes ? '' : ' (keys and values alone)'} | ${fmt(r.favorTokensPerSecond / exact, 1)}× |`);
}
md.push('');
md.push(`- FAVOR+ decode across contexts: slowest / fastest = ${fmt(flatness, 2)} (flat within noise if ≥ ~0.8); target ≥ 5,000 tokens/s at every context: **${Math.min(...flat) >= 5000 ? 'PASS' : 'FAIL'}** (slowest ${fmt(Math.min(...flat))}).`);
md.push(`- Exact decode falls linearly with the context (${measured.map((r) => `${fmt(r.exactTokensPerSecond)} at ${fmt(r.context)}`).join(', ')} tokens/s, measured); the FAVOR+ state is faster from a context of about ${Number.isFinite(crossover) ? fmt(Math.round(crossover / 64) * 64) : '∞'} positions (the linear fit of exact's per-token time against FAVOR+'s median). Prefill of the measured contexts: FAVOR+ ${measured.map((r) => `${fmt(r.favorPrefillMs)} ms`).join(', ')}; exact ${measured.map((r) => `${fmt(r.exactPrefillMs)} ms`).join(', ')}.`);
md.push(`- The FAVOR+ state holds ${mib(rows[0].favorStateBytes)} at every context (M × dv + 2M floats per head, twice: the state and the buffer the next append writes, so that a failed append leaves the state as it was; plus its copy of W); the exact cache grows by (d + dv) floats per position and head (${mib(H * 2 * d * 4 * 1024)} per 1k positions here, its buffers grow by doubling). Exact decode runs the exact kernel with one query per strip of 8 (its tile), so it is not at that kernel's speed; it is also bound by reading the cache (128 MiB per token at 16k).`);
md.push('');
md.push(`Grouped-query heads, favorAttention, Hq = ${hq}, Hkv = ${hkv}, L = ${L}, d = ${d}, m = ${m} (medians of alternating calls; the repetition itself not timed):`);
md.push('');
md.push('| | grouped (K, V once per key/value head) | K and V repeated by hand | speed-up | max abs difference |');
md.push('|---|---|---|---|---|');
for (const r of gqa) md.push(`| ${r.causal ? 'causal' : 'bidirectional'} | ${fmt(r.groupedMs, 1)} ms | ${fmt(r.repeatedMs, 1)} ms | ${fmt(r.speedup, 2)}× | ${r.maxAbsDiff.toExponential(1)} |`);
md.push('');
md.push(`Target ≥ 1.4× (bidirectional): **${gqa[0].speedup >= 1.4 ? 'PASS' : 'FAIL'}**.`);
md.push('<!-- /decode -->');
const section = md.join('\n');

const outFile = args.out ?? `${repo}BENCHMARKS.md`;
const old = existsSync(outFile) ? readFileSync(outFile, 'utf8') : '';
const marked = /<!-- decode -->[\s\S]*<!-- \/decode -->/;
writeFileSync(outFile, marked.test(old) ? old.replace(marked, section) : `${old.trimEnd()}\n\n${section}\n`);
if (path.resolve(outFile) === path.resolve(`${repo}BENCHMARKS.md`)) writeFileSync(`${repo}bench/decode-results.json`, `${JSON.stringify({ cpu, node: process.version, rows, gqa }, null, 1)}\n`);
console.log(section);
fm.dispose();
