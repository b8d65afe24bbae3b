// The interactive page: controls ⇄ URL, a compute worker for the matrices, heatmaps with a
// linked crosshair, the row inspector, error measures and timings, the PCA view of keys and
// codewords (codebook modes), and the two studies (run in a second worker, cancellable).
import { Heatmap, drawLegend } from './heatmap.js';
import { sequentialScale, divergingScale, quantile, fmt } from './colors.js';
import { drawPlot, swatch } from './plot.js';
import { PATTERNS } from './inputs.js';
import { PcaView } from './pca-view.js';
import { DEFAULT_TEXT, ModelPanel } from './model-panel.js';
import { LineView } from './line-view.js';
import { rowKL } from './row-kl.js';
import { LONG_LIMITS, LongView } from './long-view.js';
import { loadWatch } from './load-watch.js';

// ---------------------------------------------------------------- settings and the URL

const LISTS = {
  L: [8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024],
  d: [4, 8, 12, 16, 24, 32, 48, 64, 96, 128],
  m: [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048],
};
const FEATURE_KERNELS = ['positive', 'hyperbolic', 'trigonometric', 'relu', 'oprf', 'sderf', 'aderf'];
// The codebook modes (Transformer-VQ) share the kernel menu; their assignment of keys to codewords.
const CODEBOOK_MODES = { vq: 'hard', 'soft-vq': 'soft', 'performer-vq': 'gaussian' };
const KERNELS = [...FEATURE_KERNELS, ...Object.keys(CODEBOOK_MODES)];
const STUDY_KERNELS = [...FEATURE_KERNELS, 'vq', 'soft-vq'];  // Performer as soft VQ is positive, orthogonal-fixed
const MODE_NAMES = { vq: 'hard VQ', 'soft-vq': 'soft VQ', 'performer-vq': 'Performer as soft VQ' };
const isCodebook = (kernel) => kernel in CODEBOOK_MODES;
// Temperature of soft VQ on a log slider: T = 10^(n/10), n = −20 … 10 (T = 0.01 … 10).
const TEMP_RANGE = [-20, 10];
const fmtT = (t) => String(Number(t.toPrecision(2)));
const temperatureOf = (n) => Number(fmtT(10 ** (n / 10)));  // two significant digits, as shown and in the URL
const SAMPLINGS = ['iid', 'orthogonal', 'orthogonal-fixed', 'simplex', 'structured'];
// The error study's curves: each checked kernel with each checked sampling mode ('grid'), or the
// preset that compares FAVOR+'s successors and W's sampling modes ('compare').
const STUDY_SAMPLINGS = SAMPLINGS;
const STUDY_SETS = ['grid', 'compare'];
const COMPARE_SERIES = [['positive', 'orthogonal'], ['positive', 'simplex'], ['positive', 'structured'],
  ['oprf', 'orthogonal'], ['sderf', 'orthogonal'], ['aderf', 'orthogonal']];
const STUDY_METRICS = ['kernelMSE', 'mse', 'relFrobenius', 'maxAbs', 'meanRowKL', 'outputRelError'];
// log, studyMetric, studySeeds and studyMmax are null until chosen: then they follow the mode
// (a trained model: log colors, mean row KL, a study that finishes in seconds; synthetic inputs:
// linear colors and the kernel MSE of Lemma 2). rowFollow: the inspected row is the text's last
// character, so the predictions are what comes next.
const DEFAULTS = {
  L: 256, d: 64, m: 256, kernel: 'positive', sampling: 'orthogonal', tempStep: 0, causal: false, scale: 0.5,
  pattern: 'model', seed: 1, dataSeed: 0, log: null, row: 128, rowFollow: true,
  studyKernels: ['positive'], studySamplings: ['iid', 'orthogonal', 'orthogonal-fixed'], studySet: 'grid', studySeeds: null, studyMmax: null, studyMetric: null, studyHeads: 'all', genN: 60,
  text: DEFAULT_TEXT, model: 'softmax', layer: 2, head: 1, trainedW: true, longN: LONG_LIMITS.default,
};
const MODE_DEFAULTS = {
  model: { log: true, studyMetric: 'meanRowKL', studySeeds: 3, studyMmax: 256 },
  synthetic: { log: false, studyMetric: 'kernelMSE', studySeeds: 6, studyMmax: 1024 },
};
const setting = (key) => state[key] ?? MODE_DEFAULTS[isModel() ? 'model' : 'synthetic'][key];
const TEXT_LIMIT = 1024;  // the box and the URL; the model reads the last 256 characters
const MODEL_TITLE = 'a trained character-level transformer (train/): Q and K of the chosen layer and head on the text below';
const isModel = () => state.pattern === 'model';

const nearest = (list, v) => list.reduce((best, x) => (Math.abs(Math.log(x / v)) < Math.abs(Math.log(best / v)) ? x : best));
const intIn = (s, lo, hi) => { if (s === null || s === undefined || String(s).trim() === '') return undefined; const v = Number(s); return Number.isInteger(v) && v >= lo && v <= hi ? v : undefined; };

const MODEL_KEYS = ['model', 'layer', 'head', 'text', 'tw', 'gen', 'long', 'sheads'];
function parseUrl() {
  const q = new URLSearchParams(location.search);
  const s = { ...DEFAULTS };
  for (const key of ['L', 'd', 'm']) {
    const v = Number(q.get(key));
    if (q.has(key) && Number.isFinite(v) && v > 0) s[key] = nearest(LISTS[key], v);
  }
  if (KERNELS.includes(q.get('kernel'))) s.kernel = q.get('kernel');
  if (SAMPLINGS.includes(q.get('sampling'))) s.sampling = q.get('sampling');
  const temp = Number(q.get('temp'));
  if (q.has('temp') && temp > 0 && Number.isFinite(temp)) {
    s.tempStep = Math.max(TEMP_RANGE[0], Math.min(TEMP_RANGE[1], Math.round(10 * Math.log10(temp))));
  }
  if (q.get('pattern') in PATTERNS || q.get('pattern') === 'model') s.pattern = q.get('pattern');
  // Links from before the page opened on a trained model name no pattern: they meant Gaussian.
  // A link without one that names what only a model has (a model, a layer, a text…) means the model.
  else if ([...q.keys()].length) s.pattern = MODEL_KEYS.some((key) => q.has(key)) ? 'model' : 'gaussian';
  if (q.has('text')) s.text = q.get('text').slice(0, TEXT_LIMIT);
  if (/^[a-z][a-z0-9-]*$/.test(q.get('model') ?? '')) s.model = q.get('model');
  s.layer = intIn(q.get('layer'), 0, 63) ?? s.layer;
  s.head = intIn(q.get('head'), 0, 63) ?? s.head;
  if (q.has('tw')) s.trainedW = q.get('tw') !== '0';
  if (q.has('causal')) s.causal = q.get('causal') === '1' || q.get('causal') === 'true';
  if (q.has('log')) s.log = q.get('log') === '1' || q.get('log') === 'true';
  const scale = Number(q.get('scale'));
  if (q.has('scale') && scale >= 0.05 && scale <= 1.5) s.scale = Math.round(scale * 20) / 20;
  s.seed = intIn(q.get('seed'), 0, 999999) ?? s.seed;
  s.dataSeed = intIn(q.get('data'), 0, 999999) ?? s.dataSeed;
  const row = intIn(q.get('row'), 0, s.pattern === 'model' ? 255 : s.L - 1);
  s.row = row ?? Math.min(DEFAULTS.row, s.L >> 1);
  s.rowFollow = s.pattern === 'model' && row === undefined;
  const sk = (q.get('skernels') ?? '').split(',').filter((k) => STUDY_KERNELS.includes(k));
  if (sk.length) s.studyKernels = sk;
  const ss = (q.get('ssamplings') ?? '').split(',').filter((x) => STUDY_SAMPLINGS.includes(x));
  if (ss.length) s.studySamplings = ss;
  if (STUDY_SETS.includes(q.get('sset'))) s.studySet = q.get('sset');
  s.studySeeds = intIn(q.get('sseeds'), 2, 32) ?? null;
  if (['all', 'selected'].includes(q.get('sheads'))) s.studyHeads = q.get('sheads');
  s.genN = intIn(q.get('gen'), 1, 255) ?? s.genN;
  s.longN = intIn(q.get('long'), LONG_LIMITS.min, LONG_LIMITS.max) ?? s.longN;
  const mmax = intIn(q.get('smax'), 1, 2048);
  if (mmax && [64, 256, 512, 1024, 2048].includes(mmax)) s.studyMmax = mmax;
  if (STUDY_METRICS.includes(q.get('smetric'))) s.studyMetric = q.get('smetric');
  return s;
}

// The URL follows the settings, written after the panels are drawn (replaceState costs ~1–2 ms).
let urlTimer = 0;
function writeUrl() {
  clearTimeout(urlTimer);
  urlTimer = setTimeout(writeUrlNow, 0);
}
function writeUrlNow() {
  const s = state;
  const model = s.pattern === 'model';
  const q = new URLSearchParams({
    pattern: s.pattern,
    ...(model && { model: s.model, layer: s.layer, head: s.head }),
    m: s.m, kernel: s.kernel, sampling: s.sampling, temp: fmtT(temperatureOf(s.tempStep)),
    ...(!model && { L: s.L, d: s.d, causal: s.causal ? 1 : 0, scale: s.scale.toFixed(2), data: s.dataSeed }),
    seed: s.seed, ...(s.log !== null && { log: s.log ? 1 : 0 }), ...(!(model && s.rowFollow) && { row: s.row }),
    skernels: s.studyKernels.join(','), ssamplings: s.studySamplings.join(','), sset: s.studySet, ...(s.studySeeds !== null && { sseeds: s.studySeeds }),
    ...(s.studyMmax !== null && { smax: s.studyMmax }), ...(s.studyMetric !== null && { smetric: s.studyMetric }),
    ...(model && { tw: s.trainedW ? 1 : 0, sheads: s.studyHeads, gen: s.genN, ...(s.longN !== DEFAULTS.longN && { long: s.longN }) }),
    ...(model && s.text !== DEFAULT_TEXT && { text: s.text }),
  });
  history.replaceState(null, '', `${location.pathname}?${q}${location.hash}`);
}

const state = parseUrl();
const $ = (sel) => document.querySelector(sel);
// The inspected row as drawn: on a trained model, the last character unless a row was picked.
function shownRow() {
  if (!isModel()) return state.row;
  const L = view?.L ?? 256;
  return state.rowFollow ? L - 1 : Math.min(state.row, L - 1);
}

// ---------------------------------------------------------------- controls

const controls = {
  L: $('#L'), d: $('#d'), m: $('#m'), scale: $('#scale'), pattern: $('#pattern'), dataSeed: $('#dataSeed'),
  causal: $('#causal'), kernel: $('#kernel'), sampling: $('#sampling'), seed: $('#seed'), log: $('#log'), row: $('#row'),
  temperature: $('#temperature'), text: $('#text'), model: $('#model'), layer: $('#layer'), head: $('#head'),
  trainedW: $('#trainedW'),
};
controls.temperature.min = String(TEMP_RANGE[0]);
controls.temperature.max = String(TEMP_RANGE[1]);
for (const key of ['L', 'd', 'm']) controls[key].max = String(LISTS[key].length - 1);

function writeControls() {
  for (const key of ['L', 'd', 'm']) {
    controls[key].value = String(LISTS[key].indexOf(state[key]));
    controls[key].setAttribute('aria-valuetext', String(state[key]));
    $(`#${key}-out`).textContent = String(state[key]);
  }
  controls.scale.value = String(state.scale);
  controls.scale.setAttribute('aria-valuetext', state.scale.toFixed(2));
  $('#scale-out').textContent = state.scale.toFixed(2);
  for (const key of ['pattern', 'kernel', 'sampling']) controls[key].value = state[key];
  controls.dataSeed.value = String(state.dataSeed);
  controls.seed.value = String(state.seed);
  controls.causal.checked = state.causal;
  controls.log.checked = setting('log');
  controls.row.max = String(state.L - 1);
  controls.row.value = String(shownRow());
  controls.pattern.title = PATTERNS[state.pattern] ?? MODEL_TITLE;
  if (controls.text.value !== state.text) controls.text.value = state.text;
  controls.trainedW.checked = state.trainedW;
  controls.model.value = state.model;
  controls.layer.value = String(state.layer);
  controls.head.value = String(state.head);
  modelPanel.show(isModel());
  if (isModel()) controls.row.max = String((view?.L ?? 256) - 1);
  writeModeControls();
  for (const box of document.querySelectorAll('input[name=study-kernel]')) box.checked = state.studyKernels.includes(box.value);
  for (const box of document.querySelectorAll('input[name=study-sampling]')) box.checked = state.studySamplings.includes(box.value);
  $('#study-set').value = state.studySet;
  $('#study-kernels').disabled = $('#study-samplings').disabled = state.studySet === 'compare';
  $('#study-set-note').hidden = state.studySet !== 'compare';
  $('#study-seeds').value = String(setting('studySeeds'));
  $('#study-heads').value = state.studyHeads;
  $('#gen-n').value = String(state.genN);
  longView.show(isModel());
  longView.set({ n: state.longN, text: state.text, seed: state.seed });
  $('#nav-long').hidden = !isModel();
  textSub();
  $('#study-heads-wrap').hidden = !isModel();
  $('#study-mmax').value = String(setting('studyMmax'));
  $('#study-metric').value = setting('studyMetric');
  for (const b of [$('#mode-model'), $('#mode-synthetic')]) b.setAttribute('aria-pressed', String((b.id === 'mode-model') === isModel()));
  $('#story-model').hidden = $('#text-wrap').hidden = !isModel();
  $('#story-synthetic').hidden = isModel();
  $('#story').classList.toggle('synthetic', !isModel());
  $('#grid-panel').hidden = $('#legend-grid').hidden = !isModel();
  document.querySelector('.panels').classList.toggle('with-grid', isModel());
  document.querySelector('.legends').classList.toggle('with-grid', isModel());
  $('#speed-settings').textContent =
    `positive kernel (FAVOR+), d = ${state.d}, m = ${state.m}, ${state.sampling}, ${state.causal ? 'causal' : 'bidirectional'}; L = 128 … 65,536`;
}

// The controls that depend on the kernel menu: the sampling mode (not used by k-means codebooks,
// fixed to orthogonal-fixed for Performer as soft VQ), the temperature (soft VQ only), the
// meaning of m and its cap at L, and the text on what is drawn.
function writeModeControls() {
  const mode = state.kernel;
  const codebook = isCodebook(mode);
  const sampling = controls.sampling;
  const samplingNote = $('#sampling-note');
  sampling.disabled = codebook;
  sampling.value = mode === 'performer-vq' ? 'orthogonal-fixed' : state.sampling;
  samplingNote.hidden = !codebook;
  samplingNote.textContent = mode === 'performer-vq'
    ? 'Fixed: with every ‖ω‖ = √d, FAVOR+ is exactly this codebook attention.'
    : codebook ? 'Not used: k-means codebook of the keys (seed: the feature seed).' : '';
  $('#temperature-row').hidden = mode !== 'soft-vq';
  const T = temperatureOf(state.tempStep);
  controls.temperature.value = String(state.tempStep);
  controls.temperature.setAttribute('aria-valuetext', `T = ${fmtT(T)}`);
  $('#temperature-out').textContent = fmtT(T);
  $('#m-label').textContent = codebook ? 'codewords m' : 'features m';
  const capped = codebook && mode !== 'performer-vq' && state.m > state.L;
  const mNote = $('#m-note');
  mNote.hidden = !capped;
  mNote.textContent = capped ? `m = ${state.m} > L: k-means uses m = L = ${state.L} codewords (at most one per key).` : '';
  $('#about-features').hidden = codebook || isModel();
  $('#about-vq').hidden = !codebook || isModel();
  $('#about-model').hidden = !isModel();
}

// Reads one control into the state; returns 'compute' (new matrices needed) or 'draw'.
function readControl(key) {
  const c = controls[key];
  if (key === 'L' || key === 'd' || key === 'm') state[key] = LISTS[key][Number(c.value)];
  else if (key === 'temperature') state.tempStep = Math.round(Number(c.value));
  else if (key === 'scale') state.scale = Math.round(Number(c.value) * 20) / 20;
  else if (key === 'causal' || key === 'log' || key === 'trainedW') state[key] = c.checked;
  else if (key === 'text') { state.text = c.value; state.rowFollow = true; }
  else if (key === 'layer' || key === 'head') state[key] = Number(c.value);
  else if (key === 'seed' || key === 'dataSeed' || key === 'row') {
    const v = Math.floor(Number(c.value));
    if (!Number.isFinite(v) || v < 0) return null;
    state[key] = key === 'row' ? Math.min(v, (isModel() && view ? view.L : state.L) - 1) : Math.min(v, 999999);
    if (key === 'row') state.rowFollow = false;
  } else state[key] = c.value;
  // A codebook as large as the text gives every key its own codeword (exact): start smaller.
  if (key === 'kernel' && isModel() && (state.kernel === 'vq' || state.kernel === 'soft-vq') && state.m >= (view?.L ?? 256) / 2) state.m = 32;
  if (key === 'L') state.row = Math.min(state.row, state.L - 1);
  return key === 'log' || key === 'row' ? 'draw' : 'compute';
}

function onControl(key, event) {
  const t0 = Math.min(performance.now(), event?.timeStamp > 0 ? event.timeStamp : Infinity);
  const what = readControl(key);
  if (!what) return;
  writeControls();
  writeUrl();
  if (what === 'compute') requestCompute(t0);
  else if (result) { redraw(t0); }
}

for (const [key, c] of Object.entries(controls)) {
  const live = c.type === 'range' || c.tagName === 'TEXTAREA';
  c.addEventListener(live ? 'input' : 'change', (e) => onControl(key, e));
}
// The two modes, one click apart: a trained model, or the synthetic pattern last used.
let lastSynthetic = isModel() ? 'gaussian' : state.pattern;
for (const [id, model] of [['#mode-model', true], ['#mode-synthetic', false]]) {
  $(id).addEventListener('click', (e) => {
    if (model === isModel()) return;
    if (!model) lastSynthetic = lastSynthetic in PATTERNS ? lastSynthetic : 'gaussian';
    controls.pattern.value = model ? 'model' : lastSynthetic;
    onControl('pattern', e);
  });
}
controls.pattern.addEventListener('change', () => { if (!isModel()) lastSynthetic = state.pattern; });
// Narrow screens: the settings are a drawer over the page, the panels come first.
const drawer = $('#settings-drawer');
function setDrawer(open) {
  drawer.classList.toggle('open', open);
  $('#drawer-toggle').setAttribute('aria-expanded', String(open));
  if (open) drawer.querySelector('select, input')?.focus();
}
$('#drawer-toggle').addEventListener('click', () => setDrawer(!drawer.classList.contains('open')));
$('#drawer-close').addEventListener('click', () => { setDrawer(false); $('#drawer-toggle').focus(); });
drawer.addEventListener('keydown', (e) => { if (e.key === 'Escape' && drawer.classList.contains('open')) { setDrawer(false); $('#drawer-toggle').focus(); } });
$('#redraw').addEventListener('click', (e) => {
  controls.seed.value = String((state.seed + 1) % 1000000);
  onControl('seed', e);
});
$('#copy-link').addEventListener('click', async () => {
  try {
    await navigator.clipboard.writeText(location.href);
    setStatus('link copied: it holds every setting');
  } catch {
    setStatus(`share this URL: ${location.href}`);
  }
});

// ---------------------------------------------------------------- status

const statusEl = $('#status');
let readyText = '', readyWhy = '';  // the build, and why it has one thread (if it has)
function setStatus(text, error = false, title = '') {
  statusEl.textContent = text;
  statusEl.title = title;
  statusEl.classList.toggle('error', error);
}

// ---------------------------------------------------------------- the compute worker

const metrics = { updates: 0, history: [], ready: false, errors: [], restarts: 0 };
window.__favorDemo = metrics;

function startComputeWorker() {
  const worker = new Worker(new URL('./compute-worker.js', import.meta.url), { type: 'module' });
  worker.onmessage = onComputeMessage;
  worker.onerror = onComputeError;
  return worker;
}

let computeWorker = startComputeWorker();
let nextId = 0, inFlight = null, pending = null, result = null;
const computeLoad = loadWatch({
  replace: (n) => {
    console.warn(`favor-attention demo: the compute worker stopped answering while it loaded; starting another (${n})`);
    metrics.restarts = n;
    computeWorker.terminate();
    computeWorker = startComputeWorker();
    if (inFlight) send(inFlight);
  },
  giveUp: () => {
    computeWorker.terminate();
    setStatus('the compute worker stopped answering while it loaded, three times: reload the page', true);
    console.error('favor-attention demo: the compute worker stopped answering while it loaded, three times');
  },
});

// For tests and benchmarks: idle = no computation in flight or queued; shown = the drawn settings.
Object.defineProperty(metrics, 'idle', { get: () => !inFlight && !pending });
Object.defineProperty(metrics, 'shown', { get: () => view?.params ?? null });

function computeParams() {
  const { L, d, m, kernel, sampling, causal, scale, pattern, seed, dataSeed, text, model, layer, head, trainedW } = state;
  return { L, d, m, kernel, sampling, causal, scale, pattern, seed, dataSeed, temperature: temperatureOf(state.tempStep),
    ...(pattern === 'model' && { text, model, layer, head, trainedW }) };
}
// What a generation depends on: when it changes, the shown continuation no longer belongs to the text.
const generationKey = (p = computeParams()) => JSON.stringify([p.text, p.model, p.kernel, p.sampling, p.m, p.seed, p.trainedW, p.temperature]);

// Panels that wait for a slow computation (a model's weights, a long study of k-means) are dimmed.
let pendingTimer = 0;
function markPending(on) {
  clearTimeout(pendingTimer);
  if (on) pendingTimer = setTimeout(() => document.body.classList.add('computing'), 400);
  else document.body.classList.remove('computing');
}

function requestCompute(t0 = performance.now()) {
  const req = { id: ++nextId, params: computeParams(), t0 };
  if (isModel()) modelPanel.invalidate(generationKey(req.params));
  markPending(true);
  if (inFlight) {
    req.t0 = Math.min(t0, pending?.t0 ?? Infinity);  // latency counts from the oldest unserved change
    pending = req;
    return;
  }
  send(req);
}

function send(req) {
  inFlight = req;
  req.sent = performance.now();
  computeWorker.postMessage({ id: req.id, params: req.params });
}

function onComputeMessage(event) {
  const msg = event.data;
  computeLoad.heard();
  if (msg.type === 'alive') return;
  if (msg.type === 'ready') {
    computeLoad.loaded();
    metrics.ready = true;
    readyText = `WebAssembly ${msg.info.relaxedSimd ? 'relaxed SIMD (fused multiply-add)' : msg.info.simd ? 'SIMD' : '(no SIMD)'}, ${msg.info.threads} thread${msg.info.threads > 1 ? 's' : ''}, v${msg.info.version}`;
    // Why one thread (not cross-origin isolated, one core…): in the footer and the status's tooltip.
    readyWhy = msg.info.threads === 1 && msg.info.threadsReason ? `one thread: ${msg.info.threadsReason}` : '';
    $('#build-info').textContent = readyWhy ? `${readyText}; ${readyWhy}` : readyText;
    setStatus(`ready: ${readyText}`, false, readyWhy);
    return;
  }
  if (msg.type === 'fatal') {
    computeLoad.loaded();
    setStatus(msg.message, true);
    console.error(msg.message);
    return;
  }
  if (msg.type === 'progress') {
    if (msg.purpose === 'long') longView.progress(msg);
    else modelPanel.progress(msg);
    return;
  }
  if (msg.type === 'manifest') {
    manifestModels = msg.models;
    modelPanel.setModels(msg.models, state.model);
    modelPanel.setShape(msg.layers, msg.heads, state.layer, state.head);
    longView.setModels(msg.models);
    textSub();
    return;
  }
  if (msg.type === 'long-start' || msg.type === 'long-block' || msg.type === 'long-done') {
    longView.message(msg);
    metrics.long = longView.run;
    return;
  }
  if (msg.type === 'generated') {
    modelPanel.generated(msg, generationKey());
    metrics.generated = (metrics.generated ?? 0) + 1;
    return;
  }
  const req = inFlight;
  inFlight = null;
  if (msg.type === 'error' && msg.field === 'text') {
    // Not a failure: a text too short to predict from. Said at the box; the panels keep the
    // last text they showed, dimmed, until the next one.
    textNote(msg.message, true);
    document.body.classList.add('stale');
  } else if (msg.type === 'error') {
    setStatus(`computation failed: ${msg.message}`, true);
    metrics.errors.push(msg.message);
    console.error('favor-attention demo:', msg.message);
  } else {
    result = { ...msg, received: performance.now(), sent: req.sent };
    document.body.classList.remove('stale');
    if (msg.model) textNote(msg.model.window, false);
    redraw(req.t0, true);
  }
  if (pending) { const p = pending; pending = null; send(p); } else markPending(false);
}
// Above the text box: how much of it the selected model reads (its context, from the manifest).
let manifestModels = null;
function textSub() {
  const context = manifestModels?.find((m) => m.name === state.model)?.context ?? 256;
  $('#text-sub').textContent = `the model reads its last ${context.toLocaleString('en-US')} characters; characters outside the book's alphabet are dropped`;
}
function textNote(text, error) {
  const note = $('#text-note');
  note.textContent = text;
  note.title = text;
  note.classList.toggle('error', error);
  controls.text.setAttribute('aria-invalid', String(error));
}
function onComputeError(e) {
  setStatus(`the compute worker failed: ${e.message ?? e}`, true);
  console.error('favor-attention demo: compute worker', e.message ?? e);
}

// ---------------------------------------------------------------- drawing the panels

let hover = null;  // [i, j] or null
const heatmaps = {};
const onHover = (i, j) => setHover(i === null ? null : [i, j]);
const onSelect = (i) => { controls.row.value = String(i); onControl('row'); };
const lineView = new LineView($('#line-view'), $('#line-legend'));
heatmaps.exact = new Heatmap($('#hm-exact'), { onHover, onSelect, name: 'A' });
heatmaps.approx = new Heatmap($('#hm-approx'), { onHover, onSelect, name: 'Â' });
heatmaps.diff = new Heatmap($('#hm-diff'), { onHover, onSelect, name: 'A − Â' });
const pcaView = new PcaView($('#pca-plot'), $('#pca-note'));
const modelPanel = new ModelPanel({
  onSelect: (layer, head) => {
    state.layer = layer;
    state.head = head;
    writeControls();
    writeUrl();
    requestCompute();
  },
  onGenerate: (n) => computeWorker.postMessage({ kind: 'generate', id: ++nextId, params: computeParams(), n, key: generationKey() }),
});
const longView = new LongView({
  post: (message) => computeWorker.postMessage(message),
  onN: (n) => { state.longN = n; writeUrl(); },
});

// The readout speaks for keyboard users while a heatmap has focus (not on every mouse move).
for (const hm of document.querySelectorAll('.hm')) {
  hm.addEventListener('focus', () => $('#readout').setAttribute('aria-live', 'polite'));
  hm.addEventListener('blur', () => $('#readout').removeAttribute('aria-live'));
}

let view = null;  // what is drawn: { L, causal, A, Ahat, diff, params, ranges }

function redraw(t0, fresh = false) {
  const tDraw = performance.now();
  const { A, Ahat, params, errors, timings, nonPositive, nonFinite } = result;
  const L = params.L, n = L * L, causal = params.causal;
  let ranges = view?.ranges;
  let diff = view?.diff;
  const model = result.model;
  if (fresh || !view) {
    diff = new Float32Array(n);
    for (let x = 0; x < n; x++) diff[x] = A[x] - Ahat[x];
    // A keeps its colors whatever the approximation: on a trained model one fixed scale for
    // every head (weights are probabilities: 10⁻⁴ … 1 on the log scale, 0 … 1 linear); on
    // synthetic inputs the range of A. Â is drawn on A's scale, its entries above the top
    // saturate (the legend counts them). |A − Â| ends at its maximum unless that is a spike far
    // above its 99.9th percentile.
    let maxA = 0, minPos = Infinity;
    for (let x = 0; x < n; x++) { const a = A[x]; if (a > maxA) maxA = a; if (a > 0 && a < minPos) minPos = a; }
    const top = (values, abs) => {
      const q = quantile(values, 0.999, abs), max = quantile(values, 1, abs);
      return max > 1.5 * q ? q : max;
    };
    const vmax = model ? 1 : Math.min(1, maxA);
    const floor = model ? 1e-4 : Math.max(vmax * 1e-6, Number.isFinite(minPos) ? minPos : vmax * 1e-6);
    const dmax = top(diff, true);
    let over = 0, dover = 0;
    for (let x = 0; x < n; x++) { if (Ahat[x] > vmax * 1.0001) over++; if (Math.abs(diff[x]) > dmax) dover++; }
    ranges = { vmax, floor, dmax, over, dover };
  }
  const { vmax, floor, dmax } = ranges;
  const log = setting('log');
  const shared = sequentialScale({ vmax, log, floor });
  const dscale = divergingScale({ vmax: dmax, log });
  heatmaps.exact.draw(A, L, L, shared, causal);
  heatmaps.approx.draw(Ahat, L, L, shared, causal);
  heatmaps.diff.draw(diff, L, L, dscale, causal);
  view = { L, causal, A, Ahat, diff, params, ranges, total: model?.shown?.total ?? L };
  // A text longer than the heatmaps' window: they show its last positions, and say so.
  const shown = model?.shown, windowNote = $('#window-note');
  windowNote.hidden = !(shown?.offset > 0);
  if (shown?.offset > 0) {
    const n = (x) => x.toLocaleString('en-US');
    windowNote.textContent = `The model reads ${n(shown.total)} characters; the heatmaps, the line view and the row inspector show the last ${n(shown.size)} ` +
      `(positions ${n(shown.offset)}–${n(shown.total - 1)}, numbered 0–${n(shown.size - 1)} here) against the keys among them. ` +
      'The grid\'s pictures and frames, the error measures and the inspector\'s KL cover the whole text.';
  }
  const row = shownRow();
  if (controls.row.value !== String(row)) controls.row.value = String(row);
  controls.row.max = String(L - 1);
  const scaleName = `${log ? 'log' : 'linear'} scale${log ? ` ${fmt(shared.vmin, 1)} … ${fmt(vmax, 2)}` : ` 0 … ${fmt(vmax, 2)}`}`;
  drawLegend($('#legend-shared'), shared, model
    ? `A, Â and every head in the grid: one fixed ${scaleName}${ranges.over ? `; ${ranges.over} Â entries above 1 saturate` : ''}; grey: masked (j > i)`
    : `A and Â: A's ${scaleName}${ranges.over ? `; ${ranges.over} Â entries above A's top saturate` : ''}${causal ? '; grey: masked (j > i)' : ''}`);
  drawLegend($('#legend-diff'), dscale, `A − Â, diverging at 0${log ? ' (symmetric log)' : ''}${ranges.dover ? `; ${ranges.dover} beyond ± saturate` : ''}`);
  if (model) {
    modelPanel.draw(model, params, row, fresh, shared);
    drawAxisLabels(model.chars, row);
    lineView.draw({ chars: model.chars, A, Ahat, L, i: row, label: model.label, before: model.rows?.before[row] });
  } else {
    for (const h of Object.values(heatmaps)) h.labels(null);
    const how = cbCaption(params) ?? `${params.kernel}, ${params.sampling}, m = ${params.m}`;
    $('#headline').innerHTML = `Synthetic ${params.pattern} Q and K (L = ${L}, d = ${params.d}, input scale ${params.scale.toFixed(2)}${causal ? ', causal' : ''}): ` +
      `mean row KL(A‖Â) <b class="num approx">${fmt(errors.meanRowKL)}</b> with ${how}`;
  }

  // Caption and the note on entries that are not probabilities (trigonometric features).
  const cb = result.codebook;
  const caption = result.model ? `(${result.model.label})` : cb
    ? `(${MODE_NAMES[params.kernel]}${cb.assignment === 'soft' ? `, T = ${fmtT(params.temperature)}` : ''}, ` +
      `${cb.assignment === 'gaussian' ? 'C = W/√scale, orthogonal-fixed' : 'k-means'}, m = ${cb.clusters}${cb.capped ? ' = L' : ''})`
    : `(${params.kernel}, ${params.sampling}, m = ${params.m})`;
  // Where the caption wraps, "m = 256" stays on one line.
  const mPart = /m = [^,)]+/.exec(caption);
  $('#approx-caption').replaceChildren(...(mPart
    ? [caption.slice(0, mPart.index), Object.assign(document.createElement('span'), { className: 'nowrap', textContent: mPart[0] }),
      caption.slice(mPart.index + mPart[0].length)]
    : [caption]));
  $('#approx-caption').title = caption;
  const note = $('#negative-note');
  note.hidden = !(nonPositive || nonFinite);
  if (!note.hidden) {
    note.textContent = `⚠ ${nonPositive + nonFinite} entries of Â ≤ 0 (why?)`;
    note.title = `${nonPositive} entries of Â are ≤ 0${nonFinite ? ` and ${nonFinite} are not finite` : ''}: ` +
      'the trigonometric (sin/cos) estimator is unbiased but not positive, so normalized rows can hold negative ' +
      'or very large weights (the Performer paper\'s motivating failure). The heatmaps draw them as 0 on the linear ' +
      'scale and at the floor of the log scale; the readout shows the true value; the KL treats them as 1e-12 and ' +
      'renormalizes the row.';
    note.setAttribute('aria-label', note.title);
  }

  const KERNEL_NOTES = {
    positive: 'unbiased, positive',
    hyperbolic: 'unbiased, positive, lower variance',
    trigonometric: 'unbiased, not positive',
    relu: 'not a softmax estimator: a different kernel',
    oprf: 'unbiased, positive, A, B, D fitted to the inputs',
    sderf: 'unbiased, positive, per-direction A fitted to the inputs\' second moments',
    aderf: 'unbiased, positive, queries and keys rebalanced by Ψ, then OPRF',
  };
  $('#features-note').textContent = result.model
    ? `Layer ${params.layer}, head ${params.head} of the model on the text: its real q and k (exact forward pass), Â by ${result.model.label}` +
      `${KERNEL_NOTES[params.kernel] && !/exported W/.test(result.model.label) ? ` (${KERNEL_NOTES[params.kernel]})` : ''}.`
    : cb ? codebookNote(params, cb) : `φ(x) has M = ${result.numFeatures} features (${KERNEL_NOTES[params.kernel]}).`;
  // The story's paragraph is about FAVOR+: say what the grid and Â show when it is another approximation.
  const STORY_NOTES = {
    oprf: 'FAVOR++, positive features with A, B, D fitted to each head\'s q and k',
    sderf: 'FAVOR#\'s symmetric features, OPRF\'s coefficient along each principal direction of the head\'s q̃ + k̃',
    aderf: 'FAVOR#\'s asymmetric features, queries and keys rebalanced by a matrix fitted to the head, then OPRF',
  };
  const otherKernel = Boolean(result.model) && !/exported W/.test(result.model.label) && (cb || params.kernel !== 'positive');
  $('#story-kernel').hidden = !otherKernel;
  if (otherKernel) {
    $('#story-kernel').textContent = `Here the grid and Â show ${result.model.label} instead` +
      `${STORY_NOTES[params.kernel] && !cb ? ` (${STORY_NOTES[params.kernel]})` : ''}: the frames are its errors.`;
  }
  const identity = $('#identity-note');
  identity.hidden = !cb?.identity;
  if (cb?.identity) {
    const { matrix, output } = cb.identity;
    identity.innerHTML = `<span title="Â from codebookAttentionMatrix (Gaussian responsibilities, C = W/√scale) against favorAttentionMatrix with the same W, measured now; the outputs likewise">` +
      `= FAVOR+ positive with this W:<br>max |Â − Â<sub>FAVOR+</sub>| = <b>${fmt(matrix, 2)}</b><br>max |out − out<sub>FAVOR+</sub>| = <b>${fmt(output, 2)}</b></span>`;
    identity.dataset.value = String(matrix);
    identity.dataset.output = String(output);
  }
  // The PCA view of keys and codewords.
  $('#pca').hidden = !cb;
  document.querySelector('.below').classList.toggle('with-pca', Boolean(cb));
  if (cb && pcaView.view !== cb.view) pcaView.draw(cb.view, { L, clusters: cb.clusters, assignment: cb.assignment });

  // Error measures.
  for (const td of document.querySelectorAll('#metrics td')) {
    const v = errors[td.dataset.metric];
    td.textContent = fmt(v);
    td.dataset.value = String(v);
  }
  for (const h of Object.values(heatmaps)) h.setRow(row);
  drawInspector();
  setHover(hover, true);

  const tDone = performance.now();
  const drawMs = tDone - tDraw;
  const latency = tDone - t0;
  drawTimings(timings, drawMs, latency, fresh, cb);
  metrics.updates++;
  if (metrics.updates === 1) metrics.firstView = performance.now();  // from navigation start
  const record = { id: metrics.updates, latency, drawMs, fresh, worker: timings.worker, frame: null };
  metrics.history.push(record);
  if (metrics.history.length > 2000) metrics.history.shift();
  document.body.dataset.updates = String(metrics.updates);
  requestAnimationFrame(() => setTimeout(() => { record.frame = performance.now() - t0; }, 0));
  if (readyText) setStatus(`ready: ${readyText}`, false, readyWhy);  // a failure before clears with this success
}

// The approximation in words for the synthetic headline, or null for random features.
function cbCaption(p) {
  const cb = result?.codebook;
  return cb ? `${MODE_NAMES[p.kernel]}, m = ${cb.clusters}` : null;
}

// What the codebook modes computed, under the error measures.
function codebookNote(p, cb) {
  if (cb.assignment === 'gaussian') {
    return `Codebook C = W/√scale of an orthogonal-fixed positive feature map (m = ${cb.clusters}, seed ${p.seed}); ` +
      'responsibilities exp(−‖k̃ − c̃‖²/2), not normalized.';
  }
  const how = cb.assignment === 'hard' ? 'each key replaced by its nearest codeword'
    : `responsibilities softmax(−‖k̃ − c̃‖²/2T), T = ${fmtT(p.temperature)}`;
  return `k-means codebook of ${cb.clusters} codewords fitted to the keys (k-means++ seed ${p.seed}, ≤ 25 Lloyd iterations)` +
    `${cb.capped ? `, m capped at L = ${p.L}` : ''}; ${how}.`;
}

function drawTimings(t, drawMs, latency, fresh, codebook) {
  const rows = result?.model ? [
    ['model, exact attention', t.inputs, t.forwardCached ? 'cached' : '', 'the forward pass on the text with exact attention in every layer, keeping each layer\'s q, k, v (dense layers by favor.matmul)'],
    ['model, approximation', t.approxModel, '', 'the forward pass with the approximation substituted in every layer'],
    ['every head: A, Â, errors', t.overview, '', 'attentionMatrix and the approximate matrix of every layer (4 heads per call), compare per head'],
    ['selected head: outputs', t.headOutput, '', 'exactAttention and the approximation on the selected head, output relative error'],
    ['draw every panel', drawMs],
  ] : codebook ? [
    ['inputs Q, K, V (JS)', t.inputs, t.inputs === 0 ? 'cached' : ''],
    codebook.assignment === 'gaussian' ? ['W, C = W/√scale', t.featureMap, t.mapCached ? 'cached' : '']
      : ['C (kmeans)', t.featureMap, t.mapCached ? 'cached' : ''],
    ['A (attentionMatrix)', t.exactMatrix],
    ['Â (codebook matrix)', t.approxMatrix, '', 'codebookAttentionMatrix'],
    ['out (exactAttention)', t.exactOutput],
    ['out (codebook)', t.favorOutput, '', 'codebookAttention'],
    ['compare, output error', t.errors],
    ...(codebook.identity ? [['FAVOR+ check (Â, out)', t.identity, '', 'favorAttentionMatrix and favorAttention with the same W, and the max differences']] : []),
    ['PCA, nearest codeword', t.pca, '', 'top-2 principal axes of the keys (JS, cached per input), projections, nearest codeword of every key (JS, or one attentionMatrix call when large)'],
    ['draw every panel', drawMs],
  ] : [
    ['inputs Q, K, V (JS)', t.inputs, t.inputs === 0 ? 'cached' : ''],
    ['W (createFeatureMap)', t.featureMap, t.mapCached ? 'cached' : ''],
    ['A (attentionMatrix)', t.exactMatrix],
    ['Â (favorAttentionMatrix)', t.approxMatrix],
    ['out (exactAttention)', t.exactOutput],
    ['out (favorAttention)', t.favorOutput],
    ['compare, output error', t.errors],
    ['draw every panel', drawMs],
  ];
  const cell = ([name, v, note, title]) => `<tr><th scope="row"${title ? ` title="${title}"` : ''}>${name}</th><td class="${note ? 'cached' : ''}">${note || v.toFixed(v < 10 ? 2 : 1)}</td></tr>`;
  $('#timings').innerHTML = rows.map(cell).join('') +
    `<tr class="total"><th scope="row" title="from the control change to every panel drawn (worker round trip included)">${fresh ? 'change → all panels' : 'redraw → all panels'}</th><td data-latency="${latency}">${latency.toFixed(1)}</td></tr>`;
}

// Characters on the heatmaps' axes: all of them where they fit, else the inspected query and
// the keys it weights most (exact on A and A − Â, approximated on Â), each at least `gap` keys
// from a stronger one shown (neighbouring keys' labels would print over each other).
const strongest = (M, L, i, k, gap) => {
  const row = [];
  for (let j = 0; j <= i; j++) row.push([M[i * L + j], j]);
  const kept = [];
  for (const [, j] of row.sort((a, b) => b[0] - a[0])) {
    if (kept.length === k) break;
    if (kept.every((c) => Math.abs(c - j) >= gap)) kept.push(j);
  }
  return kept;
};
function drawAxisLabels(chars, i) {
  const { L, A, Ahat } = view;
  const show = (c) => (c === ' ' ? '␣' : c === '\n' ? '⏎' : c);
  const width = heatmaps.exact.root.getBoundingClientRect().width || 300;
  const all = width / L >= 8;
  const gap = Math.ceil((10 * L) / width);  // keys per 10 px: a label's width
  for (const [name, M] of [['exact', A], ['approx', Ahat], ['diff', A]]) {
    const keys = new Set(strongest(M, L, i, 4, gap));
    const idx = all ? [...chars].map((_, j) => j) : [...keys].sort((a, b) => a - b);
    heatmaps[name].labels({
      rows: (all ? idx : [i]).map((r) => [r, show(chars[r]), r === i ? 'query' : '']),
      cols: idx.map((j) => [j, show(chars[j]), keys.has(j) ? 'key' : '']),
    });
  }
}

function drawInspector() {
  if (!view) return;
  const { L, A, Ahat, causal } = view;
  const i = Math.min(shownRow(), L - 1);
  const S = causal ? i + 1 : L;
  const exact = [], approx = [];
  let { kl, nonPositive: nonPos } = rowKL(A, Ahat, i * L, S);
  for (let j = 0; j < S; j++) {
    const a = A[i * L + j], b = Ahat[i * L + j];
    exact.push([j, a, `j = ${j}: A = ${fmt(a)}`]);
    approx.push([j, b, `j = ${j}: Â = ${fmt(b)}`]);
  }
  // In a window of a longer text the KL is of the whole row (computed in the worker); the plot has the window's keys.
  const rows = result?.model?.rows, total = view.total;
  if (rows) kl = rows.kl[i];
  $('#inspector-sub').textContent = `query i = ${i}: KL(A_i ‖ Â_i) = ${fmt(kl)}${rows ? ` over all ${total.toLocaleString('en-US')} keys; plotted: the last ${L}` : ''}` +
    `${nonPos ? `, ${nonPos} weights ≤ 0 (off the log axis)` : ''}`;
  const svg = $('#row-plot');
  const geom = drawPlot(svg, {
    x: { log: false, domain: [-0.5, Math.max(S, 2) - 0.5], label: causal ? `key j (causal: j ≤ ${i})` : 'key j', format: (v) => String(Math.round(v)) },
    y: { log: setting('log'), label: 'weight' },
    series: [
      { label: `exact A[${i}, :]`, color: '#1d2330', points: exact, width: 1.6 },
      { label: `approximate Â[${i}, :]`, color: '#e0711a', points: approx, width: 1.4 },
    ],
    cursorX: hover ? hover[1] : null,
    legendRoot: $('#row-legend'),
    margin: { b: 30 },
  });
  svg.onpointermove = (e) => {
    const r = svg.getBoundingClientRect();
    const px = ((e.clientX - r.left) / r.width) * geom.width;
    const t = (px - geom.margin.l) / (geom.width - geom.margin.l - geom.margin.r);
    const j = Math.round(geom.x.lo + t * (geom.x.hi - geom.x.lo));
    if (j >= 0 && j < S) setHover([i, j]);
  };
  svg.onpointerleave = () => setHover(null);
  inspectorCursor = svg.querySelector('.cursor');
  inspectorGeom = { ...geom, S };
}
let inspectorCursor = null, inspectorGeom = null;

function setHover(h, fromRedraw = false) {
  const changed = !fromRedraw && (h?.[0] !== hover?.[0] || h?.[1] !== hover?.[1]);
  hover = h;
  for (const map of Object.values(heatmaps)) map.setCursor(h ? h[0] : null, h ? h[1] : null);
  if (result?.codebook) pcaView.highlight(h ? h[1] : null);
  const out = $('#readout');
  if (!view) return;
  if (!h) {
    out.innerHTML = 'Hover a heatmap (or focus one and use the arrow keys) to read (i, j), A, Â and the error; click to inspect a row.';
  } else {
    const [i, j] = h;
    const L = view.L;
    if (view.causal && j > i) {
      out.innerHTML = `(i, j) = (<b>${i}</b>, <b>${j}</b>): masked (causal: key j > query i)`;
    } else {
      const a = view.A[i * L + j], b = view.Ahat[i * L + j], e = a - b;
      const rel = a > 0 ? ` (${fmt((100 * e) / a, 2)} % of A)` : '';
      const cb = result?.codebook;
      const code = cb && j < cb.view.assign.length ? ` &nbsp; key ${j} → codeword ${cb.view.assign[j]}${cb.assignment === 'hard' ? '' : ' (nearest)'}` : '';
      const chars = result?.model?.chars;
      const show = (c) => (c === undefined ? '' : JSON.stringify(c).slice(1, -1).replace(/</g, '&lt;'));
      const text = chars ? ` &nbsp; query <code>${show(chars[i])}</code> → key <code>${show(chars[j])}</code>` : '';
      out.innerHTML = `(i, j) = (<b>${i}</b>, <b>${j}</b>)${text} &nbsp; A = <b>${fmt(a)}</b> &nbsp; Â = <b>${fmt(b)}</b>` +
        `${b <= 0 ? ' <span class="err-pos">(≤ 0)</span>' : ''} &nbsp; A − Â = <b class="${e >= 0 ? 'err-pos' : 'err-neg'}">${fmt(e)}</b>${rel}${code}`;
    }
  }
  // Move the inspector's cursor without redrawing the plot.
  if (changed && inspectorGeom) {
    const svg = $('#row-plot');
    inspectorCursor?.remove();
    inspectorCursor = null;
    if (h && h[1] < inspectorGeom.S) {
      const g = inspectorGeom;
      const x = g.margin.l + ((h[1] - g.x.lo) / (g.x.hi - g.x.lo)) * (g.width - g.margin.l - g.margin.r);
      const line = document.createElementNS('http://www.w3.org/2000/svg', 'line');
      for (const [k, v] of Object.entries({ x1: x, x2: x, y1: g.margin.t, y2: g.height - g.margin.b, class: 'cursor' })) line.setAttribute(k, v);
      svg.appendChild(line);
      inspectorCursor = line;
    }
  }
}

// ---------------------------------------------------------------- studies (second worker)

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
    ...(isModel() && { text: state.text, model: state.model, L: view?.total ?? 256, d: 32, causal: true,
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

for (const [name, key] of [['study-kernel', 'studyKernels'], ['study-sampling', 'studySamplings']]) {
  for (const box of document.querySelectorAll(`input[name=${name}]`)) {
    box.addEventListener('change', () => {
      const chosen = [...document.querySelectorAll(`input[name=${name}]:checked`)].map((b) => b.value);
      if (!chosen.length) { box.checked = true; return; }
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
$('#gen-n').addEventListener('change', (e) => {
  const v = intIn(e.target.value, 1, 255);
  if (v) { state.genN = v; writeUrl(); } else e.target.value = String(state.genN);
});
$('#study-heads').addEventListener('change', (e) => { state.studyHeads = e.target.value; writeUrl(); });
$('#study-mmax').addEventListener('change', (e) => { state.studyMmax = Number(e.target.value); writeUrl(); });
$('#study-metric').addEventListener('change', (e) => { state.studyMetric = e.target.value; writeUrl(); drawErrorStudy(); });

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

// ---------------------------------------------------------------- start

writeControls();
writeUrl();
drawErrorStudy();
drawSpeedStudy();
studyButtons();
requestCompute();
let resizeTimer = 0;
addEventListener('resize', () => {
  clearTimeout(resizeTimer);
  resizeTimer = setTimeout(() => { if (result) redraw(performance.now()); drawErrorStudy(); drawSpeedStudy(); longView.redraw(); }, 100);
});
