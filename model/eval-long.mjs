#!/usr/bin/env node
// `npm run eval:long`: what the long-context models (train/models: long-softmax, long-performer,
// rotary positions, trained at 1024 characters) do past their training context, computed by the
// JS runner on favor-attention (model/runner.js). Writes model/long-results.md (tables) and
// model/long-results.json (the curves the page draws), and prints the tables.
//
//   node model/eval-long.mjs [--length 8192] [--generate 16384] [--threads 1]
//
// 1. Held-out bits per character against position: the held-out text cut into sequences of
//    `length` + 1 characters, each character predicted from everything before it in its sequence,
//    binned by position, for every seed of each model (mean ± s.d. over seeds):
//      long-softmax, exact attention over the whole prefix
//      long-softmax, exact attention over the last 1,024 positions (a sliding window: the cache kept
//        at the training context)
//      long-performer, FAVOR+ with its exported W over the whole prefix (a constant-size state)
//      long-performer, the same over a sliding window of 256 (blocks of 64: each position sees
//        between 193 and 256 positions; the windowed FAVOR+ causal state, the whole text in one
//        append)
//      long-performer, exact attention on its q and k
// 2. Generation after a held-out prompt, one character per append, through exact caches, through
//    FAVOR+ states, and through FAVOR+ states over the window of 256 (long-performer, seed 1):
//    characters per second and the states' bytes (summed over layers) against position, summed
//    up over spans by model/generation-rates.js, as the page does when it quotes them.
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import { parseArgs } from 'node:util';

import { loadFavor } from 'favor-attention';

import { generationSummary } from './generation-rates.js';
import { heldOutText, loadModel, readManifest } from './node.js';

const { values: args } = parseArgs({ options: { length: { type: 'string', default: '8192' }, generate: { type: 'string', default: '16384' },
  threads: { type: 'string', default: '1' }, prompt: { type: 'string', default: '512' } } });
const LENGTH = Number(args.length), GENERATE = Number(args.generate), PROMPT = Number(args.prompt);
const favor = await loadFavor({ threads: Number(args.threads) });
const manifest = await readManifest();
const held = await heldOutText();
const t0 = performance.now();
const cpu = os.cpus()[0]?.model ?? 'CPU';

const seedsOf = (name) => [name, ...(manifest.replicas?.[name] ?? [])];
const softmaxRecord = manifest.models.find((m) => m.name === 'long-softmax');
const CONTEXT = softmaxRecord.architecture.context;
const EDGES = [0, 256, 1024, 2048, 4096, 8192, 16384, 32768].filter((e) => e < LENGTH).concat([LENGTH]);
const BINS = EDGES.slice(0, -1).map((a, i) => ({ from: a, to: EDGES[i + 1] }));
const sequences = Math.floor((held.length - 1) / LENGTH);

// FAVOR+ over a window (model/runner.js): the long Performer's keys spread the further back a row
// reaches (rotary positions), and FAVOR+'s error with them (docs/models.md).
const FAVOR_WINDOW = 256;
const CURVES = [
  { id: 'softmax-full', model: 'long-softmax', label: 'softmax model, exact, whole prefix', spec: () => ({ method: 'exact' }) },
  { id: 'softmax-window', model: 'long-softmax', label: `softmax model, exact, sliding window of ${CONTEXT.toLocaleString('en-US')}`, spec: () => ({ method: 'exact', window: CONTEXT }) },
  { id: 'performer-favor', model: 'long-performer', label: 'Performer, FAVOR+ (the W of its last training draw, m = 64), whole prefix', spec: (m) => ({ method: 'favor', featureMaps: m.exportedFeatureMaps() }) },
  { id: 'performer-favor-window', model: 'long-performer', window: FAVOR_WINDOW,
    label: `Performer, FAVOR+ (the same W), sliding window of ${FAVOR_WINDOW} (blocks of ${FAVOR_WINDOW / 4})`,
    spec: (m) => ({ method: 'favor', featureMaps: m.exportedFeatureMaps(), window: FAVOR_WINDOW }) },
  { id: 'performer-exact', model: 'long-performer', label: 'Performer, exact on its q and k, whole prefix', spec: () => ({ method: 'exact' }) },
];

const stats = (xs) => {
  const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
  const sd = xs.length > 1 ? Math.sqrt(xs.reduce((a, b) => a + (b - mean) ** 2, 0) / (xs.length - 1)) : 0;
  return { mean, sd, n: xs.length };
};

// bits/char per bin (and over all positions) of one model under one spec: positions pooled over sequences
function binned(model, spec) {
  const sums = new Float64Array(BINS.length), counts = new Float64Array(BINS.length);
  let total = 0;
  for (let s = 0; s < sequences; s++) {
    const bits = model.positionBits(held.slice(s * LENGTH, (s + 1) * LENGTH + 1), spec);
    // entry i predicts the character at position i + 1 from positions 0..i
    bits.forEach((b, i) => {
      const bin = BINS.findIndex(({ from, to }) => i + 1 >= from && i + 1 < to);
      if (bin >= 0) sums[bin] += b, counts[bin] += 1;
      total += b;
    });
  }
  return { bins: Array.from(sums, (x, i) => x / counts[i]), all: total / (sequences * LENGTH) };
}

const curves = [];
for (const curve of CURVES) {
  const perSeed = [];
  for (const name of seedsOf(curve.model)) {
    const model = await loadModel(favor, name);
    const spec = curve.spec(model);
    perSeed.push({ name, ...binned(model, spec) });
    spec.featureMaps?.forEach((f) => f.dispose());
    model.dispose();
    console.error(`${curve.id} ${name}: ${perSeed.at(-1).bins.map((b) => b.toFixed(3)).join(' ')} (${((performance.now() - t0) / 60000).toFixed(1)} min)`);
  }
  curves.push({ id: curve.id, label: curve.label, window: curve.window, seeds: perSeed.map((p) => p.name), perSeed,
    bins: BINS.map((_, b) => stats(perSeed.map((p) => p.bins[b]))), all: stats(perSeed.map((p) => p.all)) });
}
const evalMinutes = (performance.now() - t0) / 60000;

// Generation: rates and memory against position, in blocks of 256 characters, timed around each
// block's next() calls. The two FAVOR+ runs go interleaved block by block, so that a slower spell
// of the machine reaches both alike; then the exact cache's, alone (its growing cache would slow
// whatever shares the module's memory with it).
const BLOCK = 256;
async function startRun(method) {
  const model = await loadModel(favor, 'long-performer');
  const maps = method === 'exact' ? null : model.exportedFeatureMaps();
  const spec = method === 'exact' ? { method } : { method: 'favor', featureMaps: maps, ...(method === 'favor-window' && { window: FAVOR_WINDOW }) };
  const dispose = () => { maps?.forEach((f) => f.dispose()); model.dispose(); };
  try {
    return { run: model.startGeneration(held.slice(held.length - PROMPT), spec, { seed: 1 }), blocks: [], text: '', dispose };
  } catch (e) {
    dispose();
    throw e;
  }
}
async function generate(methods) {
  const runs = {};
  try {
    for (const method of methods) runs[method] = await startRun(method);
    for (let t = 0; t < GENERATE; t += BLOCK) {
      for (const g of Object.values(runs)) {
        const start = performance.now();
        for (let i = 0; i < BLOCK; i++) g.text += g.run.next().char;
        g.blocks.push({ position: g.run.length, charsPerSecond: BLOCK / ((performance.now() - start) / 1000), stateBytes: g.run.stateBytes });
      }
    }
  } finally {
    for (const g of Object.values(runs)) g.run.dispose(), g.dispose();
  }
  return runs;
}
const generated = { ...(await generate(['favor', 'favor-window'])), ...(await generate(['exact'])) };
console.error(`generation: done (${((performance.now() - t0) / 60000).toFixed(1)} min)`);
const generation = { prompt: PROMPT, characters: GENERATE, block: BLOCK, window: FAVOR_WINDOW,
  order: `the two FAVOR+ runs interleaved ${BLOCK} characters at a time, then the exact cache's`,
  favor: generated.favor.blocks, favorWindow: generated['favor-window'].blocks, exact: generated.exact.blocks };
const { span, first, last, crossing } = generationSummary(generation);
const favorFirst = first.favor, favorLast = last.favor, windowFirst = first.favorWindow, windowLast = last.favorWindow;
const exactFirst = first.exact, exactLast = last.exact;
const bytes = (method, at) => generated[method].blocks.find((b) => b.position - PROMPT >= at)?.stateBytes;

const fmt = (r) => (r.n > 1 ? `${r.mean.toFixed(3)} ± ${r.sd.toFixed(3)}` : r.mean.toFixed(3));
const n = (x) => x.toLocaleString('en-US');
const md = [
  `Held-out bits per character (lower is better) against position: the held-out text (chapters 122-135 and the epilogue) cut into ${sequences} sequences of ${n(LENGTH)} characters, ` +
  `each character predicted from everything before it in its sequence; mean ± s.d. over the ${seedsOf('long-softmax').length} seeds of each model (training context ${n(CONTEXT)}). ` +
  `\`npm run eval:long\` (model/eval-long.mjs, the JS runner on favor-attention), ${cpu}, ${args.threads} thread, ${evalMinutes.toFixed(1)} min.`,
  '',
  `| attention | ${BINS.map(({ from, to }) => `${n(from)}–${n(to)}`).join(' | ')} | all |`,
  `|---|${BINS.map(() => '---').join('|')}|---|`,
  ...curves.map((c) => `| ${c.label} | ${c.bins.map(fmt).join(' | ')} | ${fmt(c.all)} |`),
  '',
  `Generation of ${n(GENERATE)} characters after the last ${n(PROMPT)} held-out characters, one character per append (long-performer, seed 1, sampling seed 1; ${generation.order}), ` +
  `${cpu}, Node ${process.versions.node}, ${args.threads} thread: characters per second, and the states' bytes summed over the 4 layers.`,
  '',
  `| | FAVOR+ state | FAVOR+ state, window of ${FAVOR_WINDOW} | exact cache |`,
  '|---|---|---|---|',
  `| characters/s, characters ${n(span)}–${n(2 * span)} | ${favorFirst.toFixed(0)} | ${windowFirst.toFixed(0)} | ${exactFirst.toFixed(0)} |`,
  `| characters/s, last ${n(span)} | ${favorLast.toFixed(0)} | ${windowLast.toFixed(0)} | ${exactLast.toFixed(0)} |`,
  `| last ÷ first | ${(favorLast / favorFirst).toFixed(2)} | ${(windowLast / windowFirst).toFixed(2)} | ${(exactLast / exactFirst).toFixed(2)} |`,
  `| state bytes after ${n(span)} characters | ${n(bytes('favor', span))} | ${n(bytes('favor-window', span))} | ${n(bytes('exact', span))} |`,
  `| state bytes after ${n(GENERATE)} characters | ${n(generated.favor.blocks.at(-1).stateBytes)} | ${n(generated['favor-window'].blocks.at(-1).stateBytes)} | ${n(generated.exact.blocks.at(-1).stateBytes)} |`,
  '',
  (crossing
    ? `FAVOR+ generates faster than the exact cache in every block of ${BLOCK} characters from the one ending at position ${n(crossing)}; ` +
      `over the last ${n(span)} characters (to position ${n(GENERATE + PROMPT)}) it is ${(favorLast / exactLast).toFixed(1)}× as fast`
    : `FAVOR+ is not faster than the exact cache in every block to the end (last ${n(span)} characters: ${(favorLast / exactLast).toFixed(2)}× as fast)`) +
  `, its state ${n(generated.favor.blocks.at(-1).stateBytes)} bytes against the cache's ${n(generated.exact.blocks.at(-1).stateBytes)}. ` +
  `Over the window of ${FAVOR_WINDOW} (the curve that stays at ${curves.find((c) => c.id === 'performer-favor-window').all.mean.toFixed(2)} bits per character), ` +
  `a character costs ${(favorFirst / windowFirst).toFixed(1)} times as long as without the window over characters ${n(span)}–${n(2 * span)} and ` +
  `${(favorLast / windowLast).toFixed(1)} times over the last ${n(span)}, and the state is ` +
  `${n(generated['favor-window'].blocks.at(-1).stateBytes)} bytes (4 prefix states per head, the maps' copies once).`,
];
const out = md.join('\n');
writeFileSync(new URL('./long-results.md', import.meta.url), `${out}\n`);
writeFileSync(new URL('./long-results.json', import.meta.url), `${JSON.stringify({
  cpu, node: process.versions.node, threads: Number(args.threads), length: LENGTH, sequences, context: CONTEXT, bins: BINS,
  curves: curves.map(({ id, label, window, seeds, bins, all, perSeed }) => ({ id, label, ...(window && { window }), seeds, bins, all,
    perSeed: perSeed.map(({ name, bins: b, all: a }) => ({ name, bins: b, all: a })) })),
  generation,
}, null, 1)}\n`);
console.log(out);
