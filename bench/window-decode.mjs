#!/usr/bin/env node
// Sliding windows in generation, side by side in one run, 1 thread: decode steps (one position per
// append, 8 heads, d = dv = 64) of an exact state with `window: w` (a key/value cache kept at w)
// and of a FAVOR+ state with `window: w` (m = 256, positive, orthogonal, blocks of w/4: per head a
// state of the window's keys and one of each block after its oldest), for w = 256 to 4,096, and of
// the FAVOR+ state without a window. Each state is first filled past its window (a prefill of 2w positions and a block more), and its
// next step is checked: the exact state's against a float64 evaluation of the step over its w
// keys, the FAVOR+ window's against one favorAttention call of the step's query over the keys its
// window holds (relative Frobenius ≤ 1e-3). Then bursts of 200 steps, every state in each round
// in turn, 7 rounds; tokens per second: the median over rounds. Writes its section into
// BENCHMARKS.md (between <!-- window --> markers) or --out FILE.
//
//   node bench/window-decode.mjs [--quick] [--out FILE.md] [--windows 256,1024,4096]
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import { loadFavor } from 'favor-attention';

import { thisCpuName } from './lib/cpu-history.mjs';
import { difference, gaussian, median, softmaxRow } from './lib/inputs.mjs';
import { writeSection } from './lib/sections.mjs';

const repo = fileURLToPath(new URL('..', import.meta.url));
const { values: args } = parseArgs({ options: { quick: { type: 'boolean', default: false }, out: { type: 'string' }, windows: { type: 'string' } } });
const windows = (args.windows ?? (args.quick ? '256,1024' : '256,1024,4096')).split(',').map(Number);
const H = 8, d = 64, m = 256, sigma = 0.5, steps = 200, rounds = args.quick ? 3 : 7, tolerance = 1e-3;

const favor = await loadFavor({ threads: 1 });
const fm = favor.createFeatureMap({ dim: d, features: m, seed: 42 });
const tensor = (n, seed) => ({ data: gaussian(H * n * d, seed, sigma), dims: [H, n, d] });
// Rows [a, b) of every head of [H, n, d].
const rows = (t, a, b) => {
  const n = t.dims[1], data = new Float32Array(H * (b - a) * d);
  for (let h = 0; h < H; h++) data.set(t.data.subarray((h * n + a) * d, (h * n + b) * d), h * (b - a) * d);
  return { data, dims: [H, b - a, d] };
};

// softmax(q k^T / sqrt(d)) v of one step's query over keys [a, b), in float64.
function exactStep(q, k, v, a, b) {
  const out = new Float32Array(H * d), n = k.dims[1];
  const row = (t, h, j) => t.data.subarray((h * n + j) * d, (h * n + j + 1) * d);
  for (let h = 0; h < H; h++) {
    const keys = [], values = [];
    for (let j = a; j < b; j++) keys.push(row(k, h, j)), values.push(row(v, h, j));
    out.set(softmaxRow(q.data.subarray(h * d, (h + 1) * d), keys, values), h * d);
  }
  return out;
}

const cases = [];
for (const w of windows) {
  const block = w / 4, prefill = 2 * w + block + 1;
  const keys = tensor(prefill + 1, w), values = tensor(prefill + 1, w + 1), queries = tensor(prefill + 1, w + 2);
  const prompt = [rows(queries, 0, prefill), rows(keys, 0, prefill), rows(values, 0, prefill)];
  const next = [rows(queries, prefill, prefill + 1), rows(keys, prefill, prefill + 1), rows(values, prefill, prefill + 1)];
  const first = (Math.floor(prefill / block) - 3) * block;  // the FAVOR+ window's first key at the next step
  for (const [id, options, want] of [
    ['exact', { method: 'exact', window: w }, () => exactStep(next[0], keys, values, prefill + 1 - w, prefill + 1)],
    ['favor', { method: 'favor', featureMap: fm, window: w }, () => favor.favorAttention(next[0], rows(keys, first, prefill + 1), rows(values, first, prefill + 1), { featureMap: fm, causal: true }).data],
  ]) {
    const state = favor.createCausalState(options);
    state.append(...prompt);
    const check = difference(state.append(...next).data, want()).rel;
    if (!(check <= tolerance)) throw new Error(`window ${w}, ${id}: the step differs from its reference by ${check}`);
    cases.push({ w, id, state, check, step: next });
  }
}
const whole = favor.createCausalState({ method: 'favor', featureMap: fm });
whole.append(...[tensor(4096, 1), tensor(4096, 2), tensor(4096, 3)]);
const wholeStep = [tensor(1, 4), tensor(1, 5), tensor(1, 6)];
const all = [...cases, { w: 0, id: 'favor-whole', state: whole, step: wholeStep }];

for (const c of all) {  // warm-up: V8 compiles a wasm function with its optimizing tier only after it has run a while
  const t0 = performance.now();
  while (performance.now() - t0 < 300) c.state.append(...c.step);
}
const rates = new Map(all.map((c) => [c, []]));
for (let r = 0; r < rounds; r++) {
  for (let i = 0; i < all.length; i++) {
    const c = all[(i + r) % all.length];
    const t0 = performance.now();
    for (let t = 0; t < steps; t++) c.state.append(...c.step);
    rates.get(c).push(steps / ((performance.now() - t0) / 1000));
  }
}
const rate = (c) => median(rates.get(c));
const fmt = (x) => Math.round(x).toLocaleString('en-US');
const kb = (b) => `${(b / 1024).toFixed(0)} KiB`;
const wholeRate = rate(all.at(-1));

const cpu = thisCpuName();
const md = ['<!-- window -->', '## Sliding windows in generation: FAVOR+ against exact', '',
  `\`node bench/window-decode.mjs\`, ${new Date().toISOString().slice(0, 10)}, ${cpu}, Node ${process.version}, wasm ${favor.info.relaxedSimd ? 'relaxed SIMD' : 'SIMD'}, 1 thread. ` +
  `Decode steps (one position per append) of ${H} heads, d = dv = ${d}, inputs N(0, ${sigma}²): an exact state with \`window: w\` (the cache kept at w keys) and a FAVOR+ state with \`window: w\` ` +
  `(positive, orthogonal, m = ${m}: blocks of w/4, each query seeing its block and the 3 before it, through 4 states per head: the window's, and one of each block after its oldest, merged into the window's as a block starts), each filled past its window first; ` +
  `each one's next step checked (the exact one against a float64 evaluation over its w keys, the FAVOR+ one against one favorAttention call over the keys its window holds; largest relative Frobenius difference ` +
  `${Math.max(...cases.map((c) => c.check)).toExponential(1)}). Tokens per second: the median over ${rounds} rounds of ${steps} steps, every state in each round in turn. ` +
  `Beside them, the FAVOR+ state without a window: ${fmt(wholeRate)} tokens/s at any context.`, '',
  '| window w | exact, tokens/s | FAVOR+, tokens/s | FAVOR+ ÷ exact | FAVOR+ ÷ no window | exact state | FAVOR+ state |', '|---:|---:|---:|---:|---:|---:|---:|'];
const at = (w) => [cases.find((c) => c.w === w && c.id === 'exact'), cases.find((c) => c.w === w && c.id === 'favor')];
for (const w of windows) {
  const [e, f] = at(w);
  md.push(`| ${fmt(w)} | ${fmt(rate(e))} | ${fmt(rate(f))} | ${(rate(f) / rate(e)).toFixed(2)}× | ${(rate(f) / wholeRate).toFixed(2)}× | ${kb(e.state.stateBytes)} | ${kb(f.state.stateBytes)} |`);
}
const faster = windows.find((w) => rate(at(w)[1]) > rate(at(w)[0]));
md.push('', 'A FAVOR+ step with a window costs the same at every w: 2 of its 4 states read and updated (the window\'s, and the current block\'s, which reads the window\'s features of the step\'s rows), so less than 2 unwindowed steps (the ratio to no window), and 4 times the per-head sums (the state\'s bytes count the map\'s copy once); ' +
  `an exact step reads the w keys and values its cache holds. So FAVOR+ over a window is the faster one only where w is a few times m: ${faster ? `here from w = ${fmt(faster)} in this table` : 'at none of these w here'}.`, '<!-- /window -->');
for (const c of all) c.state.dispose();
fm.dispose();
const out = args.out ?? path.join(repo, 'BENCHMARKS.md');
writeSection(out, 'window', md.join('\n'));
console.log(md.join('\n'));
