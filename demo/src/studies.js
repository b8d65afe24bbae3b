// The two studies under the matrices, in a second worker (started on the first run and kept; Cancel
// terminates it, the results so far stay): the error against m of the chosen kernels and sampling
// modes, and the time of exact attention and FAVOR+ against L; their controls and plots (what the
// plots draw and their notes: study-plots.js).
import { loadWatch } from './load-watch.js';
import { isCodebook, temperatureOf } from './modes.js';
import { drawPlot, swatch } from './plot.js';
import { intIn } from './settings.js';
import {
  KERNEL_STYLE, METRIC_LABELS, SAMPLING_COLORS, STUDY_KERNEL_NAMES, curvesOf, errorNote, errorSeries, speedNote, speedSeries,
} from './study-plots.js';

const $ = (sel) => document.querySelector(sel);

// The preset that compares FAVOR+'s successors and W's sampling modes ('compare').
const COMPARE_SERIES = [['positive', 'orthogonal'], ['positive', 'simplex'], ['positive', 'structured'],
  ['oprf', 'orthogonal'], ['sderf', 'orthogonal'], ['aderf', 'orthogonal']];

// The page's side: its settings (`state`, `setting` for those that follow the mode), whether a
// trained model is shown, the rows of text the model reads, the FAVOR+ the speed study times
// (speedSetting(): { m, sampling, kmeans }, mode-controls.js), the test hooks (`metrics`) and
// writeUrl() for a study setting changed here. Returns what the page calls as its settings
// change: writeControls (the studies' controls from the settings), drawError (the metric), draw
// (a resize).
export function setUpStudies({ state, setting, isModel, modelRows, speedSetting, metrics, writeUrl }) {
  let studyWorker = null;
  let running = null;  // 'error' | 'speed' | null
  const errorStudy = { params: null, theory: null, points: new Map(), pairs: 0, done: false, cancelled: false };
  const speedStudy = { params: null, points: [], done: false, cancelled: false };
  metrics.errorStudy = errorStudy;
  metrics.speedStudy = speedStudy;

  // A button that disables itself would drop the keyboard's focus onto the page: it passes to its
  // partner (run ⇄ cancel) instead.
  function studyButtons() {
    const focused = document.activeElement;
    $('#study-run').disabled = running !== null;
    $('#speed-run').disabled = running !== null;
    $('#study-cancel').disabled = running !== 'error';
    $('#speed-cancel').disabled = running !== 'speed';
    const partner = { 'study-run': 'study-cancel', 'study-cancel': 'study-run', 'speed-run': 'speed-cancel', 'speed-cancel': 'speed-run' }[focused?.id];
    if (partner && focused.disabled) $(`#${partner}`).focus();
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
    const error = running === 'error';
    const status = error ? $('#study-status') : $('#speed-status');
    const fraction = (error ? $('#study-progress') : $('#speed-progress')).value;
    const kept = error ? errorPoints() : speedStudy.points.length;
    status.textContent = kept ? `cancelled at ${Math.round(fraction * 100)} %; ${kept === 1 ? 'the 1 point computed is' : `the ${kept} points computed are`} kept`
      : 'cancelled before its first point';
    status.dataset.state = 'cancelled';
    (error ? errorStudy : speedStudy).cancelled = true;
    running = null;
    studyButtons();
    if (error) drawErrorStudy(); else drawSpeedStudy();
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
    errorStudy.done = errorStudy.cancelled = false;
    drawErrorStudy();
    startWorker('error', { type: 'error-study', params: errorStudy.params });
  });
  $('#study-cancel').addEventListener('click', cancelStudy);
  $('#speed-run').addEventListener('click', () => {
    const Ls = [];
    for (let L = 128; L <= 65536; L *= 2) Ls.push(L);
    const { d, causal } = state, { m, sampling } = speedSetting();
    speedStudy.params = { d, m, kernel: 'positive', sampling, causal, Ls, exactBudgetMs: 3000 };
    speedStudy.points = [];
    speedStudy.done = speedStudy.cancelled = false;
    drawSpeedStudy();
    startWorker('speed', { type: 'speed-study', params: speedStudy.params });
  });
  $('#speed-cancel').addEventListener('click', cancelStudy);

  let drawnMetric = null;  // the metric on the error plot's y axis
  const errorPoints = () => [...errorStudy.points.values()].reduce((a, v) => a + v.length, 0);
  function drawErrorStudy() {
    const metric = drawnMetric = setting('studyMetric');
    const p = errorStudy.params;
    const svg = $('#study-plot');
    drawPlot(svg, {
      x: { log: true, domain: p ? [Math.min(...p.ms) / 1.2, Math.max(...p.ms) * 1.2] : [0.8, 1300],
        label: p?.kernels.some(isCodebook) ? 'features or codewords m (log)' : 'features m (log)', format: (v) => v.toLocaleString('en-US') },
      y: { log: true, label: `${METRIC_LABELS[metric]} (log)` },
      series: errorSeries(errorStudy, metric),
      empty: p ? (errorStudy.cancelled ? 'Cancelled before its first point.' : 'computing…') : 'Run the study: the chosen kernels and sampling modes, several seeds per m.',
      legendRoot: $('#study-legend'),
    });
    drawStudyKey(p, metric);
    svg.dataset.points = String(errorPoints());
    svg.dataset.done = String(errorStudy.done);
    $('#study-note').textContent = errorNote(errorStudy, metric);
  }

  // Above the study's legend: which colour is which sampling mode and which line and marker which
  // kernel, for the modes and kernels of the run.
  function drawStudyKey(p, metric) {
    const key = $('#study-key');
    const features = (p ? curvesOf(p, metric) : []).filter((x) => !isCodebook(x.kernel));
    key.hidden = !features.length;
    if (!features.length) { key.innerHTML = ''; return; }
    const samplings = [...new Set(features.map((x) => x.sampling))];
    const kernels = [...new Set(features.map((x) => x.kernel))];
    const item = (style, label) => `<span class="item">${swatch({ width: 1.7, ...style })}${label}</span>`;
    key.innerHTML = `<span class="key-title">colour: sampling mode</span>${samplings.map((x) => item({ color: SAMPLING_COLORS[x] }, x)).join('')}` +
      `<span class="key-title">line and marker: kernel</span>${kernels.map((k) => item({ ...KERNEL_STYLE[k], color: '#555' }, STUDY_KERNEL_NAMES[k] ?? k)).join('')}`;
  }


  function drawSpeedStudy() {
    const { series, vlines } = speedSeries(speedStudy, state.m);
    const svg = $('#speed-plot');
    drawPlot(svg, {
      x: { log: true, domain: [100, 80000], label: 'sequence length L (log)', format: (v) => v.toLocaleString('en-US') },
      y: { log: true, label: 'time per call, ms (log)' },
      series, vlines,
      empty: speedStudy.params ? (speedStudy.cancelled ? 'Cancelled before its first point.' : 'warming up…') : 'Run the speed study: both methods timed in the worker, median of several calls per L.',
      legendRoot: $('#speed-legend'),
    });
    svg.dataset.points = String(speedStudy.points.length);
    $('#speed-note').textContent = speedNote(speedStudy);
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
    // a hidden note is still read out where aria-describedby names it
    if (state.studySet === 'compare') $('#study-set').setAttribute('aria-describedby', 'study-set-note');
    else $('#study-set').removeAttribute('aria-describedby');
    $('#study-seeds').value = String(setting('studySeeds'));
    $('#study-heads').value = state.studyHeads;
    $('#study-heads-wrap').hidden = !isModel();
    $('#study-mmax').value = String(setting('studyMmax'));
    $('#study-metric').value = setting('studyMetric');
    // the metric follows the mode unless chosen: a mode switch changes the menu, and the axis with it
    if (setting('studyMetric') !== drawnMetric) drawErrorStudy();
    const speed = speedSetting();
    $('#speed-settings').textContent =
      `positive kernel (FAVOR+), d = ${state.d}, m = ${speed.m}, ${speed.sampling}, ${state.causal ? 'causal' : 'bidirectional'}; L = 128 … 65,536` +
      `${speed.kmeans ? ' (FAVOR+\'s default m and sampling: the kernel menu shows a k-means codebook, whose m counts codewords)' : ''}`;
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
