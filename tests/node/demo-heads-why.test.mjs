// Which heads are hard (demo/src/heads-why.js; model/layers.js causalKeySpread; model-view.js
// codewordMiss): the spread of the keys each query sees, and ‖q̃‖²D/d for hard and soft VQ, against
// float64 loops and on identities; Spearman's rank correlation on orders known in advance; which
// measure each kernel plots; and the page's sentence under the plot.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { loadFavor } from 'favor-attention';

import { causalKeySpread, causalKeySpreadRows } from '../../model/runner.js';
import { codewordMiss } from '../../demo/src/model-view.js';
import { predictedKL, rebalancedSpread } from '../../demo/src/dense-variance.js';
import { denseExponentialParameters, scaledMoments } from '../../demo/src/estimators.js';
import { MEASURES, headsWhyNote, measureOf, rankCorrelation, rankWords } from '../../demo/src/heads-why.js';
import { rng } from './helpers.mjs';

// mean over rows i of the mean over j <= i of ‖k̃ⱼ − k̄ᵢ‖², from its definition, in float64
function spreadByDefinition(k, H, L, d, scale) {
  const out = [];
  for (let h = 0; h < H; h++) {
    let total = 0;
    for (let i = 0; i < L; i++) {
      const mean = new Float64Array(d);
      for (let j = 0; j <= i; j++) for (let c = 0; c < d; c++) mean[c] += k[(h * L + j) * d + c] / (i + 1);
      let s = 0;
      for (let j = 0; j <= i; j++) for (let c = 0; c < d; c++) s += (k[(h * L + j) * d + c] - mean[c]) ** 2;
      total += (scale * s) / (i + 1);
    }
    out.push(total / L);
  }
  return out;
}

test('causalKeySpread: the definition in float64, per head, with the default scale 1/√d and another', () => {
  const g = rng(11);
  for (const [H, L, d] of [[1, 1, 4], [2, 17, 8], [4, 64, 32]]) {
    const k = Float32Array.from({ length: H * L * d }, () => 3 * g.normal() + 1);
    for (const scale of [undefined, 0.25]) {
      const got = causalKeySpread({ data: k, dims: [H, L, d] }, scale);
      const want = spreadByDefinition(k, H, L, d, scale ?? 1 / Math.sqrt(d));
      assert.equal(got.length, H);
      // one pass of running sums against two: both in double, from float32 inputs of size ~3
      for (let h = 0; h < H; h++) assert.ok(Math.abs(got[h] - want[h]) <= 1e-9 * Math.max(1, want[h]), `${[H, L, d, scale, h]}: ${got[h]} against ${want[h]}`);
    }
  }
});

test('causalKeySpread: identical keys have none; two keys ±a alternate to a known value', () => {
  const d = 16, L = 9;
  const same = Float32Array.from({ length: L * d }, (_, x) => (x % d) * 0.5);
  assert.ok(causalKeySpread({ data: same, dims: [1, L, d] })[0] < 1e-9);
  // keys ±a e₁: a row of n keys has mean a (n odd: 1/n, n even: 0) and mean square a², so its
  // spread is a²(1 − 1/n²) for odd n and a² for even n, times the scale.
  const a = 2, k = new Float32Array(L * d);
  for (let i = 0; i < L; i++) k[i * d] = i % 2 ? -a : a;
  let want = 0;
  for (let n = 1; n <= L; n++) want += a * a * (n % 2 ? 1 - 1 / (n * n) : 1) / L;
  assert.ok(Math.abs(causalKeySpread({ data: k, dims: [1, L, d] }, 1)[0] - want) < 1e-12);
});

test('causalKeySpreadRows: each row\'s spread from its definition; causalKeySpread is their mean', () => {
  const g = rng(14);
  const [H, L, d] = [2, 30, 6];
  const k = Float32Array.from({ length: H * L * d }, () => g.normal());
  const rows = causalKeySpreadRows({ data: k, dims: [H, L, d] });
  const spread = causalKeySpread({ data: k, dims: [H, L, d] });
  for (let h = 0; h < H; h++) {
    assert.equal(rows[h * L], 0, 'the first row sees one key');
    let total = 0;
    for (let i = 0; i < L; i++) {
      const mean = new Float64Array(d);
      for (let j = 0; j <= i; j++) for (let t = 0; t < d; t++) mean[t] += k[(h * L + j) * d + t] / (i + 1);
      let want = 0;
      for (let j = 0; j <= i; j++) for (let t = 0; t < d; t++) want += (k[(h * L + j) * d + t] - mean[t]) ** 2 / Math.sqrt(d) / (i + 1);
      assert.ok(Math.abs(rows[h * L + i] - want) <= 1e-9 * (1 + want), `${h} ${i}: ${rows[h * L + i]} against ${want}`);
      total += rows[h * L + i];
    }
    assert.ok(Math.abs(spread[h] - total / L) <= 1e-12 * spread[h]);
  }
});

// 2 heads of 40 queries (twice the keys' scale), keys and 5 codewords in d = 8, from `seed`;
// args: codewordMiss's q, k and codebook.
function codebookCase(seed) {
  const g = rng(seed);
  const [H, L, d, c] = [2, 40, 8, 5];
  const q = Float32Array.from({ length: H * L * d }, () => 2 * g.normal());
  const k = Float32Array.from({ length: H * L * d }, () => g.normal());
  const words = Float32Array.from({ length: H * c * d }, () => g.normal());
  return { H, L, d, c, q, k, words, args: [{ data: q, dims: [H, L, d] }, { data: k, dims: [H, L, d] }, { data: words, dims: [H, c, d] }] };
}

test('codewordMiss: ‖q̃‖²·D/d from a float64 loop over the nearest codewords; none where every key is a codeword', async () => {
  const favor = await loadFavor({ threads: 1 });
  const { H, L, d, c, q, k, words, args } = codebookCase(12);
  const got = codewordMiss(favor, ...args);
  for (let h = 0; h < H; h++) {
    let distortion = 0, length = 0;
    for (let j = 0; j < L; j++) {
      let best = Infinity;
      for (let a = 0; a < c; a++) {
        let e = 0;
        for (let t = 0; t < d; t++) e += (k[(h * L + j) * d + t] - words[(h * c + a) * d + t]) ** 2;
        best = Math.min(best, e);
      }
      distortion += best / Math.sqrt(d) / L;
      for (let t = 0; t < d; t++) length += q[(h * L + j) * d + t] ** 2 / Math.sqrt(d) / L;
    }
    assert.ok(Math.abs(got[h] - (length * distortion) / d) <= 1e-9 * got[h], `${h}: ${got[h]} against ${(length * distortion) / d}`);
  }
  // the keys themselves as the codebook: nothing missed
  const own = codewordMiss(favor, { data: q, dims: [H, L, d] }, { data: k, dims: [H, L, d] }, { data: k, dims: [H, L, d] });
  assert.ok(own.every((x) => x === 0));
});

test('codewordMiss for soft VQ: ‖q̃‖²·D/d to the responsibility-weighted codewords, from a float64 loop; at a small temperature, hard VQ\'s', async () => {
  const favor = await loadFavor({ threads: 1 });
  const { H, L, d, c, q, k, words, args } = codebookCase(13);
  for (const T of [0.5, 1, 4]) {
    const got = codewordMiss(favor, ...args, { temperature: T });
    for (let h = 0; h < H; h++) {
      let distortion = 0, length = 0;
      for (let j = 0; j < L; j++) {
        const key = (t) => k[(h * L + j) * d + t], word = (a, t) => words[(h * c + a) * d + t];
        // responsibilities softmax(−‖k̃ − c̃‖²/(2T)), k̃ = k/∜d
        const logits = Array.from({ length: c }, (_, a) => {
          let e = 0;
          for (let t = 0; t < d; t++) e += (key(t) - word(a, t)) ** 2;
          return -e / Math.sqrt(d) / (2 * T);
        });
        const top = Math.max(...logits), w = logits.map((x) => Math.exp(x - top)), z = w.reduce((a, b) => a + b);
        for (let t = 0; t < d; t++) {
          let mean = 0;
          for (let a = 0; a < c; a++) mean += (w[a] / z) * word(a, t);
          distortion += (mean - key(t)) ** 2 / Math.sqrt(d) / L;
          length += q[(h * L + j) * d + t] ** 2 / Math.sqrt(d) / L;
        }
      }
      // float32 attention weights and codeword means: a relative error of a few 1e-6 per term
      const want = (length * distortion) / d;
      assert.ok(Math.abs(got[h] - want) <= 1e-4 * want, `T = ${T}, head ${h}: ${got[h]} against ${want}`);
    }
  }
  // as T → 0 the responsibilities pick the nearest codeword: hard VQ's measure
  const hard = codewordMiss(favor, ...args), cold = codewordMiss(favor, ...args, { temperature: 1e-4 });
  for (let h = 0; h < H; h++) assert.ok(Math.abs(cold[h] - hard[h]) <= 1e-4 * hard[h], `${cold[h]} against ${hard[h]}`);
  // and as T grows, every key is replaced by nearly the same mean codeword: D grows
  const warm = codewordMiss(favor, ...args, { temperature: 1e4 });
  for (let h = 0; h < H; h++) assert.ok(warm[h] > hard[h], `${warm[h]} against ${hard[h]}`);
});

// ADERF's features are OPRF's of Ψq̃ and Ψ⁻ᵀk̃, with Ψ such that both have the same second moment
// (Ψq̃·Ψ⁻ᵀk̃ = q̃·k̃); its measure is the spread of the rebalanced keys.
test('rebalancedSpread: σ²ₖ of Ψ⁻ᵀk̃ from its definition; Ψ equalizes the moments and keeps the scores; the same under q/c, ck; σ²ₖ itself where q and k have one moment', () => {
  const g = rng(5), H = 2, L = 40, d = 8, root = Math.pow(d, -0.25);
  // keys and queries of different scales and shapes per direction
  const q = Float32Array.from({ length: H * L * d }, (_, x) => g.normal() * (0.5 + (x % d) / 4));
  const k = Float32Array.from({ length: H * L * d }, (_, x) => g.normal() * (2 - (x % d) / 5) + 0.3);
  const got = rebalancedSpread({ data: q, dims: [H, L, d] }, { data: k, dims: [H, L, d] });
  for (let h = 0; h < H; h++) {
    const qh = q.subarray(h * L * d, (h + 1) * L * d), kh = k.subarray(h * L * d, (h + 1) * L * d);
    const { query, key } = denseExponentialParameters('aderf', scaledMoments(qh, kh, L, L, d, root), d);
    const map = (T, x, i) => Array.from({ length: d }, (_, a) => { let s = 0; for (let b = 0; b < d; b++) s += T[a * d + b] * x[i * d + b] * root; return s; });
    const u = Array.from({ length: L }, (_, i) => map(query, qh, i)), y = Array.from({ length: L }, (_, i) => map(key, kh, i));
    // equal second moments (up to the core's ridge of 1e-6), scores kept
    for (let a = 0; a < d; a++) {
      for (let b = 0; b < d; b++) {
        let mu = 0, my = 0;
        for (let i = 0; i < L; i++) { mu += u[i][a] * u[i][b] / L; my += y[i][a] * y[i][b] / L; }
        assert.ok(Math.abs(mu - my) < 1e-5, `head ${h}, (${a}, ${b}): ${mu} against ${my}`);
      }
    }
    for (const [i, j] of [[0, 0], [3, 17], [39, 1]]) {
      let score = 0, mappedScore = 0;
      for (let c = 0; c < d; c++) { score += qh[i * d + c] * kh[j * d + c] * root * root; mappedScore += u[i][c] * y[j][c]; }
      assert.ok(Math.abs(score - mappedScore) < 1e-6 * (1 + Math.abs(score)), `${score} against ${mappedScore}`);
    }
    const want = spreadByDefinition(Float64Array.from(y.flat()), 1, L, d, 1)[0];
    assert.ok(Math.abs(got[h] - want) <= 1e-9 * want, `head ${h}: ${got[h]} against ${want}`);
  }
  // q/c and ck score alike, and so draw the same features: the same σ²ₖ′ (but for the ridge of 1e-6
  // of both moments' mean eigenvalue, which weighs on the shrunk queries' moment c⁴ times as much:
  // measured 4e-5); σ²ₖ grows by c²
  const c = 3, scaled = rebalancedSpread({ data: q.map((x) => x / c), dims: [H, L, d] }, { data: k.map((x) => x * c), dims: [H, L, d] });
  const spread = causalKeySpread({ data: k, dims: [H, L, d] }), spreadScaled = causalKeySpread({ data: k.map((x) => x * c), dims: [H, L, d] });
  for (let h = 0; h < H; h++) {
    assert.ok(Math.abs(scaled[h] - got[h]) < 1e-3 * got[h], `head ${h}: ${scaled[h]} against ${got[h]}`);
    assert.ok(Math.abs(spreadScaled[h] - c * c * spread[h]) < 1e-5 * spreadScaled[h]);
  }
  // queries with the keys' second moment: Ψ = I
  const same = rebalancedSpread({ data: k, dims: [H, L, d] }, { data: k, dims: [H, L, d] });
  for (let h = 0; h < H; h++) assert.ok(Math.abs(same[h] - spread[h]) < 1e-5 * spread[h], `head ${h}: ${same[h]} against ${spread[h]}`);
});

test('which measure each kernel plots: σ²ₖ for positive, hyperbolic and OPRF features and Performer as soft VQ, KL₂ for SDERF, σ²ₖ′ for ADERF, σ²ᵣ for soft VQ and for hard VQ with fewer codewords than keys, none for the others', () => {
  const heads = [{ spread: 2, residual: 0.5 }, { spread: 3, residual: 0.1 }];
  // Performer as soft VQ is positive features with orthogonal-fixed W; OPRF's A leaves each feature's factor as it is
  for (const kernel of ['positive', 'hyperbolic', 'performer-vq', 'oprf']) assert.equal(measureOf(kernel, heads), MEASURES.spread, kernel);
  // trigonometric and relu are not positive estimates
  for (const kernel of ['trigonometric', 'relu']) assert.equal(measureOf(kernel, heads), null, kernel);
  // ADERF: its rebalanced keys' spread, where every head has one
  assert.equal(measureOf('aderf', heads.map((o, i) => ({ ...o, rebalanced: [4, 0.5][i] }))), MEASURES.rebalanced);
  assert.equal(measureOf('aderf', heads), null, 'no σ²ₖ′: not plotted');
  assert.equal(MEASURES.rebalanced.value({ rebalanced: 0.7 }), 0.7);
  // SDERF: its second-order KL₂, where every head has one
  assert.equal(measureOf('sderf', heads.map((o, i) => ({ ...o, predicted: [0.1, 0.02][i] }))), MEASURES.predicted);
  assert.equal(measureOf('sderf', heads), null, 'no KL₂: not plotted');
  assert.equal(measureOf('sderf', heads.map((o, i) => ({ ...o, predicted: [0.1, Infinity][i] }))), null, 'KL₂ overflowed');
  assert.equal(MEASURES.predicted.value({ predicted: 0.3 }), 0.3);
  assert.equal(measureOf('vq', heads), MEASURES.residual);
  assert.equal(measureOf('soft-vq', heads), MEASURES.softResidual);
  assert.equal(measureOf('vq', [{ spread: 2 }, { spread: 3 }]), null, 'a codeword for every key: Â = A, nothing to explain');
  assert.equal(MEASURES.residual.value(heads[0]), 0.5);
  assert.equal(MEASURES.softResidual.value(heads[1]), 0.1);
});

test('rankCorrelation: the same order 1, reversed −1, any monotone map keeps it, ties share ranks, too few points NaN', () => {
  const xs = [0.3, 5, 1, 20, 7, 0.01];
  assert.equal(rankCorrelation(xs, xs), 1);
  assert.equal(rankCorrelation(xs, xs.map((x) => Math.exp(x))), 1);
  assert.equal(rankCorrelation(xs, xs.map((x) => -x)), -1);
  // ranks 1..4 against 1, 2, 2, 4 (ties at their mean rank 2.5): Pearson of the ranks
  const r = rankCorrelation([1, 2, 3, 4], [1, 2, 2, 4]);
  assert.ok(Math.abs(r - 4.5 / Math.sqrt(5 * 4.5)) < 1e-12, `${r}`);
  assert.ok(Number.isNaN(rankCorrelation([1, 2], [1, 2])));
  assert.ok(Number.isNaN(rankCorrelation([1, 2, 3], [5, 5, 5])), 'no order to follow');
});

test('a rank correlation in words that fit its sign and size', () => {
  assert.equal(rankWords(0.93), 'rank alike at 0.93');
  assert.equal(rankWords(0.6), 'rank alike at 0.60');
  assert.equal(rankWords(0.43), 'rank only loosely alike at 0.43');
  assert.equal(rankWords(0.1), 'hardly rank alike here: 0.10');
  assert.equal(rankWords(-0.24), 'hardly rank alike here: −0.24');
  assert.equal(rankWords(-0.5), 'rank in opposite orders here: −0.50');
  assert.equal(rankWords(-1), 'rank in opposite orders here: −1.00');
});

test('the sentence under the plot: what σ²ₖ is and how far the heads shown follow it', () => {
  const overview = [0.5, 2, 9, 30].map((spread, x) => ({ layer: 0, head: x, spread, errors: { meanRowKL: [0.01, 0.2, 0.1, 6][x] } }));
  const note = headsWhyNote(overview);
  assert.match(note, /σ²ₖ: how far apart the keys its queries see lie \(mean ‖k̃ⱼ − k̄‖², k̃ = k\/∜d\)/);
  assert.match(note, /over these 4 heads, σ²ₖ and the error rank alike at 0\.80 \(Spearman\)\.$/);
  assert.doesNotMatch(headsWhyNote(overview.slice(0, 2)), /rank alike/, 'two heads: no correlation to state');
  const vq = headsWhyNote(overview.map((o, x) => ({ ...o, residual: [3, 1, 2, 4][x] })), MEASURES.residual);
  assert.match(vq, /σ²ᵣ = ‖q̃‖²D\/d: D the mean ‖c̃ − k̃‖² from each key to its codeword \(k-means' distortion\)/);
  assert.match(vq, /over these 4 heads, σ²ᵣ and the error hardly rank alike here: 0\.20 \(Spearman\)\.$/);
  // a rotary model's heads carry their keys' spread before the rotation: the note says how much the rotation adds
  const turned = headsWhyNote(overview.map((o, x) => ({ ...o, unrotated: [0.2, 0.3, 0.25, 0.25][x] })));
  assert.match(turned, /\(Spearman\)\. Rotary positions turn each key by its position: with the turn undone, the keys' spread is 0\.25 on average over these heads, against 10 as attention sees them\.$/);
  assert.doesNotMatch(note, /Rotary/, 'no rotation: no sentence');
  assert.doesNotMatch(headsWhyNote(overview.map((o) => ({ ...o, unrotated: 0.2, residual: 1 })), MEASURES.residual), /Rotary/, 'only beside σ²ₖ');
  const soft = headsWhyNote(overview.map((o, x) => ({ ...o, residual: [1, 2, 3, 4][x] })), MEASURES.softResidual);
  assert.match(soft, /D the mean ‖c̄ − k̃‖² from each key to c̄, the codewords' mean weighted by its responsibilities/);
  assert.match(soft, /over these 4 heads, σ²ᵣ and the error rank alike at 0\.80 \(Spearman\)\.$/);
});

// KL₂ against the definition: SDERF's feature of iid w (D e^{Σₖ aₖwₖ² + Σₖ √(1 − 4aₖ) wₖ (T x̃)ₖ − ‖T x̃‖²/2},
// D = Πₖ (1 − 4aₖ)^¼), drawn in float64. Row 1 of two keys: for one feature, KL₂ = E_w[Var_A(ε)]/2 with
// εⱼ = f(q̃)f(k̃ⱼ)/e^{q̃·k̃ⱼ} − 1. 400,000 draws: the Monte Carlo mean of e^{q̃·k̃} is within 1 % and
// the variance within 3 % (its spread over seeds, measured: under 1 %).
test('predictedKL: SDERF\'s second-order KL is E_w[Var_A(ε)]/2m of its features drawn by definition', () => {
  const d = 2, L = 2;
  const q = { data: Float32Array.from([0.2, -0.4, 0.9, 0.3]), dims: [1, L, d] };
  const k = { data: Float32Array.from([-0.5, 0.6, 0.7, 0.1]), dims: [1, L, d] };
  const { a, query } = denseExponentialParameters('sderf', scaledMoments(q.data, k.data, L, L, d, d ** -0.25), d);
  assert.ok(a.every((x) => x < 0), `a ${a}`);
  const root = d ** -0.25, scale = 1 / Math.sqrt(d);
  const mapped = (x, i) => Array.from({ length: d }, (_, r) => query[r * d] * x[i * d] * root + query[r * d + 1] * x[i * d + 1] * root);
  const u = mapped(q.data, 1), y = [mapped(k.data, 0), mapped(k.data, 1)];
  const logD = a.reduce((s, x) => s + Math.log(1 - 4 * x) / 4, 0);
  const feature = (w, x) => Math.exp(logD + x.reduce((s, xr, r) => s + a[r] * w[r] ** 2 + Math.sqrt(1 - 4 * a[r]) * w[r] * xr - xr ** 2 / 2, 0));
  const dot = (i, j) => (q.data[i * d] * k.data[j * d] + q.data[i * d + 1] * k.data[j * d + 1]) * scale;
  const S = [Math.exp(dot(1, 0)), Math.exp(dot(1, 1))], A = [S[0] / (S[0] + S[1]), S[1] / (S[0] + S[1])];
  const r = rng(4242);
  const N = 400_000;
  let variance = 0;
  const mean = [0, 0];
  for (let t = 0; t < N; t++) {
    const w = [r.normal(), r.normal()], fq = feature(w, u);
    const e = [0, 1].map((j) => (fq * feature(w, y[j])) / S[j] - 1);
    mean[0] += e[0] + 1, mean[1] += e[1] + 1;
    const m1 = A[0] * e[0] + A[1] * e[1];
    variance += A[0] * e[0] ** 2 + A[1] * e[1] ** 2 - m1 * m1;
  }
  for (const j of [0, 1]) assert.ok(Math.abs(mean[j] / N - 1) < 0.01, `E f(q̃)f(k̃${j}) ÷ e^{q̃·k̃}: ${mean[j] / N}`);
  const want = variance / N / 2;
  for (const m of [1, 64]) {
    const got = predictedKL(q, k, { kernel: 'sderf', features: m })[0];
    assert.ok(Math.abs(got * m / want - 1) < 0.03, `m = ${m}: KL₂ ${got}, Monte Carlo ${want / m}`);
  }
  // a row with one key has no error: with a single row, no prediction
  assert.ok(Number.isNaN(predictedKL({ data: q.data.slice(0, 2), dims: [1, 1, d] }, { data: k.data.slice(0, 2), dims: [1, 1, d] }, { kernel: 'sderf', features: 1 })[0]));
});
