#!/usr/bin/env node
// Two builds of the package side by side in one process: each call made on A and on B in turn,
// in rounds that alternate which goes first, so that a host whose speed drifts (a shared VM's
// second vCPU) moves both alike. Prints each call's median time on A and B, A ÷ B, and whether
// their outputs are the same bits. A and B are package roots (folders with web/node.js and a
// built dist/): a second checkout, a copy of an older dist/, or this one (an A/A run, which shows
// how far two instances of the same build differ on this machine).
//
// --burst N makes N calls back to back on each build in turn, its figure their median but the
// first's (which finds the helpers asleep after the other build's calls): the path of a loop of
// calls, whose helpers are still spinning from the call before. --slow-copy-us N makes each copy
// of more than 10,000 floats into a shared heap (the threaded builds' inputs) take N us longer,
// a stand-in for a host whose single core copies slowly; --copy-gbps G makes each such copy take
// as long as G GB/s would (at least), the stand-in where the builds cut the inputs into pieces of
// other sizes (a fixed cost per copy would favour the build that copies in fewer pieces).
//
//   node bench/ab.mjs --a ../old-checkout [--b .] [--threads 1] [--simd auto] [--rounds 24]
//                     [--burst 1] [--slow-copy-us 0] [--copy-gbps G]
//                     [--cases favor,favor-tiny,favor-short,favor-long,favor8,favor8-long,favor8-causal,favor3-causal,favor-causal,favor-structured,exact,exact-short,exact-tiny,exact-causal,codebook,decode,exact-decode,window-decode]
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

import { gaussian, median } from './lib/inputs.mjs';

const d = 64, m = 256, H = 8, context = 1024;
// Each case: the L of its input (and its heads H, 1 if not given), and a call of (favor, its
// feature map, the input, its states).
export const CASES = {
  favor: { L: 4096, label: 'favorAttention, 1 head, L = 4096', call: (f, s, t) => f.favorAttention(t, t, t, { featureMap: s.map }) },
  // The thread bench's smallest call: one chunk of 128 rows, in 8 pieces on 2 threads (region_pieces).
  'favor-tiny': { L: 128, label: 'favorAttention, 1 head, L = 128', call: (f, s, t) => f.favorAttention(t, t, t, { featureMap: s.map }) },
  // A long one-head call: its fold's segments (kFoldSegmentRows) are 4 rounds on 16 threads.
  'favor-long': { L: 65536, label: 'favorAttention, 1 head, L = 65536', call: (f, s, t) => f.favorAttention(t, t, t, { featureMap: s.map }) },
  // A short call: its regions are cut into 8 rounds of pieces on 2 threads or more (region_pieces).
  'favor-short': { L: 1024, label: 'favorAttention, 1 head, L = 1024', call: (f, s, t) => f.favorAttention(t, t, t, { featureMap: s.map }) },
  // Heads that each take a thread or two: where a thread slower than the others holds up the call.
  favor8: { L: 4096, H, label: `favorAttention, ${H} heads, L = 4096`, call: (f, s, t) => f.favorAttention(t, t, t, { featureMap: s.map }) },
  // The thread bench's long call of several heads: each head's inputs arrive slice by slice across
  // the heads (input_arrival.hpp), and a head's fold starts on its first slice.
  'favor8-long': { L: 16384, H, label: `favorAttention, ${H} heads, L = 16384`, call: (f, s, t) => f.favorAttention(t, t, t, { featureMap: s.map }) },
  'favor8-causal': { L: 4096, H, label: `favorAttention causal, ${H} heads, L = 4096`, call: (f, s, t) => f.favorAttention(t, t, t, { featureMap: s.map, causal: true }) },
  // Causal heads that do not share out among the threads (3 on 2: a short last round): each runs
  // its segments in waves whose pieces the other thread takes once it has no head left.
  'favor3-causal': { L: 4096, H: 3, label: 'favorAttention causal, 3 heads, L = 4096', call: (f, s, t) => f.favorAttention(t, t, t, { featureMap: s.map, causal: true }) },
  'favor-causal': { L: 4096, label: 'favorAttention causal, 1 head, L = 4096', call: (f, s, t) => f.favorAttention(t, t, t, { featureMap: s.map, causal: true }) },
  'favor-structured': { L: 4096, label: 'favorAttention, structured W, 1 head, L = 4096', call: (f, s, t) => f.favorAttention(t, t, t, { featureMap: s.structuredMap }) },
  exact: { L: 1024, label: 'exactAttention, 1 head, L = 1024', call: (f, s, t) => f.exactAttention(t, t, t) },
  // The thread bench's smallest exact call: at T = 16, 64 pieces of 8 rows, four per thread.
  'exact-short': { L: 512, label: 'exactAttention, 1 head, L = 512', call: (f, s, t) => f.exactAttention(t, t, t) },
  // A call of under a millisecond, whose time a helper woken late lengthens most.
  'exact-tiny': { L: 256, label: 'exactAttention, 1 head, L = 256', call: (f, s, t) => f.exactAttention(t, t, t) },
  'exact-causal': { L: 1024, label: 'exactAttention causal, 1 head, L = 1024', call: (f, s, t) => f.exactAttention(t, t, t, { causal: true }) },
  codebook: { L: 4096, label: 'codebookAttention, 64 codes, 1 head, L = 4096', call: (f, s, t) => f.codebookAttention(t, t, t, { codebook: s.codebook }) },
  decode: { steps: 100, label: `FAVOR+ decode, ${H} heads, 100 steps after ${context}`, call: (f, s) => steps(s.favorState, s.step, 100) },
  'exact-decode': { steps: 20, label: `exact decode, ${H} heads, 20 steps (cache of ${context}+)`, call: (f, s) => steps(s.exactState, s.step, 20) },
  'window-decode': { steps: 20, label: `exact decode, ${H} heads, window ${context}, 20 steps`, call: (f, s) => steps(s.windowState, s.step, 20) },
};

function steps(state, x, n) {
  let out;
  for (let i = 0; i < n; ++i) out = state.append(x, x, x);
  return out;
}

// What every case of one instance needs: its map, codebook and causal states, prefilled once.
function setUp(favor) {
  const map = favor.createFeatureMap({ dim: d, features: m, seed: 1 });
  const prefill = { data: gaussian(H * context * d, 3, 0.5), dims: [H, context, d] };
  const state = (options) => {
    const s = favor.createCausalState(options);
    s.append(prefill, prefill, prefill);
    return s;
  };
  return {
    map,
    structuredMap: favor.createFeatureMap({ dim: d, features: m, seed: 1, sampling: 'structured' }),
    codebook: { data: gaussian(64 * d, 2, 0.5), dims: [64, d] },
    step: { data: gaussian(H * d, 4, 0.5), dims: [H, 1, d] },
    favorState: state({ method: 'favor', featureMap: map }),
    exactState: state({ method: 'exact' }),
    windowState: state({ method: 'exact', window: context }),
  };
}

const sameBits = (a, b) => a.length === b.length && a.every((x, i) => Object.is(x, b[i]));

/** Runs the cases on instances [A, B] (each warmed up first for warmupMs); returns one row per
 * case: { id, label, a, b, same } (ms). */
export function compare(instances, ids, { rounds = 24, burst = 1, warmupMs = 500, log = () => {} } = {}) {
  const setups = instances.map(setUp);
  const rows = [];
  for (const id of ids) {
    const c = CASES[id];
    if (!c) throw new RangeError(`--cases: no case '${id}' (have ${Object.keys(CASES).join(', ')})`);
    const heads = c.H ?? 1;
    const input = c.L && { data: gaussian(heads * c.L * d, 7, 0.5), dims: [heads, c.L, d] };
    const run = (i) => {
      const t0 = performance.now();
      const out = c.call(instances[i], setups[i], input);
      return { ms: performance.now() - t0, data: out.data };
    };
    // Warm-up, at least 3 calls each and warmupMs: V8 runs a wasm function on its baseline tier
    // until it has run a while, and two builds tier up apart (a decode case read up to 1.5x
    // slower on whichever was B after 3 calls; the same build twice shares its compiled code).
    for (let w = 0, end = performance.now() + warmupMs; w < 3 || performance.now() < end; ++w) run(0), run(1);
    const times = [[], []];
    // Outputs compared in each round: the decode cases' states move on, step for step alike.
    let same = true;
    for (let r = 0; r < rounds; ++r) {
      const out = [];
      for (const i of r % 2 ? [1, 0] : [0, 1]) {
        const ms = [];
        for (let n = 0; n < burst; ++n) ms.push((out[i] = run(i)).ms);
        times[i].push(burst > 1 ? median(ms.slice(1)) : ms[0]);
      }
      same &&= sameBits(out[0].data, out[1].data);
    }
    const row = { id, label: c.label, a: median(times[0]), b: median(times[1]), same };
    log(row);
    rows.push(row);
  }
  return rows;
}

const isMain = process.argv[1] && pathToFileURL(path.resolve(process.argv[1])).href === import.meta.url;
if (isMain) {
  const { values: args } = parseArgs({
    options: {
      a: { type: 'string' },
      b: { type: 'string', default: '.' },
      threads: { type: 'string', default: '1' },
      simd: { type: 'string', default: 'auto' },
      rounds: { type: 'string', default: '24' },
      burst: { type: 'string', default: '1' },
      'slow-copy-us': { type: 'string', default: '0' },
      'copy-gbps': { type: 'string' },
      cases: { type: 'string', default: Object.keys(CASES).join(',') },
    },
  });
  if (!args.a) throw new TypeError('--a: expected the package root of build A (e.g. a second checkout)');
  const load = async (root) => {
    const { loadFavor } = await import(pathToFileURL(path.resolve(root, 'web/node.js')).href);
    return loadFavor({ threads: Number(args.threads), simd: args.simd === 'true' ? true : args.simd === 'false' ? false : args.simd });
  };
  const slowUs = Number(args['slow-copy-us']), gbps = args['copy-gbps'] === undefined ? 0 : Number(args['copy-gbps']);
  if (!(gbps >= 0)) throw new RangeError(`--copy-gbps: expected a rate in GB/s, got ${args['copy-gbps']}`);
  if (slowUs > 0 || gbps > 0) {
    const set = Float32Array.prototype.set;
    Float32Array.prototype.set = function slowSet(source, offset) {
      if (!(this.buffer instanceof SharedArrayBuffer && source.length > 10_000)) return set.call(this, source, offset);
      const start = performance.now();
      set.call(this, source, offset);
      const end = Math.max(performance.now() + slowUs / 1000, gbps > 0 ? start + (4 * source.length) / (gbps * 1e6) : 0);
      while (performance.now() < end);
    };
  }
  const instances = [await load(args.a), await load(args.b)];
  console.log(`A ${path.resolve(args.a)}  ${JSON.stringify(instances[0].info)}`);
  console.log(`B ${path.resolve(args.b)}  ${JSON.stringify(instances[1].info)}`);
  compare(instances, args.cases.split(','), {
    rounds: Number(args.rounds), burst: Number(args.burst),
    log: (r) => console.log(`${r.label.padEnd(48)} A ${r.a.toFixed(3)} ms  B ${r.b.toFixed(3)} ms  A/B ${(r.a / r.b).toFixed(3)}  ${r.same ? 'same bits' : 'outputs differ'}`),
  });
  process.exit(0);  // (threaded instances' workers)
}
