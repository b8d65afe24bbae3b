#!/usr/bin/env node
// What loadFavor({ worker: true }) costs per call (issue 16, part 2), side by side in one run,
// 1 thread, wasm, in Node (worker_threads; a browser's Worker moves messages with the same
// structured clone): the synchronous API against the worker API copying its inputs and the
// worker API with { transfer: true } (inputs moved, so each call gets fresh arrays, made
// before its timing starts). Calls: exact attention and FAVOR+ (positive, m = 256, orthogonal,
// seed 42), one head, d = dv = 64, L = S from 64 to 4096; and a decode step of a FAVOR+
// causal state (8 heads, one position per step). Every variant's output is first compared with
// the synchronous one's (the same module: equal bits). Reported: medians over interleaved rounds
// and the worker's overhead per call. Writes its section into BENCHMARKS.md (between
// <!-- worker --> markers) or --out FILE, and bench/worker-results.json.
//
//   node bench/worker.mjs [--quick] [--out FILE.md]
import { writeFileSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import { loadFavor } from 'favor-attention';

import { gaussian, median } from './lib/inputs.mjs';
import { writeSection } from './lib/sections.mjs';

const repo = fileURLToPath(new URL('..', import.meta.url));
const { values: args } = parseArgs({ options: { quick: { type: 'boolean', default: false }, out: { type: 'string' } } });
const d = 64, m = 256, H = 8, sigma = 0.5;
const sizes = args.quick ? [64, 1024] : [64, 256, 1024, 4096];
const rounds = args.quick ? 5 : 9;
const blockMs = args.quick ? 40 : 120;  // per variant and round: calls repeated for about this long

const variants = [
  { id: 'sync', label: 'synchronous', favor: await loadFavor({ threads: 1 }) },
  { id: 'copy', label: 'worker: true (inputs copied)', favor: await loadFavor({ threads: 1, worker: true }) },
  { id: 'move', label: 'worker: true, transfer: true (inputs moved)', favor: await loadFavor({ threads: 1, worker: true, transfer: true }) },
];
for (const v of variants) v.featureMap = await v.favor.createFeatureMap({ dim: d, features: m, seed: 42 });
const info = await variants[0].favor.info;
const cpu = os.cpus()[0]?.model?.trim() ?? 'unknown CPU';
const now = () => performance.now();
const tensor = (dims, seed) => ({ data: gaussian(dims.reduce((a, b) => a * b, 1), seed, sigma), dims });
// A fresh copy for a call that moves its inputs (the caller's arrays are detached).
const fresh = (t) => ({ data: t.data.slice(), dims: t.dims });

// ms per call of each variant: calls repeated for ~blockMs per variant and round, the variants
// in a rotating order each round, the fresh copies of moved inputs made outside the timing.
async function timeCase(make, inputs) {
  const call = (v) => make(v, v.id === 'move' ? inputs.map(fresh) : inputs);
  const reference = (await call(variants[0])).data;
  for (let i = 1; i < variants.length; i++) {
    const out = (await call(variants[i])).data;
    let maxAbs = 0;
    for (let j = 0; j < out.length; j++) maxAbs = Math.max(maxAbs, Math.abs(out[j] - reference[j]));
    if (out.length !== reference.length || !(maxAbs === 0)) throw new Error(`${variants[i].label} differs from the synchronous call by ${maxAbs}`);
  }
  const per = variants.map(() => []);
  for (let r = 0; r < rounds; r++) {
    for (let k = 0; k < variants.length; k++) {
      const i = (k + r) % variants.length;
      let spent = 0, n = 0;
      while (spent < blockMs || n < 3) {
        const args = variants[i].id === 'move' ? inputs.map(fresh) : inputs;
        const t0 = now();
        await make(variants[i], args);
        spent += now() - t0;
        n++;
      }
      per[i].push(spent / n);
    }
  }
  return Object.fromEntries(variants.map((v, i) => [v.id, median(per[i])]));
}

const rows = [];
for (const L of sizes) {
  const q = tensor([L, d], 1000 + L), k = tensor([L, d], 2000 + L), v = tensor([L, d], 3000 + L);
  for (const kind of ['exact', 'favor']) {
    const make = kind === 'exact'
      ? (x, [a, b, c]) => x.favor.exactAttention(a, b, c)
      : (x, [a, b, c]) => x.favor.favorAttention(a, b, c, { featureMap: x.featureMap });
    const ms = await timeCase(make, [q, k, v]);
    rows.push({ case: kind, L, ms });
    console.error(`  ${kind} L = ${L}: ${variants.map((x) => `${x.id} ${ms[x.id].toFixed(3)} ms`).join(', ')}`);
  }
}
// Decode: each variant's own FAVOR+ state, filled with the same 1024 positions, then steps.
const context = 1024;
const states = [];
for (const v of variants) {
  const state = await v.favor.createCausalState({ method: 'favor', featureMap: v.featureMap });
  const x = tensor([H, context, d], 7);
  await state.append(x, x, x);
  states.push(state);
}
const step = tensor([H, 1, d], 8);
const decodeMs = await timeCase((x, [a, b, c]) => states[variants.indexOf(x)].append(a, b, c), [step, step, step]);
rows.push({ case: 'decode', L: 1, ms: decodeMs });
console.error(`  decode step: ${variants.map((x) => `${x.id} ${decodeMs[x.id].toFixed(3)} ms`).join(', ')}`);
for (const s of states) await s.dispose();
// The floor: a bare worker_threads worker that answers each message with an output-sized array,
// sent the decode step's three inputs (copied), one round trip at a time.
async function echoMs() {
  const echo = new Worker(`const { parentPort } = require('node:worker_threads');
    parentPort.on('message', () => parentPort.postMessage(new Float32Array(${H * d})));`, { eval: true });
  let answer;
  echo.on('message', () => answer());
  const roundTrip = () => new Promise((resolve) => { answer = resolve; echo.postMessage([step, step, step]); });
  const per = [];
  for (let r = 0; r < rounds; r++) {
    let spent = 0, n = 0;
    while (spent < blockMs || n < 3) {
      const t0 = now();
      await roundTrip();
      spent += now() - t0;
      n++;
    }
    per.push(spent / n);
  }
  await echo.terminate();
  return median(per);
}
const echo = await echoMs();
console.error(`  bare echo: ${echo.toFixed(3)} ms`);
for (const v of variants) {
  await v.featureMap.dispose();
  await v.favor.dispose?.();
}

const fmt = (x, digits = 2) => (x >= 100 ? Math.round(x).toLocaleString('en-US') : x >= 10 ? x.toFixed(1) : x.toFixed(digits));
const int = (x) => Math.round(x).toLocaleString('en-US');
const md = [];
md.push('<!-- worker -->');
md.push('## The worker API\'s cost per call (issue 16)');
md.push('');
md.push(`\`node bench/worker.mjs\`${args.quick ? ' --quick' : ''}, ${new Date().toISOString().slice(0, 10)}, ${cpu}, Node ${process.version}, wasm ${info.relaxedSimd ? 'relaxed SIMD' : info.simd ? 'SIMD' : 'scalar'}, 1 thread. ` +
  'The same module three ways: the synchronous API, `loadFavor({ worker: true })` (a worker_threads worker in Node, a module Web Worker in browsers; inputs copied by structured clone, the output copied back) and the same with `transfer: true` (inputs whose arrays span their buffer are moved, so each timed call gets fresh copies, made outside the timing). ' +
  `One head, d = dv = ${d}, inputs N(0, ${sigma}²); FAVOR+ positive orthogonal m = ${m}; decode: one position of ${H} heads appended to a FAVOR+ causal state after ${int(context)} positions. ` +
  `Milliseconds per call: the median over ${rounds} rounds in which each variant repeats its call for ~${blockMs} ms, in a rotating order. Every variant's output equals the synchronous call's bit for bit (checked first).`);
md.push('');
md.push('| call | L | synchronous | worker, copied | worker, moved | worker overhead (copied / moved) |');
md.push('|---|---:|---:|---:|---:|---:|');
for (const r of rows) {
  const over = (id) => `${fmt((r.ms[id] - r.ms.sync) * 1000, 0)} µs (${fmt(r.ms[id] / r.ms.sync, 2)}×)`;
  md.push(`| ${r.case === 'exact' ? 'exactAttention' : r.case === 'favor' ? 'favorAttention' : `decode step (append of [${H}, 1, ${d}])`} | ${r.case === 'decode' ? '—' : int(r.L)} | ${fmt(r.ms.sync, 3)} ms | ${fmt(r.ms.copy, 3)} ms | ${fmt(r.ms.move, 3)} ms | ${over('copy')} / ${over('move')} |`);
}
md.push('');
const decode = rows.find((r) => r.case === 'decode').ms;
md.push(`- Decode through the worker: ${int(1000 / decode.copy)} tokens/s against ${int(1000 / decode.sync)} on the calling thread: a step is short, so the round trip of two messages is a large part of it; calls that take milliseconds pay the same fixed cost plus the copies (${fmt(3 * 4096 * d * 4 / 2 ** 20, 1)} MiB in and ${fmt(4096 * d * 4 / 2 ** 20, 1)} MiB out at L = 4096).`);
md.push(`- The floor: a bare worker_threads worker that answers each message with an array of the output's size takes ${fmt(echo * 1000, 0)} µs per round trip sent the decode step's inputs; the worker API's overhead is that round trip, not its own work.`);
md.push('- What the worker buys is a page that keeps drawing: a Chromium test (tests/browser/vite-app.test.mjs) keeps ≥ 50 frames per second during a ~2 s call through it, against < 10 through the synchronous API.');
md.push('<!-- /worker -->');
const section = md.join('\n');

const outFile = args.out ?? `${repo}BENCHMARKS.md`;
writeSection(outFile, 'worker', section);
if (path.resolve(outFile) === path.resolve(`${repo}BENCHMARKS.md`)) {
  writeFileSync(`${repo}bench/worker-results.json`, `${JSON.stringify({ cpu, node: process.version, rows, echoMs: echo }, null, 1)}\n`);
}
console.log(section);
