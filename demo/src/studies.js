// The two studies under the matrices, in a second worker (started on the first run and kept; Cancel
// terminates it, the results so far stay): the error against m of the chosen kernels and sampling
// modes, and the time of exact attention and FAVOR+ against L; their plots, keys and notes.
import { fmt } from './colors.js';
import { loadWatch } from './load-watch.js';
import { MODE_NAMES, fmtT, isCodebook, temperatureOf } from './modes.js';
import { drawPlot, swatch } from './plot.js';
import { intIn } from './settings.js';

const $ = (sel) => document.querySelector(sel);

// The preset that compares FAVOR+'s successors and W's sampling modes ('compare').
const COMPARE_SERIES = [['positive', 'orthogonal'], ['positive', 'simplex'], ['positive', 'structured'],
  ['oprf', 'orthogonal'], ['sderf', 'orthogonal'], ['aderf', 'orthogonal']];

// In the error study colour is the sampling mode and line and marker the kernel (VQ: its own colour).
const SAMPLING_COLORS = { iid: '#c0392b', orthogonal: '#2f5fb3', 'orthogonal-fixed': '#2a9d55', simplex: '#e07b00', structured: '#17a2b8' };
const KERNEL_STYLE = {
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
const STUDY_KERNEL_NAMES = { positive: 'positive (FAVOR+)', oprf: 'oprf (FAVOR++)', sderf: 'sderf (FAVOR#)', aderf: 'aderf (FAVOR#)' };
const METRIC_LABELS = {
  kernelMSE: 'MSE of φ(q̃)·φ(k̃) vs exp(q̃·k̃)',
  mse: 'MSE of Â', relFrobenius: '‖A − Â‖ / ‖A‖', maxAbs: 'max |A − Â|', meanRowKL: 'mean row KL(A‖Â)',
  outputRelError: 'output relative error',
};

function stats(values) {
  const v = values.filter(Number.isFinite);
  if (!v.length) return null;
  const mean = v.reduce((a, b) => a + b, 0) / v.length;
  const sd = Math.sqrt(v.reduce((a, b) => a + (b - mean) ** 2, 0) / Math.max(1, v.length - 1));
  const min = Math.min(...v);
  return { mean, lo: mean - sd > 0 ? mean - sd : min, hi: mean + sd, n: v.length };
}

const duration = (ms) => (ms < 1000 ? `${fmt(ms)} ms` : ms < 120000 ? `${fmt(ms / 1000)} s` : `${fmt(ms / 60000, 2)} min`);

function crossover(points) {
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

// The page's side: its settings (`state`, `setting` for those that follow the mode), whether a
// trained model is shown, the rows of text the model reads, the test hooks (`metrics`) and
// writeUrl() for a study setting changed here. Returns what the page calls as its settings
// change: writeControls (the studies' controls from the settings), drawError (the metric), draw
// (a resize).
export function setUpStudies({ state, setting, isModel, modelRows, metrics, writeUrl }) {
  let studyWorker = null;
  let running = null;  // 'error' | 'speed' | null
  const errorStudy = { params: null, theory: null, points: new Map(), pairs: 0, done: false };
  const speedStudy = { params: null, points: [], done: false };
  metrics.errorStudy = errorStudy;
  metrics.speedStudy = speedStudy;

  function studyButtons() {
    $('#study-run').disabled = running !== null;
    $('#speed-run').disabled = running !== null;
    $('#study-cancel').disabled = running !== 'error';
    $('#speed-cancel').disabled = running !== 'speed';
  }

  // The study worker, started on the first study and kept; watched while it loads (load-watch.js).
  let studyLoad = null, studyMessage = null;
  const createStudyWorker = () => new Worker(new URL('./study-worker.js', import.meta.url), { type: 'module' });
  function newStudyWorker() {
    studyWorker = createStudyWorker();
    studyLoad = loadWatch({
      replace: (n) => {
        console.warn(`favor-attention demo: the study worker stopped answering while it loaded; starting another (${n})`);
        const { onmessage, onerror } = studyWorker;
        studyWorker.terminate();
        studyWorker = Object.assign(createStudyWorker(), { onmessage, onerror });
        studyWorker.postMessage(studyMessage);
      },
      giveUp: () => studyWorker.onerror({ message: 'it stopped answering while it loaded, three times' }),
    });
  }

  function startWorker(kind, message) {
    if (!studyWorker) newStudyWorker();
    running = kind;
    studyButtons();
    const progress = kind === 'error' ? $('#study-progress') : $('#speed-progress');
    const status = kind === 'error' ? $('#study-status') : $('#speed-status');
    progress.value = 0;
    status.textContent = 'starting…';
    const t0 = performance.now();
    studyWorker.onmessage = (event) => {
      const msg = event.data;
      studyLoad.heard();
      if (msg.type === 'alive') return;
      studyLoad.loaded();  // every other message comes once favor-attention has loaded
      if (msg.type === 'progress') {
        progress.value = msg.fraction;
        status.textContent = `${Math.round(msg.fraction * 100)} % (${msg.label}), ${((performance.now() - t0) / 1000).toFixed(1)} s`;
      } else if (msg.type === 'start') {
        Object.assign(errorStudy, { theory: msg.theory, pairs: msg.pairs, queryRows: msg.queryRows, keyRows: msg.keyRows, heads: msg.heads });
      } else if (msg.type === 'point') {
        const key = `${msg.kernel}|${msg.sampling}`;
        if (!errorStudy.points.has(key)) errorStudy.points.set(key, []);
        errorStudy.points.get(key).push({ m: msg.m, values: msg.values });
        drawErrorStudy();
      } else if (msg.type === 'speed-point') {
        speedStudy.points.push(msg);
        drawSpeedStudy();
      } else if (msg.type === 'done') {
        progress.value = 1;
        status.textContent = `done in ${(msg.elapsed / 1000).toFixed(1)} s`;
        status.dataset.state = 'done';
        if (kind === 'error') { errorStudy.done = true; drawErrorStudy(); } else { speedStudy.done = true; drawSpeedStudy(); }
        running = null;
        studyButtons();
      } else if (msg.type === 'error') {
        status.textContent = `failed: ${msg.message}`;
        status.dataset.state = 'error';
        console.error('favor-attention demo: study', msg.message);
        running = null;
        studyButtons();
      }
    };
    studyWorker.onerror = (e) => {
      status.textContent = `the study worker failed: ${e.message ?? e}`;
      console.error('favor-attention demo: study worker', e.message ?? e);
      studyLoad.loaded();
      studyWorker?.terminate();
      studyWorker = null;
      running = null;
      studyButtons();
    };
    status.dataset.state = 'running';
    studyMessage = message;  // sent again to a replacement
    studyWorker.postMessage(message);
  }

  function cancelStudy() {
    if (!running) return;
    studyWorker.terminate();  // immediate, even in the middle of a long wasm call
    studyWorker = null;
    studyLoad.loaded();
    const status = running === 'error' ? $('#study-status') : $('#speed-status');
    status.textContent = `cancelled (${status.textContent.split(' (')[0]} done; partial results kept)`;
    status.dataset.state = 'cancelled';
    running = null;
    studyButtons();
  }

  $('#study-run').addEventListener('click', () => {
    const ms = [];
    for (let m = 1; m <= setting('studyMmax'); m *= 2) ms.push(m);
    const { L, d, causal, scale, pattern, dataSeed } = state;
    const series = state.studySet === 'compare' ? COMPARE_SERIES.map(([kernel, sampling]) => ({ kernel, sampling }))
      : state.studyKernels.flatMap((kernel) => (isCodebook(kernel) ? [{ kernel, sampling: 'k-means' }]
        : state.studySamplings.map((sampling) => ({ kernel, sampling }))));
    errorStudy.params = { L, d, causal, scale, pattern, dataSeed, series, kernels: [...new Set(series.map((x) => x.kernel))], ms,
      seeds: setting('studySeeds'), baseSeed: 1000, temperature: temperatureOf(state.tempStep),
      ...(isModel() && { text: state.text, model: state.model, L: modelRows(), d: 32, causal: true,
        heads: state.studyHeads === 'all' ? 'all' : [state.layer, state.head] }) };
    errorStudy.points = new Map();
    errorStudy.theory = null;
    errorStudy.done = false;
    drawErrorStudy();
    startWorker('error', { type: 'error-study', params: errorStudy.params });
  });
  $('#study-cancel').addEventListener('click', cancelStudy);
  $('#speed-run').addEventListener('click', () => {
    const Ls = [];
    for (let L = 128; L <= 65536; L *= 2) Ls.push(L);
    const { d, m, sampling, causal } = state;
    speedStudy.params = { d, m, kernel: 'positive', sampling, causal, Ls, exactBudgetMs: 3000 };
    speedStudy.points = [];
    speedStudy.done = false;
    drawSpeedStudy();
    startWorker('speed', { type: 'speed-study', params: speedStudy.params });
  });
  $('#speed-cancel').addEventListener('click', cancelStudy);

  function drawErrorStudy() {
    const metric = setting('studyMetric');
    const p = errorStudy.params;
    const hasCodebook = Boolean(p?.kernels.some(isCodebook));
    const series = [];
    if (p) {
      for (const { kernel, sampling } of p.series) {
        const codebook = isCodebook(kernel);
        const pts = errorStudy.points.get(`${kernel}|${sampling}`) ?? [];
        const line = [], band = [];
        const name = codebook ? `${MODE_NAMES[kernel]}${kernel === 'soft-vq' ? ` (T = ${fmtT(p.temperature)})` : ''}, k-means`
          : `${STUDY_KERNEL_NAMES[kernel] ?? kernel}, ${sampling}`;
        for (const { m, values } of pts) {
          const s = stats(values[metric]);
          if (!s) continue;
          line.push([m, s.mean, `${name}, m = ${m}: mean ${fmt(s.mean)} over ${s.n} seeds (±1 s.d. ${fmt(s.lo)} … ${fmt(s.hi)})`]);
          band.push([m, s.lo, s.hi]);
        }
        series.push({ label: name, color: SAMPLING_COLORS[sampling], points: line, band,
          ...KERNEL_STYLE[kernel], width: 1.7 });
      }
      if (metric === 'kernelMSE' && errorStudy.theory) {
        const theoryLine = (c) => p.ms.map((m) => [m, c / m]);
        const th = errorStudy.theory;
        if (p.kernels.includes('positive') && Number.isFinite(th.positive)) {
          series.push({ label: 'Lemma 2, positive, iid: (1/m)·mean exp(‖x+y‖²)·SM(x,y)²·(1 − exp(−‖x+y‖²))', color: '#111', points: theoryLine(th.positive), width: 2.4, dash: null });
        }
        if (p.kernels.includes('hyperbolic') && Number.isFinite(th.hyperbolic)) {
          series.push({ label: 'Lemma 2, hyperbolic, iid', color: '#111', points: theoryLine(th.hyperbolic), width: 1.4, dash: '7 3' });
        }
        if (p.kernels.includes('trigonometric') && Number.isFinite(th.trigonometric)) {
          series.push({ label: 'Lemma 2, trigonometric, iid', color: '#111', points: theoryLine(th.trigonometric), width: 1.4, dash: '2 3' });
        }
      }
    }
    const svg = $('#study-plot');
    drawPlot(svg, {
      x: { log: true, domain: p ? [Math.min(...p.ms) / 1.2, Math.max(...p.ms) * 1.2] : [0.8, 1300],
        label: hasCodebook ? 'features or codewords m (log)' : 'features m (log)', format: (v) => v.toLocaleString('en-US') },
      y: { log: true, label: `${METRIC_LABELS[metric]} (log)` },
      series,
      empty: p ? 'computing…' : 'Run the study: the chosen kernels and sampling modes, several seeds per m.',
      legendRoot: $('#study-legend'),
    });
    drawStudyKey(p);
    svg.dataset.points = String([...errorStudy.points.values()].reduce((a, v) => a + v.length, 0));
    svg.dataset.done = String(errorStudy.done);
    let note = '';
    if (p) {
      const fitted = p.kernels.filter((k) => ['oprf', 'sderf', 'aderf'].includes(k));
      const theoryKernels = p.kernels.filter((k) => ['positive', 'hyperbolic', 'trigonometric'].includes(k));
      const setting = p.pattern === 'model'
        ? (Array.isArray(p.heads) ? `layer ${p.heads[0]}, head ${p.heads[1]} of the model ${p.model} on the text (L = ${p.L}, d = ${p.d}, causal)`
          : `every head (${errorStudy.heads ?? 16}) of the model ${p.model} on the text (L = ${p.L}, d = ${p.d}, causal); no Lemma 2 line (it belongs to one input)`)
        : `L = ${p.L}, d = ${p.d}, input scale ${p.scale.toFixed(2)}, ${p.pattern}, ${p.causal ? 'causal' : 'bidirectional'}, input seed ${p.dataSeed}`;
      const over = p.pattern === 'model' && !Array.isArray(p.heads) ? `${p.seeds} feature seeds × every head` : `${p.seeds} feature seeds`;
      note = `Settings of this run: ${setting}. Line: mean over ${over}; band: ±1 standard deviation ` +
        '(its lower edge drops to the smallest value where mean − s.d. ≤ 0, to stay on the log axis). ';
      if (metric === 'kernelMSE') {
        note += `Plotted: the MSE of the unnormalized kernel estimate φ(q̃ᵢ)·φ(k̃ⱼ) against exp(q̃ᵢ·k̃ⱼ), averaged over ${errorStudy.pairs} ` +
          `(i, j) pairs (${errorStudy.queryRows ?? '…'} query rows × ${errorStudy.keyRows ?? '…'} key rows${p.causal ? ', j ≤ i' : ''}), ` +
          'recomputed in float64 from each feature map\'s W' +
          (fitted.length ? ` (${fitted.join(', ')}: with the parameters the library fits to all of q̃ and k̃ in each call, recomputed in JS)` : '') +
          ' — not the normalized matrix Â. ' +
          (theoryKernels.length && (errorStudy.theory || p.pattern !== 'model') ? `Black: Lemma 2 for iid features (${theoryKernels.join(', ')}), averaged over the same pairs ` +
          '(orthogonal and simplex features should sit at or below it). The squared error is heavy-tailed (variance ∝ e^{2‖x+y‖²}): at larger input scales a few seeds ' +
          'rarely draw the large errors, so the measured mean can fall below the theory. ' : '') +
          (p.kernels.includes('relu') ? 'relu is not a softmax estimator and has no curve here. ' : '') +
          (fitted.length ? `No theory curve for ${fitted.join(', ')}: Lemma 2 is derived for the positive, hyperbolic and trigonometric features only. ` : '') +
          (hasCodebook ? ' For VQ the estimate is Σ_y R_jy exp(q̃ᵢ·c̃_y) (hard: exp(q̃ᵢ·c̃) of the nearest codeword).' : '');
      } else {
        note += `Plotted: ${METRIC_LABELS[metric]} of the normalized matrix Â (or of the output), measured by the library.`;
      }
      if (hasCodebook) {
        note += ` VQ curves: a k-means codebook of the keys per seed (m codewords), not random features; only m < L = ${p.L} ` +
          '(at m = L every key is its own codeword and hard VQ is exact). ' +
          'Performer as soft VQ is not drawn separately: it is the positive, orthogonal-fixed curve.';
      }
    }
    $('#study-note').textContent = note;
  }

  // Above the study's legend: which colour is which sampling mode and which line and marker which
  // kernel, for the modes and kernels of the run.
  function drawStudyKey(p) {
    const key = $('#study-key');
    const features = (p?.series ?? []).filter((x) => !isCodebook(x.kernel));
    key.hidden = !features.length;
    if (!features.length) { key.innerHTML = ''; return; }
    const samplings = [...new Set(features.map((x) => x.sampling))];
    const kernels = [...new Set(features.map((x) => x.kernel))];
    const item = (style, label) => `<span class="item">${swatch({ width: 1.7, ...style })}${label}</span>`;
    key.innerHTML = `<span class="key-title">colour: sampling mode</span>${samplings.map((x) => item({ color: SAMPLING_COLORS[x] }, x)).join('')}` +
      `<span class="key-title">line and marker: kernel</span>${kernels.map((k) => item({ ...KERNEL_STYLE[k], color: '#555' }, STUDY_KERNEL_NAMES[k] ?? k)).join('')}`;
  }


  function drawSpeedStudy() {
    const p = speedStudy.params;
    const pts = speedStudy.points;
    const exact = pts.filter((q) => q.exact !== null).map((q) => [q.L, q.exact, `L = ${q.L}: exact ${fmt(q.exact)} ms`]);
    const favor = pts.map((q) => [q.L, q.favor, `L = ${q.L}: FAVOR+ ${fmt(q.favor)} ms`]);
    const series = [
      { label: 'exact attention (online softmax, O(L²d))', color: '#1d2330', points: exact, marker: 'circle', width: 2 },
      { label: `FAVOR+ (O(L·m·d), m = ${p?.m ?? state.m})`, color: '#e0711a', points: favor, marker: 'square', width: 2 },
    ];
    const last = exact.at(-1);
    if (last && speedStudy.done && p && last[0] < p.Ls.at(-1)) {
      const ext = p.Ls.filter((L) => L >= last[0]).map((L) => [L, last[1] * (L / last[0]) ** 2]);
      series.push({ label: 'exact, extrapolated ∝ L²', color: '#888', points: ext, dash: '5 4', width: 1.4 });
    }
    const cross = crossover(pts);
    const vlines = cross ? [{ x: cross.L, label: cross.before ? `FAVOR+ faster from L = ${cross.L}` : `FAVOR+ faster from L ≈ ${Math.round(cross.L)}` }] : [];
    const svg = $('#speed-plot');
    drawPlot(svg, {
      x: { log: true, domain: [100, 80000], label: 'sequence length L (log)', format: (v) => v.toLocaleString('en-US') },
      y: { log: true, label: 'time per call, ms (log)' },
      series, vlines,
      empty: p ? 'warming up…' : 'Run the speed study: both methods timed in the worker, median of several calls per L.',
      legendRoot: $('#speed-legend'),
    });
    svg.dataset.points = String(pts.length);
    let note = '';
    if (p) {
      note = `Positive kernel (FAVOR+), d = ${p.d}, m = ${p.m}, ${p.sampling}, ${p.causal ? 'causal' : 'bidirectional'}; q, k, v of L×d, one head. ` +
        'Each point is the median of several calls of the JS API (copies in and out of the wasm heap included). ' +
        'Exact attention stops once its next size would exceed ~3 s. ';
      if (cross) note += cross.before ? `FAVOR+ is already faster at the smallest L measured (${cross.L}). ` : `FAVOR+ overtakes exact attention at L ≈ ${Math.round(cross.L)}. `;
      const lastF = pts.at(-1);
      if (lastF && last && lastF.L > last[0]) {
        note += `At L = ${lastF.L.toLocaleString('en-US')}: FAVOR+ ${duration(lastF.favor)}; exact would take ~${duration(last[1] * (lastF.L / last[0]) ** 2)} (extrapolated).`;
      }
    }
    $('#speed-note').textContent = note;
  }

  drawErrorStudy();
  drawSpeedStudy();
  studyButtons();
  // The studies' controls: written from the settings, and read into them as they change.
  function writeControls() {
    for (const box of document.querySelectorAll('input[name=study-kernel]')) box.checked = state.studyKernels.includes(box.value);
    for (const box of document.querySelectorAll('input[name=study-sampling]')) box.checked = state.studySamplings.includes(box.value);
    $('#study-set').value = state.studySet;
    $('#study-kernels').disabled = $('#study-samplings').disabled = state.studySet === 'compare';
    $('#study-set-note').hidden = state.studySet !== 'compare';
    $('#study-seeds').value = String(setting('studySeeds'));
    $('#study-heads').value = state.studyHeads;
    $('#study-heads-wrap').hidden = !isModel();
    $('#study-mmax').value = String(setting('studyMmax'));
    $('#study-metric').value = setting('studyMetric');
    $('#speed-settings').textContent =
      `positive kernel (FAVOR+), d = ${state.d}, m = ${state.m}, ${state.sampling}, ${state.causal ? 'causal' : 'bidirectional'}; L = 128 … 65,536`;
  }
  for (const [name, key] of [['study-kernel', 'studyKernels'], ['study-sampling', 'studySamplings']]) {
    for (const box of document.querySelectorAll(`input[name=${name}]`)) {
      box.addEventListener('change', () => {
        const chosen = [...document.querySelectorAll(`input[name=${name}]:checked`)].map((b) => b.value);
        if (!chosen.length) { box.checked = true; return; }  // at least one of each stays checked
        state[key] = chosen;
        writeUrl();
      });
    }
  }
  $('#study-set').addEventListener('change', (e) => { state.studySet = e.target.value; writeControls(); writeUrl(); });
  $('#study-seeds').addEventListener('change', (e) => {
    const v = intIn(e.target.value, 2, 32);
    if (v) { state.studySeeds = v; writeUrl(); } else e.target.value = String(setting('studySeeds'));
  });
  $('#study-heads').addEventListener('change', (e) => { state.studyHeads = e.target.value; writeUrl(); });
  $('#study-mmax').addEventListener('change', (e) => { state.studyMmax = Number(e.target.value); writeUrl(); });
  $('#study-metric').addEventListener('change', (e) => { state.studyMetric = e.target.value; writeUrl(); drawErrorStudy(); });

  return { writeControls, drawError: drawErrorStudy, draw: () => { drawErrorStudy(); drawSpeedStudy(); } };
}
