// What the two studies draw and say, as pure functions of what they measured (studies.js keeps
// their worker, controls and plots): the error study's curves (mean over seeds, a ±1 s.d. band,
// Lemma 2's line) and its note; the speed study's curves, where FAVOR+ overtakes exact attention,
// and its note. tests/node/demo-study-plots.test.mjs reads them against the points they describe.
import { fmt } from './colors.js';
import { patternWord } from './inputs.js';
import { MODE_NAMES, fmtT, isCodebook } from './modes.js';

// In the error study colour is the sampling mode and line and marker the kernel (VQ: its own colour).
export const SAMPLING_COLORS = { iid: '#c0392b', orthogonal: '#2f5fb3', 'orthogonal-fixed': '#2a9d55', simplex: '#e07b00', structured: '#17a2b8' };
export const KERNEL_STYLE = {
  positive: { dash: null, marker: 'circle' },
  hyperbolic: { dash: '7 3', marker: 'square' },
  trigonometric: { dash: '2 3', marker: 'triangle' },
  relu: { dash: '9 3 2 3', marker: 'diamond' },
  oprf: { dash: '4 2', marker: 'cross' },
  sderf: { dash: '1 2', marker: 'square' },
  aderf: { dash: '8 2 1 2', marker: 'triangle' },
  vq: { dash: null, marker: 'diamond', color: '#8e44ad' },
  'soft-vq': { dash: '6 2', marker: 'triangle', color: '#b8860b' },
};
export const STUDY_KERNEL_NAMES = { positive: 'positive (FAVOR+)', oprf: 'oprf (FAVOR++)', sderf: 'sderf (FAVOR#)', aderf: 'aderf (FAVOR#)' };
export const METRIC_LABELS = {
  kernelMSE: 'MSE of φ(q̃)·φ(k̃) vs exp(q̃·k̃)',
  mse: 'MSE of Â', relFrobenius: '‖A − Â‖ / ‖A‖', maxAbs: 'max |A − Â|', meanRowKL: 'mean row KL(A‖Â)',
  outputRelError: 'output relative error',
};
// What each measure of the normalized matrices is, in the note's words.
const MEASURED = {
  mse: 'the mean of (A − Â)² over the entries of the L × L matrix',
  relFrobenius: 'the relative Frobenius error ‖A − Â‖ / ‖A‖',
  maxAbs: 'the largest |A − Â| of any entry',
  meanRowKL: 'the mean over query rows i of KL(Aᵢ ‖ Âᵢ)',
  outputRelError: 'the relative error of the output, ‖ÂV − AV‖ / ‖AV‖',
};
const FITTED = ['oprf', 'sderf', 'aderf'];
const WITH_THEORY = ['positive', 'hyperbolic', 'trigonometric'];

// The finite values' mean and a band of ±1 sample s.d., its lower edge the smallest value where
// mean − s.d. <= 0 (the axis is logarithmic); null where none is finite.
export function stats(values) {
  const v = values.filter(Number.isFinite);
  if (!v.length) return null;
  const mean = v.reduce((a, b) => a + b, 0) / v.length;
  const sd = Math.sqrt(v.reduce((a, b) => a + (b - mean) ** 2, 0) / Math.max(1, v.length - 1));
  const min = Math.min(...v);
  return { mean, lo: mean - sd > 0 ? mean - sd : min, hi: mean + sd, n: v.length };
}

export const duration = (ms) => (ms < 1000 ? `${fmt(ms)} ms` : ms < 120000 ? `${fmt(ms / 1000)} s` : `${fmt(ms / 60000, 2)} min`);

// Where FAVOR+ becomes faster than exact attention, from points { L, exact, favor } in increasing
// L (exact null past its budget): the first L measured if it is faster there already
// ({ L, before: true }), else the L where the log time ratio crosses 0, interpolated linearly in
// log L between the two points around it; null where it never does.
export function crossover(points) {
  const both = points.filter((p) => p.exact !== null);
  for (let k = 0; k < both.length; k++) {
    const r = Math.log(both[k].exact / both[k].favor);
    if (r >= 0) {
      if (k === 0) return { L: both[0].L, before: true };
      const r0 = Math.log(both[k - 1].exact / both[k - 1].favor);
      const t = -r0 / (r - r0);
      return { L: Math.exp(Math.log(both[k - 1].L) + t * (Math.log(both[k].L) - Math.log(both[k - 1].L))) };
    }
  }
  return null;
}

// The (kernel, sampling) pairs of a run that have a curve of `metric`: relu features estimate
// another kernel than exp(q̃·k̃), so they have no kernel MSE.
export const curvesOf = (p, metric) => p.series.filter(({ kernel }) => !(kernel === 'relu' && metric === 'kernelMSE'));

// The error study's curves for `metric`: one per (kernel, sampling) of the run, then Lemma 2's
// lines for the kernels it covers (the kernel MSE only). study: { params, points (Map of
// "kernel|sampling" to [{ m, values }]), theory }.
export function errorSeries({ params: p, points, theory }, metric) {
  if (!p) return [];
  const series = [];
  for (const { kernel, sampling } of curvesOf(p, metric)) {
    const pts = points.get(`${kernel}|${sampling}`) ?? [];
    const line = [], band = [];
    const name = isCodebook(kernel) ? `${MODE_NAMES[kernel]}${kernel === 'soft-vq' ? ` (T = ${fmtT(p.temperature)})` : ''}, k-means`
      : `${STUDY_KERNEL_NAMES[kernel] ?? kernel}, ${sampling}`;
    for (const { m, values } of pts) {
      const s = stats(values[metric]);
      if (!s) continue;
      line.push([m, s.mean, `${name}, m = ${m}: mean ${fmt(s.mean)} over ${s.n} seeds (±1 s.d. ${fmt(s.lo)} … ${fmt(s.hi)})`]);
      band.push([m, s.lo, s.hi]);
    }
    series.push({ label: name, color: SAMPLING_COLORS[sampling], points: line, band, ...KERNEL_STYLE[kernel], width: 1.7 });
  }
  if (metric === 'kernelMSE' && theory) {
    const theoryLine = (c) => p.ms.map((m) => [m, c / m]);
    const lines = {
      positive: { label: 'Lemma 2, positive, iid: (1/m)·mean exp(‖x+y‖²)·SM(x,y)²·(1 − exp(−‖x+y‖²))', width: 2.4, dash: null },
      hyperbolic: { label: 'Lemma 2, hyperbolic, iid', width: 1.4, dash: '7 3' },
      trigonometric: { label: 'Lemma 2, trigonometric, iid', width: 1.4, dash: '2 3' },
    };
    for (const kernel of WITH_THEORY) {
      if (p.kernels.includes(kernel) && Number.isFinite(theory[kernel])) {
        series.push({ ...lines[kernel], color: '#111', points: theoryLine(theory[kernel]) });
      }
    }
  }
  return series;
}

// Under the error study's plot: the run's settings, what the line and band are, what is plotted,
// and what is not drawn and why. study: also { pairs, queryRows, keyRows, heads } (the worker's start).
export function errorNote({ params: p, theory, pairs, queryRows, keyRows, heads }, metric) {
  if (!p) return '';
  const hasCodebook = p.kernels.some(isCodebook);
  const fitted = p.kernels.filter((k) => FITTED.includes(k));
  const theoryKernels = p.kernels.filter((k) => WITH_THEORY.includes(k));
  const model = p.pattern === 'model';
  const setting = model
    ? (Array.isArray(p.heads) ? `layer ${p.heads[0]}, head ${p.heads[1]} of the model ${p.model} on the text (L = ${p.L}, d = ${p.d}, causal)`
      : `every head (${heads ?? 16}) of the model ${p.model} on the text (L = ${p.L}, d = ${p.d}, causal); no Lemma 2 line (it belongs to one input)`)
    : `L = ${p.L}, d = ${p.d}, input scale ${p.scale.toFixed(2)}, ${patternWord(p.pattern)}, ${p.causal ? 'causal' : 'bidirectional'}, input seed ${p.dataSeed}`;
  // each seed draws its own W, on a model too (a Performer's exported W is one draw, not a curve)
  const over = `${p.seeds} feature seeds${model && !Array.isArray(p.heads) ? ' × every head' : ''}${model ? ', each seed its own W' : ''}`;
  let note = `Settings of this run: ${setting}. Line: mean over ${over}; band: ±1 standard deviation ` +
    '(its lower edge drops to the smallest value where mean − s.d. ≤ 0, to stay on the log axis). ';
  if (metric === 'kernelMSE') {
    note += `Plotted: the MSE of the unnormalized kernel estimate φ(q̃ᵢ)·φ(k̃ⱼ) against exp(q̃ᵢ·k̃ⱼ), averaged over ${pairs} ` +
      `(i, j) pairs (${queryRows ?? '…'} query rows × ${keyRows ?? '…'} key rows${p.causal ? ', j ≤ i' : ''}), ` +
      'recomputed in float64 from each feature map\'s W' +
      (fitted.length ? ` (${fitted.join(', ')}: with the parameters the library fits to all of q̃ and k̃ in each call, recomputed in JS)` : '') +
      ' — not the normalized matrix Â. ' +
      (theoryKernels.length && (theory || !model) ? `Black: Lemma 2 for iid features (${theoryKernels.join(', ')}), averaged over the same pairs ` +
      '(orthogonal and simplex features should sit at or below it). The squared error is heavy-tailed (variance ∝ exp(2‖x+y‖²)): at larger input scales a few seeds ' +
      'rarely draw the large errors, so the measured mean can fall below the theory. ' : '') +
      (p.kernels.includes('relu') ? 'relu is not a softmax estimator and has no curve here. ' : '') +
      (fitted.length ? `No theory curve for ${fitted.join(', ')}: Lemma 2 is derived for the positive, hyperbolic and trigonometric features only. ` : '') +
      (hasCodebook ? ' For VQ the estimate is Σ_y R_jy exp(q̃ᵢ·c̃_y) (hard: exp(q̃ᵢ·c̃) of the nearest codeword).' : '');
  } else {
    note += `Plotted: ${MEASURED[metric]}, measured by the library (favor.${metric === 'outputRelError' ? 'outputRelativeError' : 'compare'}).`;
  }
  if (hasCodebook) {
    note += ` VQ curves: a k-means codebook of the keys per seed (m codewords), not random features; only m < L = ${p.L} ` +
      '(at m = L every key is its own codeword and hard VQ is exact). ' +
      'Performer as soft VQ is not drawn separately: it is the positive, orthogonal-fixed curve.';
  }
  return note;
}

// The speed study's exact time extrapolated ∝ L² from its last measured L, where exact attention
// stopped before the run's largest L; null otherwise.
function exactExtrapolation({ params: p, points }) {
  const last = points.filter((q) => q.exact !== null).at(-1);
  if (!last || !p || last.L >= p.Ls.at(-1)) return null;
  return { from: last, at: (L) => last.exact * (L / last.L) ** 2 };
}

// The speed study's curves and its crossover line. study: { params, points ([{ L, exact, favor }]),
// done }; m: the page's m, named before a run has its own.
export function speedSeries(study, m) {
  const { params: p, points } = study;
  const exact = points.filter((q) => q.exact !== null).map((q) => [q.L, q.exact, `L = ${q.L}: exact ${fmt(q.exact)} ms`]);
  const favor = points.map((q) => [q.L, q.favor, `L = ${q.L}: FAVOR+ ${fmt(q.favor)} ms`]);
  const series = [
    { label: 'exact attention (online softmax, O(L²d))', color: '#1d2330', points: exact, marker: 'circle', width: 2 },
    { label: `FAVOR+ (O(L·m·d), m = ${p?.m ?? m})`, color: '#e0711a', points: favor, marker: 'square', width: 2 },
  ];
  const ext = study.done && exactExtrapolation(study);  // drawn once the run is done
  if (ext) {
    const at = p.Ls.filter((L) => L >= ext.from.L).map((L) => [L, ext.at(L)]);
    series.push({ label: 'exact, extrapolated ∝ L²', color: '#888', points: at, dash: '5 4', width: 1.4 });
  }
  const cross = crossover(points);
  const vlines = cross ? [{ x: cross.L, label: cross.before ? `FAVOR+ faster from L = ${cross.L}` : `FAVOR+ faster from L ≈ ${Math.round(cross.L)}` }] : [];
  return { series, vlines };
}

// Under the speed study's plot: what was timed, where FAVOR+ overtakes, and the largest L's times.
export function speedNote(study) {
  const { params: p, points } = study;
  if (!p) return '';
  let note = `Positive kernel (FAVOR+), d = ${p.d}, m = ${p.m}, ${p.sampling}, ${p.causal ? 'causal' : 'bidirectional'}; q, k, v of L×d, one head. ` +
    'Each point is the median of several calls of the JS API (copies in and out of the wasm heap included). ' +
    'Exact attention stops once its next size would exceed ~3 s. ';
  const cross = crossover(points);
  if (cross) note += cross.before ? `FAVOR+ is already faster at the smallest L measured (${cross.L}). ` : `FAVOR+ overtakes exact attention at L ≈ ${Math.round(cross.L)}. `;
  const lastF = points.at(-1);
  const ext = exactExtrapolation(study);
  if (lastF && ext && lastF.L > ext.from.L) {
    note += `At L = ${lastF.L.toLocaleString('en-US')}: FAVOR+ ${duration(lastF.favor)}; exact would take ~${duration(ext.at(lastF.L))} (extrapolated).`;
  }
  return note;
}
