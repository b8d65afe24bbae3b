// What the page's two studies draw and say (demo/src/study-plots.js), read against the points
// they were given: the curves' means and bands are the seeds' statistics, Lemma 2's line is c/m
// for the kernels it covers, the crossover of two power laws lands where they cross, the
// extrapolated exact time is ∝ L², and each note says what the run had, and only that.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { crossover, curvesOf, duration, errorNote, errorSeries, speedNote, speedSeries, stats } from '../../demo/src/study-plots.js';

const noGaps = (text) => assert.doesNotMatch(text, /undefined|NaN|null|\[object/, text);

test('stats: the finite values\' mean and ±1 sample s.d., the band\'s lower edge kept above 0', () => {
  assert.deepEqual(stats([1, 2, 3, NaN, Infinity]), { mean: 2, lo: 1, hi: 3, n: 3 });
  const wide = stats([0.1, 10]);
  assert.equal(wide.mean, 5.05);
  assert.equal(wide.lo, 0.1, 'mean − s.d. < 0: the smallest value');
  assert.ok(Math.abs(wide.hi - (5.05 + Math.SQRT2 * 4.95)) < 1e-12);
  assert.equal(stats([NaN, -Infinity]), null);
});

test('crossover: where two power laws cross, interpolated in log L; at the start, or never', () => {
  const Ls = [128, 256, 512, 1024, 2048, 4096, 8192];
  // exact ∝ L², FAVOR+ ∝ L, equal at L = 3000: log(exact/favor) = log(L/3000) is linear in log L
  const points = Ls.map((L) => ({ L, exact: L * L * 1e-6, favor: 3000 * L * 1e-6 }));
  assert.ok(Math.abs(crossover(points).L - 3000) < 1e-6, String(crossover(points).L));
  assert.equal(crossover(points).before, undefined);
  // exact stopped past its budget (null): the crossover comes from the points it has
  assert.ok(Math.abs(crossover(points.map((p) => (p.L > 4096 ? { ...p, exact: null } : p))).L - 3000) < 1e-6);
  assert.deepEqual(crossover(points.map((p) => ({ ...p, favor: p.favor / 100 }))), { L: 128, before: true });
  assert.equal(crossover(points.map((p) => ({ ...p, favor: p.favor * 100 }))), null);
});

test('the error study\'s curves: each series\' seeds as mean and band; Lemma 2 as c/m for the kernels it covers', () => {
  const params = {
    series: [{ kernel: 'positive', sampling: 'iid' }, { kernel: 'oprf', sampling: 'orthogonal' }, { kernel: 'soft-vq', sampling: 'k-means' }],
    kernels: ['positive', 'oprf', 'soft-vq'], ms: [1, 2, 4, 8], temperature: 0.5, L: 64, d: 16, scale: 1, pattern: 'gaussian',
    causal: false, dataSeed: 0, seeds: 3,
  };
  const points = new Map([
    ['positive|iid', [{ m: 1, values: { kernelMSE: [4, 6, 8] } }, { m: 2, values: { kernelMSE: [2, 3, 4] } }]],
    ['soft-vq|k-means', [{ m: 1, values: { kernelMSE: [NaN, NaN] } }, { m: 4, values: { kernelMSE: [1, 1] } }]],
  ]);
  const theory = { positive: 10, hyperbolic: 5, trigonometric: NaN };
  const series = errorSeries({ params, points, theory }, 'kernelMSE');
  assert.deepEqual(series.map((s) => s.label), ['positive (FAVOR+), iid', 'oprf (FAVOR++), orthogonal', 'soft VQ (T = 0.5), k-means',
    'Lemma 2, positive, iid: (1/m)·mean exp(‖x+y‖²)·SM(x,y)²·(1 − exp(−‖x+y‖²))'],
  'Lemma 2 only for kernels of the run with a finite constant');
  const [positive, oprf, soft, lemma] = series;
  assert.deepEqual(positive.points.map(([m, y]) => [m, y]), [[1, 6], [2, 3]]);
  assert.deepEqual(positive.band, [[1, 4, 8], [2, 2, 4]]);
  assert.match(positive.points[0][2], /m = 1: mean 6(\.0+)? over 3 seeds/);
  assert.deepEqual(oprf.points, [], 'no points yet');
  assert.deepEqual(soft.points.map(([m, y]) => [m, y]), [[4, 1]], 'an m whose seeds all failed is left out');
  assert.deepEqual(lemma.points, params.ms.map((m) => [m, 10 / m]));
  const kl = new Map([...points].map(([key, pts]) => [key, pts.map(({ m, values }) => ({ m, values: { meanRowKL: values.kernelMSE } }))]));
  assert.equal(errorSeries({ params, points: kl, theory }, 'meanRowKL').length, 3, 'Lemma 2 is about the kernel MSE');
  assert.deepEqual(errorSeries({ params: null, points, theory }, 'kernelMSE'), []);
  // relu has no kernel MSE: no curve (nor a line in the key above the legend), its other measures do
  const withRelu = { ...params, series: [...params.series, { kernel: 'relu', sampling: 'simplex' }], kernels: [...params.kernels, 'relu'] };
  const reluPoints = new Map([...kl, ['relu|simplex', [{ m: 1, values: { meanRowKL: [1, 2], kernelMSE: [] } }]]]);
  assert.deepEqual(curvesOf(withRelu, 'kernelMSE'), params.series);
  assert.deepEqual(curvesOf(withRelu, 'meanRowKL'), withRelu.series);
  assert.equal(errorSeries({ params: withRelu, points: new Map([...points, ['relu|simplex', [{ m: 1, values: { kernelMSE: [] } }]]]), theory }, 'kernelMSE')
    .some((x) => /relu/.test(x.label)), false);
  assert.deepEqual(errorSeries({ params: withRelu, points: reluPoints, theory }, 'meanRowKL').at(-1).points.map(([m, y]) => [m, y]), [[1, 1.5]]);
});

test('the error study\'s note says what the run had, and only that', () => {
  const base = { L: 64, d: 16, scale: 0.5, pattern: 'gaussian', causal: true, dataSeed: 2, seeds: 4 };
  const note = (kernels, metric = 'kernelMSE', over = {}) =>
    errorNote({ params: { ...base, kernels, ...over }, theory: { positive: 1 }, pairs: 100, queryRows: 10, keyRows: 10 }, metric);
  for (const kernels of [['positive'], ['relu'], ['oprf', 'aderf'], ['vq', 'soft-vq'], ['positive', 'relu', 'sderf', 'vq']]) {
    for (const metric of ['kernelMSE', 'meanRowKL']) {
      const text = note(kernels, metric);
      noGaps(text);
      assert.match(text, /L = 64, d = 16, input scale 0\.50, Gaussian, causal, input seed 2/);
      assert.match(text, /mean over 4 feature seeds/);
      const mse = metric === 'kernelMSE';
      assert.equal(/over 100 \(i, j\) pairs \(10 query rows × 10 key rows, j ≤ i\)/.test(text), mse, `${kernels} ${metric}`);
      assert.equal(/Black: Lemma 2/.test(text), mse && kernels.includes('positive'), `${kernels} ${metric}`);
      assert.equal(/relu is not a softmax estimator/.test(text), mse && kernels.includes('relu'), `${kernels} ${metric}`);
      const fitted = kernels.filter((k) => ['oprf', 'sderf', 'aderf'].includes(k));
      assert.equal(text.includes(`No theory curve for ${fitted.join(', ')}`), mse && fitted.length > 0, `${kernels} ${metric}`);
      assert.equal(/VQ curves: a k-means codebook/.test(text), kernels.some((k) => k.endsWith('vq')), `${kernels} ${metric}`);
      assert.equal(/KL\(Aᵢ ‖ Âᵢ\), measured by the library \(favor\.compare\)/.test(text), !mse);
    }
  }
  // each measure of the normalized matrices named for what it is
  for (const [metric, says] of [['mse', /the mean of \(A − Â\)² over the entries .*favor\.compare/], ['relFrobenius', /‖A − Â‖ \/ ‖A‖.*favor\.compare/],
    ['maxAbs', /the largest \|A − Â\| .*favor\.compare/], ['outputRelError', /the output, ‖ÂV − AV‖ \/ ‖AV‖.*favor\.outputRelativeError/]]) {
    const text = note(['positive'], metric);
    noGaps(text);
    assert.match(text, says, metric);
    assert.doesNotMatch(text, /Lemma 2|undefined/, metric);
  }
  const model = note(['positive'], 'kernelMSE', { pattern: 'model', model: 'softmax', heads: 'all', L: 256, d: 32 });
  assert.match(model, /every head \(16\) of the model softmax on the text \(L = 256, d = 32, causal\); no Lemma 2 line/);
  assert.match(model, /4 feature seeds × every head, each seed its own W;/);
  assert.match(note(['positive'], 'kernelMSE', { pattern: 'model', model: 'performer', heads: [2, 1] }), /layer 2, head 1 of the model performer/);
  assert.equal(errorNote({ params: null }, 'kernelMSE'), '');
});

test('the speed study: the crossover drawn and said, the exact time extrapolated ∝ L² once the run is done', () => {
  const Ls = [128, 256, 512, 1024, 2048, 4096];
  const params = { d: 64, m: 256, sampling: 'orthogonal', causal: false, Ls };
  // exact measured up to 1024 (its budget), FAVOR+ at every L; they cross at L = 600
  const points = Ls.map((L) => ({ L, exact: L <= 1024 ? L * L * 1e-4 : null, favor: 600 * L * 1e-4 }));
  const running = speedSeries({ params, points, done: false }, 64);
  assert.equal(running.series.length, 2, 'no extrapolation while the run goes on');
  assert.deepEqual(running.series[0].points.map(([L]) => L), [128, 256, 512, 1024]);
  assert.equal(running.series[1].label, 'FAVOR+ (O(L·m·d), m = 256)', "the run's m, not the page's");
  assert.equal(running.vlines.length, 1);
  assert.ok(Math.abs(running.vlines[0].x - 600) < 1e-6);
  assert.equal(running.vlines[0].label, 'FAVOR+ faster from L ≈ 600');
  const done = speedSeries({ params, points, done: true }, 64);
  const ext = done.series[2];
  assert.equal(ext.label, 'exact, extrapolated ∝ L²');
  for (const [L, y] of ext.points) assert.ok(Math.abs(y - L * L * 1e-4) < 1e-9 * y, `${L}: ${y}`);
  assert.deepEqual(ext.points.map(([L]) => L), [1024, 2048, 4096]);
  const text = speedNote({ params, points, done: true });
  noGaps(text);
  assert.match(text, /d = 64, m = 256, orthogonal, bidirectional/);
  assert.match(text, /FAVOR\+ overtakes exact attention at L ≈ 600\./);
  assert.ok(text.endsWith(`At L = 4,096: FAVOR+ ${duration(600 * 4096e-4)}; exact would take ~${duration(4096 * 4096e-4)} (extrapolated).`), text);
  assert.equal(speedSeries({ params: null, points: [], done: false }, 64).series[1].label, 'FAVOR+ (O(L·m·d), m = 64)');
  assert.equal(speedNote({ params: null, points: [] }), '');
});

test('durations read in ms, s or min', () => {
  assert.match(duration(12.5), / ms$/);
  assert.match(duration(4500), /^4\.5\d* s$/);
  assert.match(duration(180000), /^3(\.0+)? min$/);
});
