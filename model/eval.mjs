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
// keys.
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import { parseArgs } from 'node:util';

import { loadFavor } from 'favor-attention';

import { heldOutText, loadModel, readManifest } from './node.js';
import { oprfRho } from './runner.js';

const { values: args } = parseArgs({ options: { windows: { type: 'string', default: '256' }, seeds: { type: 'string', default: '3' },
  models: { type: 'string' }, 'head-windows': { type: 'string', default: '32' } } });
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

// Which heads are hard, and which estimator helps where: per layer and head, the mean row KL(A‖Â)
// of each estimator below (orthogonal, m = 64, fresh W per seed; OPRF and FAVOR# with parameters
// from the window's q and k) on the head's real q and k of the exact forward pass, and the exact
// rows' mean entropy (bits), over the first head-windows windows of 256 characters.
// The per-head table shows the kernels; the per-layer table adds the positive kernel's simplex and
// structured projections.
const HEAD_ESTIMATORS = [
  { id: 'positive', label: 'FAVOR+', kernel: 'positive', sampling: 'orthogonal' },
  { id: 'simplex', label: 'FAVOR+ simplex', kernel: 'positive', sampling: 'simplex' },
  { id: 'structured', label: 'FAVOR+ SORF', kernel: 'positive', sampling: 'structured' },
  { id: 'oprf', label: 'OPRF', kernel: 'oprf', sampling: 'orthogonal' },
  { id: 'sderf', label: 'SDERF', kernel: 'sderf', sampling: 'orthogonal' },
  { id: 'aderf', label: 'ADERF', kernel: 'aderf', sampling: 'orthogonal' },
];
const HEAD_KERNELS = ['positive', 'oprf', 'sderf', 'aderf'];
const headWindows = Math.min(Number(args['head-windows']), windows);
const perHead = {};
for (const record of manifest.models) {
  const model = await loadModel(favor, record.name);
  const H = model.heads, L = model.context;
  const kl = Object.fromEntries(HEAD_ESTIMATORS.map((e) => [e.id, new Float64Array(model.layers * H)]));
  const entropy = new Float64Array(model.layers * H), rho = new Float64Array(model.layers * H);
  const maps = Object.fromEntries(HEAD_ESTIMATORS.map((e) => [e.id, Array.from({ length: seeds }, (_, s) => Array.from({ length: model.layers }, (_, l) =>
    favor.createFeatureMap({ dim: 32, features: 64, kernel: e.kernel, sampling: e.sampling, seed: 100 * s + l })))]));
  for (let w = 0; w < headWindows; w++) {
    const { qk } = model.forward(text.slice(w * L, (w + 1) * L), { method: 'exact' }, { capture: true });
    qk.forEach(({ q, k }, layer) => {
      const A = favor.attentionMatrix(q, k, { causal: true });
      const head = (x, h) => ({ data: x.data.subarray(h * L * L, (h + 1) * L * L), dims: [L, L] });
      for (let h = 0; h < H; h++) {
        const one = (x) => ({ data: x.data.subarray(h * L * 32, (h + 1) * L * 32), dims: [1, L, 32] });
        rho[layer * H + h] += oprfRho(one(q), one(k)) / headWindows;
        const a = head(A, h).data;
        let e = 0;
        for (const p of a) if (p > 0) e -= p * Math.log2(p);
        entropy[layer * H + h] += e / L / headWindows;
      }
      for (const { id } of HEAD_ESTIMATORS) {
        for (const seedMaps of maps[id]) {
          const Ahat = favor.favorAttentionMatrix(q, k, { featureMap: seedMaps[layer], causal: true });
          for (let h = 0; h < H; h++) kl[id][layer * H + h] += favor.compare(head(A, h), head(Ahat, h)).meanRowKL / headWindows / seeds;
        }
      }
    });
  }
  Object.values(maps).flat(2).forEach((f) => f.dispose());
  perHead[record.name] = { kl, entropy, rho, layers: model.layers, heads: H };
  console.error(`${record.name}: per-head errors done`);
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
  `| attention in every layer | ${manifest.models.map((m) => `${m.name}: ${m.title}`).join(' | ')} |`,
  `|---|${names.map(() => '---').join('|')}|`,
  ...rows.map((row) => `| ${row.label} | ${names.map((n) => cell(results[n][row.label])).join(' | ')} |`),
  '',
  `Full held-out set with the attention each model was trained with (torch, train/models/manifest.json): ${manifest.models.map((m) => `${m.name} ${m.heldOutBpc.toFixed(3)}`).join(', ')}.`,
];
md.push('', `Which heads the estimators approximate badly: mean row KL(A‖Â) per layer (rows) and head (columns) of FAVOR+ / OPRF / FAVOR# SDERF / FAVOR# ADERF, ` +
  `orthogonal, m = 64 (mean over ${seeds} seeds; OPRF's and FAVOR#'s parameters from each window's q and k) on each head's real q and k (the exact forward pass); ` +
  `in brackets the exact rows' mean entropy in bits (low: sharp attention) and ρ = mean over (i, j) of ‖q̃ᵢ + k̃ⱼ‖² (FAVOR+'s variance grows like e^{‖q̃ + k̃‖²}), ` +
  `over the first ${headWindows} windows.`);
const g = (x) => x.toPrecision(2);
for (const name of names) {
  const { kl, entropy, rho, layers, heads } = perHead[name];
  md.push('', `| ${name} | ${Array.from({ length: heads }, (_, h) => `head ${h}`).join(' | ')} |`, `|---|${Array.from({ length: heads }, () => '---').join('|')}|`);
  for (let l = 0; l < layers; l++) {
    md.push(`| layer ${l} | ${Array.from({ length: heads }, (_, h) => `${HEAD_KERNELS.map((kernel) => g(kl[kernel][l * heads + h])).join(' / ')} ` +
      `(${entropy[l * heads + h].toFixed(1)}; ${rho[l * heads + h].toFixed(0)})`).join(' | ')} |`);
  }
}
md.push('', `The same per layer, mean over its heads, with the positive kernel's simplex and structured (SORF) projections beside orthogonal ` +
  '(m = 64, mean over the seeds, the same windows):', '',
  `| model, layer | ${HEAD_ESTIMATORS.map((e) => e.label).join(' | ')} |`, `|---|${HEAD_ESTIMATORS.map(() => '---').join('|')}|`);
for (const name of names) {
  const { kl, layers, heads } = perHead[name];
  for (let l = 0; l < layers; l++) {
    const mean = (id) => kl[id].slice(l * heads, (l + 1) * heads).reduce((a, b) => a + b, 0) / heads;
    md.push(`| ${name}, layer ${l} | ${HEAD_ESTIMATORS.map((e) => g(mean(e.id))).join(' | ')} |`);
  }
}
const out = md.join('\n');
writeFileSync(new URL('./results.md', import.meta.url), `${out}\n`);
console.log(out);
