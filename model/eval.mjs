#!/usr/bin/env node
// `npm run eval:models`: held-out bits per character of every trained model (train/models) with
// exact attention and with approximations substituted in every layer, computed by the JS runner
// on favor-attention (model/runner.js). Writes a markdown table to stdout and model/results.md.
//
//   node model/eval.mjs [--windows N] [--seeds N] [--models softmax,performer]
// Windows: the first N non-overlapping windows of 257 characters of the held-out text (chapters
// 122-135 and the epilogue; 504 windows in all), the split of train/train.py's figures (each
// window predicts its last 256 characters from the ones before them). Random-feature rows: fresh
// W per layer and seed (shared by the layer's 4 heads), mean ± s.d. over seeds. OPRF's parameters
// (A, B, D from rho = mean |q~ + k~|^2) and FAVOR#'s (from the means and second moments of q~ and
// k~) come from each call's q and k, i.e. per window, layer and head. Hard VQ: k-means codebooks (seed 0) fitted per layer and head on each window's
// keys. Which heads the estimators approximate badly, and why: model/eval-heads.mjs.
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import { parseArgs } from 'node:util';

import { loadFavor } from 'favor-attention';

import { modelLabel } from './model-label.js';
import { heldOutText, loadModel, readManifest } from './node.js';

const { values: args } = parseArgs({ options: { windows: { type: 'string', default: '256' }, seeds: { type: 'string', default: '3' },
  models: { type: 'string' } } });
const seeds = Number(args.seeds);
const favor = await loadFavor({ threads: 1 });
const manifest = await readManifest();
// The long-context models (rotary positions, context 1024) have their own evaluation: model/eval-long.mjs.
manifest.models = manifest.models.filter((m) => !m.architecture.rotary);
if (args.models) manifest.models = manifest.models.filter((m) => args.models.split(',').includes(m.name));
const held = await heldOutText();
const windows = Math.min(Number(args.windows), Math.floor((held.length - 1) / 256));
const text = held.slice(0, windows * 256 + 1);

// One random-feature row: `seeds` fresh maps per layer (seed 100 s + layer, shared by the layer's
// heads). Data-dependent kernels (OPRF, FAVOR#) take their parameters from each call's q and k:
// per window, layer and head.
const featureRow = (label, options) => ({
  label, seeded: true,
  make: (m) => Array.from({ length: seeds }, (_, s) => ({ method: 'favor', featureMaps: Array.from({ length: m.layers }, (_, l) =>
    favor.createFeatureMap({ dim: 32, sampling: 'orthogonal', ...options, seed: 100 * s + l })) })),
});
const SIZES = [16, 64, 256];
const rows = [
  { label: 'exact softmax', make: () => [{ method: 'exact' }] },
  { label: 'FAVOR+ with the W of the model\'s last training draw (m = 64)', performerOnly: true, make: (m) => [{ method: 'favor', featureMaps: m.exportedFeatureMaps() }] },
  ...SIZES.map((features) => featureRow(`FAVOR+ positive, orthogonal, m = ${features}`, { features, kernel: 'positive' })),
  ...SIZES.map((features) => featureRow(`FAVOR+ positive, simplex, m = ${features}`, { features, kernel: 'positive', sampling: 'simplex' })),
  ...SIZES.map((features) => featureRow(`FAVOR+ positive, structured (SORF), m = ${features}`, { features, kernel: 'positive', sampling: 'structured' })),
  ...SIZES.map((features) => featureRow(`OPRF (FAVOR++), orthogonal, m = ${features}`, { features, kernel: 'oprf' })),
  ...SIZES.map((features) => featureRow(`FAVOR# SDERF, orthogonal, m = ${features}`, { features, kernel: 'sderf' })),
  ...SIZES.map((features) => featureRow(`FAVOR# ADERF, orthogonal, m = ${features}`, { features, kernel: 'aderf' })),
  ...[16, 64].map((clusters) => ({ label: `hard VQ, k-means codebook of ${clusters} per head`, make: () => [{ method: 'codebook', clusters, assignment: 'hard' }] })),
];

const stats = (xs) => {
  const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
  const sd = xs.length > 1 ? Math.sqrt(xs.reduce((a, b) => a + (b - mean) ** 2, 0) / (xs.length - 1)) : 0;
  return { mean, sd };
};
const results = {};
const t0 = performance.now();
for (const record of manifest.models) {
  const model = await loadModel(favor, record.name);
  results[record.name] = {};
  for (const row of rows) {
    if (row.performerOnly && !model.projections.length) continue;
    const specs = row.make(model);
    const values = specs.map((spec) => model.bitsPerChar(text, spec).bitsPerChar);
    for (const spec of specs) spec.featureMaps?.forEach((f) => f.dispose());
    results[record.name][row.label] = { ...stats(values), n: values.length };
    console.error(`${record.name}: ${row.label}: ${values.map((v) => v.toFixed(3)).join(', ')}`);
  }
}

const minutes = (performance.now() - t0) / 60000;
const names = manifest.models.map((m) => m.name);
const cell = (r) => (r ? (r.n > 1 ? `${r.mean.toFixed(3)} ± ${r.sd.toFixed(3)}` : r.mean.toFixed(3)) : '—');
const md = [
  `Held-out bits per character (lower is better) of the first ${windows} windows of 256 predicted characters of the held-out text ` +
  `(${(windows * 256).toLocaleString('en-US')} characters of chapters 122-135 and the epilogue, ${Math.floor((held.length - 1) / 256)} windows in all), the attention of every layer replaced as shown; ` +
  `random features: a fresh W per layer and seed (shared by the layer's heads), mean ± s.d. over ${seeds} seeds; ` +
  `OPRF's and FAVOR#'s parameters from each window's q and k, per layer and head; ` +
  `hard VQ: k-means codebooks fitted per layer and head on each window's keys. ` +
  `\`npm run eval:models\` (model/eval.mjs, the JS runner on favor-attention), ${os.cpus()[0]?.model ?? 'CPU'}, 1 thread, ${minutes.toFixed(1)} min.`,
  '',
  `| attention in every layer | ${manifest.models.map(modelLabel).join(' | ')} |`,
  `|---|${names.map(() => '---').join('|')}|`,
  ...rows.map((row) => `| ${row.label} | ${names.map((n) => cell(results[n][row.label])).join(' | ')} |`),
  '',
  `Full held-out set with the attention each model was trained with (torch, train/models/manifest.json): ${manifest.models.map((m) => `${m.name} ${m.heldOutBpc.toFixed(3)}`).join(', ')}.`,
];
const out = md.join('\n');
writeFileSync(new URL('./results.md', import.meta.url), `${out}\n`);
console.log(out);
