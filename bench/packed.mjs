#!/usr/bin/env node
// What favor.packMatrix saves a model runner: the project's character model (model/runner.js,
// softmax and Performer, 4 layers of width 128) generating text, its weights packed once (the
// runner as shipped) against the same runner calling matmul with each weight tensor (a subclass
// here: the runner's linear() before packing), and the single matmul calls of a decoding step,
// one row times each layer's weight, packed b against b given each call. Outputs are checked
// bit-equal first; then interleaved rounds, medians (per-round ratios). Node, relaxed build,
// 1 thread. Writes its section into BENCHMARKS.md (between <!-- packed --> markers) or --out
// FILE, and bench/packed-results.json (beside FILE with --out).
//
//   node bench/packed.mjs [--quick] [--out FILE.md]
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import { loadFavor } from 'favor-attention';

import { CharModel } from '../model/runner.js';
import { loadModel } from '../model/node.js';
import { fmtMs, fmtRatio } from './lib/format.mjs';
import { gaussian, median } from './lib/inputs.mjs';
import { resultsFileFor, writeSection } from './lib/sections.mjs';

const repo = fileURLToPath(new URL('..', import.meta.url));
const { values: args } = parseArgs({ options: { quick: { type: 'boolean', default: false }, out: { type: 'string' } } });
const rounds = args.quick ? 5 : 15;
const cpu = os.cpus()[0]?.model?.trim() ?? 'unknown CPU';
const favor = await loadFavor({ threads: 1 });

// The runner's linear() as it was before it packed its weights: matmul with the weight tensor.
class UnpackedModel extends CharModel {
  linear(x, rows, name) {
    const w = this.w[`${name}.weight`];
    return this.favor.matmul({ data: x, dims: [rows, w.dims[1]] }, w, { transposeB: true, bias: this.w[`${name}.bias`] }).data;
  }
}

const bitsEqual = (a, b) => a.length === b.length && a.every((x, i) => Object.is(x, b[i]));
const rows = [];

// Generation: n characters after a prompt, timed without the prompt's prefill (generate(2)
// is the prefill and one step: subtracted).
const prompt = 'It was the best of times, it was the worst of times, it was the age of wisdom, it was the age of foolishness, '.repeat(2).slice(0, 200);
const n = args.quick ? 40 : 120;
for (const name of ['softmax', 'performer']) {
  const packed = await loadModel(favor, name);
  const plain = Object.setPrototypeOf(await loadModel(favor, name), UnpackedModel.prototype);
  const spec = (model) => (name === 'performer' ? { method: 'favor', featureMaps: model.exportedFeatureMaps() } : { method: 'exact' });
  const specs = new Map([[packed, spec(packed)], [plain, spec(plain)]]);
  const a = packed.generate(prompt, n, specs.get(packed), { logits: true }), b = plain.generate(prompt, n, specs.get(plain), { logits: true });
  if (a.text !== b.text || !a.logits.every((row, i) => bitsEqual(row, b.logits[i]))) throw new Error(`${name}: packed and unpacked runners differ`);
  const perChar = (model) => {
    const t0 = performance.now();
    model.generate(prompt, 2, specs.get(model));
    const t1 = performance.now();
    model.generate(prompt, n + 2, specs.get(model));
    return (performance.now() - t1 - (t1 - t0)) / n;
  };
  for (let i = 0; i < 2; i++) perChar(packed), perChar(plain);
  const times = { packed: [], plain: [] }, ratios = [];
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 ? [['packed', packed], ['plain', plain]] : [['plain', plain], ['packed', packed]];
    for (const [key, model] of order) times[key].push(perChar(model));
    ratios.push(times.plain[r] / times.packed[r]);
  }
  rows.push({ what: `generation, ${name} model (${name === 'performer' ? 'FAVOR+ with the W of its last training draw' : 'exact attention'}): ms per character`, packed: median(times.packed), plain: median(times.plain), ratio: median(ratios) });
  packed.dispose();
  console.error(`  ${rows.at(-1).what}: packed ${rows.at(-1).packed.toFixed(3)}, unpacked ${rows.at(-1).plain.toFixed(3)}`);
}

// Single products of a decoding step: x [1, k] times a weight [m, k] (transposeB), 64 calls per sample.
for (const [k, m] of [[128, 384], [128, 128], [128, 512], [512, 128]]) {
  const w = { data: gaussian(m * k, k + m, 0.1), dims: [m, k] }, x = { data: gaussian(k, 7, 1), dims: [1, k] };
  const packedW = favor.packMatrix(w, { transposeB: true });
  if (!bitsEqual(favor.matmul(x, packedW).data, favor.matmul(x, w, { transposeB: true }).data)) throw new Error('packed product differs');
  const time = (fn) => { const t0 = performance.now(); for (let i = 0; i < 64; i++) fn(); return (performance.now() - t0) / 64; };
  const packedCall = () => favor.matmul(x, packedW), plainCall = () => favor.matmul(x, w, { transposeB: true });
  for (let i = 0; i < 20; i++) time(packedCall), time(plainCall);
  const times = { packed: [], plain: [] }, ratios = [];
  for (let r = 0; r < rounds * 4; r++) {
    times.packed.push(time(packedCall)), times.plain.push(time(plainCall));
    ratios.push(times.plain[r] / times.packed[r]);
  }
  rows.push({ what: `matmul of one row by a [${m}, ${k}] weight (transposeB): µs per call`, packed: 1000 * median(times.packed), plain: 1000 * median(times.plain), ratio: median(ratios) });
  packedW.dispose();
}

const md = ['<!-- packed -->', '## Packed weights for a model runner', ''];
md.push(`\`node bench/packed.mjs\`${args.quick ? ' --quick' : ''}, ${new Date().toISOString().slice(0, 10)}, ${cpu}, Node ${process.version}, ${favor.info.relaxedSimd ? 'relaxed SIMD' : 'SIMD'} build, 1 thread. ` +
  '`favor.packMatrix(b, { transposeB })` checks b and packs it once in wasm memory; `favor.matmul(a, packed)` then skips checking, copying and packing b at each call. ' +
  `Generation: the project's character model (model/runner.js, 4 layers of width 128, 4 heads) continuing a ${prompt.length}-character prompt by ${n} characters, the prompt's prefill not counted; ` +
  'packed: the runner as shipped (each weight packed on first use); unpacked: the same runner calling matmul with each weight tensor. Both give the same text and logits bit for bit (checked first). ' +
  `Medians over ${rounds} rounds (the products: ${rounds * 4} samples of 64 calls), ratios the median of per-round ratios.`);
md.push('', '| what | packed | unpacked | unpacked ÷ packed |', '|---|---:|---:|---:|');
for (const r of rows) md.push(`| ${r.what} | ${fmtMs(r.packed)} | ${fmtMs(r.plain)} | ${fmtRatio(r.ratio)}× |`);
md.push('<!-- /packed -->');
const section = md.join('\n');
const outFile = args.out ?? `${repo}BENCHMARKS.md`;
writeSection(outFile, 'packed', section);
writeFileSync(resultsFileFor(outFile, 'packed-results.json'), `${JSON.stringify({ cpu, node: process.version, info: favor.info, rounds, rows }, null, 1)}\n`);
console.log(section);
