#!/usr/bin/env node
// `npm run eval:heads`: which heads of the trained models (train/models) the random-feature
// estimators approximate badly, and what sets it, computed by the JS runner on favor-attention
// (model/runner.js). Writes model/heads-results.md and prints it.
//
//   node model/eval-heads.mjs [--characters 8192] [--seeds 3] [--models softmax,long-performer]
//
// Every model reads the same first `characters` held-out characters in windows of its training
// context (32 windows of 256, or 8 of 1,024 for the long-context models). Per layer and head, on
// the head's real q and k of the exact forward pass (rotated, for the rotary models):
// - the mean row KL(A‖Â) of six estimators, orthogonal unless named, m = 64, a fresh W per layer
//   and seed (seed 100 s + layer, shared by the layer's heads), mean over seeds; OPRF's and
//   FAVOR#'s parameters from each window's q and k;
// - the exact rows' mean entropy in bits (low: sharp attention), and FAVOR+'s;
// - ρ = mean over (i, j) of ‖q̃ᵢ + k̃ⱼ‖² (q̃ = q / d^¼): FAVOR+'s variance grows like e^{‖q̃ + k̃‖²};
// - σ²ₖ, the spread of the keys each query sees: the mean over rows i of the mean ‖k̃ⱼ − k̄ᵢ‖² over
//   its keys j ≤ i (k̄ᵢ their mean). Each feature weighs a row's keys by e^{wᵀk̃ⱼ − ‖k̃ⱼ‖²/2} times a
//   factor of the query's that is the same for all of them and that normalizing the row removes;
//   what is left differs between two keys by wᵀ(k̃ⱼ − k̃ₗ), of variance ‖k̃ⱼ − k̃ₗ‖²;
// - the mean lengths ‖q̃‖ and ‖k̃‖;
// - on a model trained with FAVOR+, the same with the W of its last training draw;
// - on a rotary model, by bands of rows of its windows (rows 0–255 see at most 256 keys, the last
//   band up to 1,024): σ²ₖ of its keys as attention sees them (rotated by their positions) and
//   with the rotation undone, and FAVOR+'s mean row KL.
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import { parseArgs } from 'node:util';

import { loadFavor } from 'favor-attention';

import { heldOutText, loadModel, readManifest } from './node.js';
import { RotaryTable } from './layers.js';
import { causalKeySpread, causalKeySpreadRows, oprfRho } from './runner.js';

const { values: args } = parseArgs({ options: { characters: { type: 'string', default: '8192' }, seeds: { type: 'string', default: '3' },
  models: { type: 'string' } } });
const seeds = Number(args.seeds), characters = Number(args.characters);
const favor = await loadFavor({ threads: 1 });
const manifest = await readManifest();
if (args.models) manifest.models = manifest.models.filter((m) => args.models.split(',').includes(m.name));
const held = await heldOutText();
const t0 = performance.now();

const ESTIMATORS = [
  { id: 'positive', label: 'FAVOR+', kernel: 'positive', sampling: 'orthogonal' },
  { id: 'simplex', label: 'FAVOR+ simplex', kernel: 'positive', sampling: 'simplex' },
  { id: 'structured', label: 'FAVOR+ SORF', kernel: 'positive', sampling: 'structured' },
  { id: 'oprf', label: 'OPRF', kernel: 'oprf', sampling: 'orthogonal' },
  { id: 'sderf', label: 'SDERF', kernel: 'sderf', sampling: 'orthogonal' },
  { id: 'aderf', label: 'ADERF', kernel: 'aderf', sampling: 'orthogonal' },
];
// The per-head table shows the kernels; the per-layer table adds the positive kernel's projections.
const HEAD_KERNELS = ['positive', 'oprf', 'sderf', 'aderf'];
const FEATURES = 64, DIM = 32;
const BAND = 256;  // rows per band of a rotary model's windows

const entropyBits = (a, rows) => {
  let e = 0;
  for (const p of a) if (p > 0) e -= p * Math.log2(p);
  return e / rows;
};
const meanLength = (x, scale) => {
  let sum = 0;
  for (let i = 0; i < x.length; i += DIM) {
    let s = 0;
    for (let t = i; t < i + DIM; t++) s += x[t] * x[t];
    sum += Math.sqrt(s);
  }
  return (sum / (x.length / DIM)) * scale;
};

const perModel = {};
for (const record of manifest.models) {
  const model = await loadModel(favor, record.name);
  const H = model.heads, L = model.context, cells = model.layers * H;
  const windows = Math.floor(characters / L);
  const zeros = () => new Float64Array(cells);
  const r = {
    windows, L, layers: model.layers, heads: H, own: model.projections.length > 0,
    kl: Object.fromEntries(ESTIMATORS.map((e) => [e.id, zeros()])),
    entropy: zeros(), favorEntropy: zeros(), rho: zeros(), spread: zeros(), q: zeros(), k: zeros(), ownKL: zeros(), ownEntropy: zeros(),
  };
  const maps = Object.fromEntries(ESTIMATORS.map((e) => [e.id, Array.from({ length: seeds }, (_, s) => Array.from({ length: model.layers }, (_, l) =>
    favor.createFeatureMap({ dim: DIM, features: FEATURES, kernel: e.kernel, sampling: e.sampling, seed: 100 * s + l })))]));
  const own = r.own ? model.exportedFeatureMaps() : [];
  const scale = DIM ** -0.25;
  const rotary = model.config.rotary ? new RotaryTable(DIM, model.config.rotary.base) : null;
  const bands = L / BAND, perBand = () => new Float64Array(bands);
  if (rotary) r.bands = { rotated: perBand(), unrotated: perBand(), kl: perBand() };
  // adds the per-row values x [H, L] of one layer to the band sums (a mean over windows, layers and heads)
  const addBands = (sums, x) => { for (let i = 0; i < x.length; i++) sums[Math.floor((i % L) / BAND)] += x[i] / (BAND * windows * cells); };
  for (let w = 0; w < windows; w++) {
    const { qk } = model.forward(held.slice(w * L, (w + 1) * L), { method: 'exact' }, { capture: true });
    qk.forEach(({ q, k }, layer) => {
      const head = (x, h) => ({ data: x.data.subarray(h * L * L, (h + 1) * L * L), dims: [L, L] });
      const rows = (x, h) => ({ data: x.data.subarray(h * L * DIM, (h + 1) * L * DIM), dims: [1, L, DIM] });
      const A = favor.attentionMatrix(q, k, { causal: true });
      if (rotary) {
        addBands(r.bands.rotated, causalKeySpreadRows(k));
        addBands(r.bands.unrotated, causalKeySpreadRows(rotary.unrotate({ data: Float32Array.from(k.data), dims: k.dims }, 0)));
      }
      for (let h = 0; h < H; h++) {
        const c = layer * H + h;
        r.rho[c] += oprfRho(rows(q, h), rows(k, h)) / windows;
        r.spread[c] += causalKeySpread(rows(k, h))[0] / windows;
        r.entropy[c] += entropyBits(head(A, h).data, L) / windows;
        r.q[c] += meanLength(rows(q, h).data, scale) / windows;
        r.k[c] += meanLength(rows(k, h).data, scale) / windows;
      }
      for (const { id } of ESTIMATORS) {
        for (const seedMaps of maps[id]) {
          const Ahat = favor.favorAttentionMatrix(q, k, { featureMap: seedMaps[layer], causal: true });
          for (let h = 0; h < H; h++) {
            r.kl[id][layer * H + h] += favor.compare(head(A, h), head(Ahat, h)).meanRowKL / windows / seeds;
            if (id === 'positive') r.favorEntropy[layer * H + h] += entropyBits(head(Ahat, h).data, L) / windows / seeds;
            if (id === 'positive' && rotary) {
              // each band's rows of the head: [BAND, L] (the zeros past the diagonal weigh nothing in A)
              const band = (x, b) => ({ data: head(x, h).data.subarray(b * BAND * L, (b + 1) * BAND * L), dims: [BAND, L] });
              for (let b = 0; b < bands; b++) r.bands.kl[b] += favor.compare(band(A, b), band(Ahat, b)).meanRowKL / (windows * cells * seeds);
            }
          }
        }
      }
      if (r.own) {
        const Ahat = favor.favorAttentionMatrix(q, k, { featureMap: own[layer], causal: true });
        for (let h = 0; h < H; h++) {
          r.ownKL[layer * H + h] += favor.compare(head(A, h), head(Ahat, h)).meanRowKL / windows;
          r.ownEntropy[layer * H + h] += entropyBits(head(Ahat, h).data, L) / windows;
        }
      }
    });
  }
  [...Object.values(maps).flat(2), ...own].forEach((f) => f.dispose());
  perModel[record.name] = r;
  console.error(`${record.name}: ${windows} windows of ${L} done`);
}

const minutes = (performance.now() - t0) / 60000;
const names = manifest.models.map((m) => m.name);
const g = (x) => x.toPrecision(2);
const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
const range = (xs) => `${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)}`;
const spreadRange = (xs) => `${g(Math.min(...xs))}–${g(Math.max(...xs))}`;
// Pearson's correlation of the logs, over every model's heads
const logCorrelation = (xs, ys) => {
  const lx = xs.map(Math.log), ly = ys.map(Math.log), n = lx.length;
  const mx = mean(lx), my = mean(ly);
  let sxy = 0, sxx = 0, syy = 0;
  for (let i = 0; i < n; i++) sxy += (lx[i] - mx) * (ly[i] - my), sxx += (lx[i] - mx) ** 2, syy += (ly[i] - my) ** 2;
  return sxy / Math.sqrt(sxx * syy);
};
const md = [
  `Which heads the estimators approximate badly: mean row KL(A‖Â) per layer (rows) and head (columns) of FAVOR+ / OPRF / FAVOR# SDERF / FAVOR# ADERF, ` +
  `orthogonal, m = ${FEATURES} (a fresh W per layer and seed, mean over ${seeds} seeds; OPRF's and FAVOR#'s parameters from each window's q and k) on each head's real q and k ` +
  `(the exact forward pass; rotated, for the rotary models); in brackets the exact rows' mean entropy in bits (low: sharp attention) and ` +
  `ρ = mean over (i, j) of ‖q̃ᵢ + k̃ⱼ‖² (FAVOR+'s variance grows like e^{‖q̃ + k̃‖²}) and σ²ₖ, the spread of the keys each query sees ` +
  `(the mean over rows i of the mean ‖k̃ⱼ − k̄ᵢ‖² over its keys j ≤ i), over the first ${characters.toLocaleString('en-US')} held-out characters ` +
  `in windows of each model's training context. \`npm run eval:heads\` (model/eval-heads.mjs), ${os.cpus()[0]?.model ?? 'CPU'}, 1 thread, ${minutes.toFixed(1)} min.`,
];
for (const name of names) {
  const { kl, entropy, rho, spread, layers, heads } = perModel[name];
  md.push('', `| ${name} | ${Array.from({ length: heads }, (_, h) => `head ${h}`).join(' | ')} |`, `|---|${Array.from({ length: heads }, () => '---').join('|')}|`);
  for (let l = 0; l < layers; l++) {
    md.push(`| layer ${l} | ${Array.from({ length: heads }, (_, h) => `${HEAD_KERNELS.map((kernel) => g(kl[kernel][l * heads + h])).join(' / ')} ` +
      `(${entropy[l * heads + h].toFixed(1)}; ${rho[l * heads + h].toFixed(0)}; ${g(spread[l * heads + h])})`).join(' | ')} |`);
  }
}
md.push('', `The same per layer, mean over its heads, with the positive kernel's simplex and structured (SORF) projections beside orthogonal ` +
  `(m = ${FEATURES}, mean over the seeds, the same windows):`, '',
  `| model, layer | ${ESTIMATORS.map((e) => e.label).join(' | ')} |`, `|---|${ESTIMATORS.map(() => '---').join('|')}|`);
for (const name of names) {
  const { kl, layers, heads } = perModel[name];
  for (let l = 0; l < layers; l++) {
    md.push(`| ${name}, layer ${l} | ${ESTIMATORS.map((e) => g(mean(Array.from(kl[e.id].slice(l * heads, (l + 1) * heads))))).join(' | ')} |`);
  }
}
md.push('', `Each model's heads together (mean over its ${perModel[names[0]].layers * perModel[names[0]].heads} heads; ρ and σ²ₖ: the range over heads): ` +
  `the lengths of its q̃ and k̃, ρ, the spread σ²ₖ of the keys a query sees, how sharp its exact rows are and how sharp FAVOR+'s (orthogonal, m = ${FEATURES}, fresh W), ` +
  `and FAVOR+'s mean row KL(A‖Â); for a model trained with FAVOR+, the same with the W of its last training draw.`, '',
  '| model (context) | ‖q̃‖ | ‖k̃‖ | ρ | σ²ₖ | exact rows\' entropy (bits) | FAVOR+ rows\' entropy | KL(A‖Â), FAVOR+ | with its own W: entropy, KL |',
  '|---|---|---|---|---|---|---|---|---|');
for (const name of names) {
  const r = perModel[name];
  const m = (x) => mean(Array.from(x));
  md.push(`| ${name} (${r.L}) | ${m(r.q).toFixed(1)} | ${m(r.k).toFixed(1)} | ${range(Array.from(r.rho))} | ${spreadRange(Array.from(r.spread))} | ${m(r.entropy).toFixed(2)} | ` +
    `${m(r.favorEntropy).toFixed(2)} | ${g(m(r.kl.positive))} | ${r.own ? `${m(r.ownEntropy).toFixed(2)}, ${g(m(r.ownKL))}` : '—'} |`);
}
const every = (key) => names.flatMap((n) => Array.from(perModel[n][key]));
const favorKL = names.flatMap((n) => Array.from(perModel[n].kl.positive));
md.push('', `Over all ${favorKL.length} heads, the logarithm of FAVOR+'s KL (m = ${FEATURES}) correlates with that of σ²ₖ at ` +
  `${logCorrelation(favorKL, every('spread')).toFixed(2)}, with that of ρ at ${logCorrelation(favorKL, every('rho')).toFixed(2)} ` +
  `and with the exact rows' entropy at ${logCorrelation(favorKL, every('entropy')).toFixed(2).replace('-', '−')}.`);
const rotaryNames = names.filter((n) => perModel[n].bands);
if (rotaryNames.length) {
  const L = perModel[rotaryNames[0]].L, bandLabels = Array.from({ length: L / BAND }, (_, b) => `rows ${(b * BAND).toLocaleString('en-US')}–${((b + 1) * BAND - 1).toLocaleString('en-US')}`);
  md.push('', `The rotary models by bands of rows of their windows of ${L.toLocaleString('en-US')} (row i sees keys 0 to i), mean over every head: σ²ₖ of the keys ` +
    `as attention sees them, rotated by their positions, and with the rotation undone, and FAVOR+'s mean row KL(A‖Â) (orthogonal, m = ${FEATURES}, mean over the seeds).`, '',
  `| model | ${bandLabels.join(' | ')} |`, `|---|${bandLabels.map(() => '---').join('|')}|`);
  for (const name of rotaryNames) {
    const { rotated, unrotated, kl } = perModel[name].bands;
    md.push(`| ${name}: σ²ₖ, rotated | ${Array.from(rotated, g).join(' | ')} |`, `| ${name}: σ²ₖ, rotation undone | ${Array.from(unrotated, g).join(' | ')} |`,
      `| ${name}: KL(A‖Â), FAVOR+ | ${Array.from(kl, g).join(' | ')} |`);
  }
}
const out = md.join('\n');
writeFileSync(new URL('./heads-results.md', import.meta.url), `${out}\n`);
console.log(out);
