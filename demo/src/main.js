// The interactive page: the controls (the settings and their URL are settings.js), a compute
// worker for the matrices (compute-client.js), and the panels drawn from its answer: heatmaps
// with a linked crosshair (their colour ranges heatmap-ranges.js, axis characters
// axis-labels.js, the hovered entry readout.js), the row inspector (row-inspector.js), error
// measures and timings, the PCA view of keys and codewords (codebook modes). What the panels say
// is captions.js, the two studies under them studies.js.
import { Heatmap, drawLegend } from './heatmap.js';
import { sequentialScale, divergingScale, fmt } from './colors.js';
import { PATTERNS } from './inputs.js';
import { HeadsWhy, measureOf } from './heads-why.js';
import { PcaView } from './pca-view.js';
import { DEFAULT_TEXT, ModelPanel } from './model-panel.js';
import { LineView } from './line-view.js';
import { RowInspector } from './row-inspector.js';
import { readoutHtml } from './readout.js';
import { axisLabels } from './axis-labels.js';
import { difference, heatmapRanges } from './heatmap-ranges.js';
import { LongView } from './long-view.js';
import { ComputeClient } from './compute-client.js';
import { temperatureOf } from './modes.js';
import { modeControls } from './mode-controls.js';
import { LISTS, TEMP_RANGE, applyControl, genLengthIn, parseSettings, settingOf, settingsQuery } from './settings.js';
import { setUpStudies } from './studies.js';
import {
  approxCaption, captionParts, diffLegend, featuresNote, identityNote, latencyLabel, modelTry, negativeNote,
  sharedLegend, storyKernelNote, syntheticHeadline, syntheticTry, timingRows, windowNote,
} from './captions.js';

// ---------------------------------------------------------------- settings and the URL

const setting = (key) => settingOf(state, key);
const MODEL_TITLE = 'a trained character-level transformer (train/): Q and K of the chosen layer and head on the text below';
const isModel = () => state.pattern === 'model';

// The URL follows the settings, written after the panels are drawn (replaceState costs ~1–2 ms).
let urlTimer = 0;
function writeUrl() {
  clearTimeout(urlTimer);
  urlTimer = setTimeout(() => history.replaceState(null, '', `${location.pathname}?${settingsQuery(state)}${location.hash}`), 0);
}

const state = parseSettings(location.search);
let manifestModels = null;  // the models' names, titles, attention and context, once the worker has read them
const $ = (sel) => document.querySelector(sel);
// A note shown with `text`, or hidden where there is none (null).
function setNote(element, text) {
  element.hidden = text === null;
  if (text !== null) element.textContent = text;
}
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
  trainedW: $('#trainedW'), spread: $('#spread'),
};
controls.temperature.min = String(TEMP_RANGE[0]);
controls.temperature.max = String(TEMP_RANGE[1]);
for (const key of ['L', 'd', 'm']) controls[key].max = String(LISTS[key].length - 1);

function writeControls() {
  for (const key of ['L', 'd']) {  // m: writeModeControls (an exported W has its own)
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
  controls.spread.checked = state.spread;
  controls.model.value = state.model;
  controls.layer.value = String(state.layer);
  controls.head.value = String(state.head);
  if (isModel()) controls.row.max = String((view?.L ?? 256) - 1);
  writeModeControls();
  $('#gen-n').value = String(state.genN);
  studies.writeControls();
  longView.set({ n: state.longN, window: state.longWindow, text: state.text, seed: state.seed });
  textSub();
  showMode(isModel());
  $('#story-try-synthetic').innerHTML = syntheticTry(state.kernel, state.pattern, state);
}

// The page by mode: a trained model has its text, its grid of heads, the model panel and the
// long-text view; synthetic inputs have none of these.
function showMode(model) {
  modelPanel.show(model);
  longView.show(model);
  $('#nav-long').hidden = !model;
  for (const b of [$('#mode-model'), $('#mode-synthetic')]) b.setAttribute('aria-pressed', String((b.id === 'mode-model') === model));
  $('#story-model').hidden = $('#text-wrap').hidden = !model;
  $('#story-synthetic').hidden = $('#footer-synthetic').hidden = model;
  $('#footer-model').hidden = !model;
  $('#story').classList.toggle('synthetic', !model);
  $('#grid-panel').hidden = $('#legend-grid').hidden = $('#hint-grid').hidden = !model;
  document.querySelector('.panels').classList.toggle('with-grid', model);
}

// The model shown was trained with FAVOR+ (once the manifest says).
const favorTrained = () => manifestModels?.find((m) => m.name === state.model)?.attention === 'favor';

// The model story's suggestion; for VQ it weighs the codewords against the length of the text last
// computed, so a result drawn writes it again.
function writeTry() {
  $('#story-try-model').textContent = modelTry(favorTrained(), state.kernel, { m: state.m, L: result?.model?.shown?.total, ownText: state.text !== DEFAULT_TEXT });
}

// The form's parts that depend on the kernel menu and the input (mode-controls.js).
function writeModeControls() {
  const f = modeControls(state, { hasExported: favorTrained() });
  writeTry();
  controls.trainedW.checked = f.trainedW.checked;
  controls.trainedW.disabled = f.trainedW.disabled;
  controls.trainedW.closest('.row').classList.toggle('disabled', f.trainedW.disabled);
  setNote($('#trainedW-note'), f.trainedW.note);
  controls.sampling.disabled = f.sampling.disabled;
  controls.sampling.value = f.sampling.value;
  setNote($('#sampling-note'), f.samplingNote);
  for (const c of [controls.m, controls.seed, $('#redraw')]) c.disabled = f.features.disabled;
  controls.m.value = String(LISTS.m.indexOf(f.features.m));
  controls.m.setAttribute('aria-valuetext', String(f.features.m));
  $('#m-out').textContent = String(f.features.m);
  for (const id of ['#m', '#seed']) $(id).closest('.row').classList.toggle('disabled', f.features.disabled);
  $('#temperature-row').hidden = !f.temperature.shown;
  controls.temperature.value = String(f.temperature.step);
  controls.temperature.setAttribute('aria-valuetext', `T = ${f.temperature.text}`);
  $('#temperature-out').textContent = f.temperature.text;
  $('#m-label').textContent = f.mLabel;
  setNote($('#m-note'), f.mNote);
  for (const about of ['features', 'vq', 'model']) $(`#about-${about}`).hidden = about !== f.about;
}

function onControl(key, event) {
  const t0 = Math.min(performance.now(), event?.timeStamp > 0 ? event.timeStamp : Infinity);
  const c = controls[key];
  const what = applyControl(state, key, { value: c.value, checked: c.checked }, { modelL: view?.L ?? null });
  if (!what) { writeControls(); return; }  // a value it cannot take: the control shows the setting again
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
  // the first control shown: a model hides the synthetic inputs' rows
  if (open) [...drawer.querySelectorAll('select, input')].find((el) => el.offsetParent !== null && !el.disabled)?.focus();
}
$('#drawer-toggle').addEventListener('click', () => setDrawer(!drawer.classList.contains('open')));
$('#drawer-close').addEventListener('click', () => { setDrawer(false); $('#drawer-toggle').focus(); });
drawer.addEventListener('keydown', (e) => { if (e.key === 'Escape' && drawer.classList.contains('open')) { setDrawer(false); $('#drawer-toggle').focus(); } });
// A tap on the page beside the open drawer closes it, and does nothing else there.
document.addEventListener('click', (e) => {
  if (!drawer.classList.contains('open') || drawer.contains(e.target) || $('#drawer-toggle').contains(e.target)) return;
  e.preventDefault();
  e.stopPropagation();
  setDrawer(false);
}, true);
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

let result = null;  // the worker's last answer drawn
const compute = new ComputeClient({
  ready: (msg) => {
    metrics.ready = true;
    readyText = `WebAssembly ${msg.info.relaxedSimd ? 'relaxed SIMD (fused multiply-add)' : msg.info.simd ? 'SIMD' : '(no SIMD)'}, ${msg.info.threads} thread${msg.info.threads > 1 ? 's' : ''}, v${msg.info.version}`;
    // Why one thread (not cross-origin isolated, one core…): in the footer and the status's tooltip.
    readyWhy = msg.info.threads === 1 && msg.info.threadsReason ? `one thread: ${msg.info.threadsReason}` : '';
    $('#build-info').textContent = readyWhy ? `${readyText}; ${readyWhy}` : readyText;
    setStatus(`ready: ${readyText}`, false, readyWhy);
  },
  fatal: (msg) => {
    setStatus(msg.message, true);
    console.error(`favor-attention demo: ${msg.message}`);
  },
  progress: (msg) => (msg.purpose === 'long' ? longView.progress(msg) : modelPanel.progress(msg)),
  manifest: (msg) => {
    manifestModels = msg.models;
    modelPanel.setModels(msg.models, state.model);
    modelPanel.setShape(msg.layers, msg.heads, state.layer, state.head);
    longView.setModels(msg.models);
    textSub();
    writeModeControls();
  },
  long: (msg) => {
    longView.message(msg);
    metrics.long = longView.run;
  },
  generated: (msg) => {
    modelPanel.generated(msg, generationKey());
    metrics.generated = (metrics.generated ?? 0) + 1;
  },
  settled: onComputed,
  busy: markPending,
  restarted: (n) => {
    console.warn(`favor-attention demo: the compute worker stopped answering while it loaded; starting another (${n})`);
    metrics.restarts = n;
  },
  gaveUp: () => {
    setStatus('the compute worker stopped answering while it loaded, three times: reload the page', true);
    console.error('favor-attention demo: the compute worker stopped answering while it loaded, three times');
  },
});

// For tests and benchmarks: idle = no computation in flight or queued; shown = the drawn settings.
Object.defineProperty(metrics, 'idle', { get: () => compute.idle });
Object.defineProperty(metrics, 'shown', { get: () => view?.params ?? null });

function computeParams() {
  const { L, d, m, kernel, sampling, causal, scale, pattern, seed, dataSeed, text, model, layer, head, trainedW, spread } = state;
  return { L, d, m, kernel, sampling, causal, scale, pattern, seed, dataSeed, spread, temperature: temperatureOf(state.tempStep),
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
  const params = computeParams();
  if (isModel()) modelPanel.invalidate(generationKey(params));
  compute.request(params, t0);
}

// The worker's answer to a request: the matrices of its settings, or why there are none.
function onComputed(msg, req) {
  if (msg.type === 'error' && msg.field === 'text') {
    // Not a failure: a text too short to predict from. Said at the box; the panels keep the
    // last text they showed, dimmed, until the next one.
    textNote(msg.message, true);
    document.body.classList.add('stale');
    modelPanel.setTextValid(false);
    longView.setTextValid(false);
  } else if (msg.type === 'error') {
    setStatus(`computation failed: ${msg.message}`, true);
    metrics.errors.push(msg.message);
    console.error('favor-attention demo:', msg.message);
  } else {
    result = { ...msg, received: performance.now(), sent: req.sent };
    document.body.classList.remove('stale');
    modelPanel.setTextValid(true);
    longView.setTextValid(true);
    if (msg.model) textNote(msg.model.window, false);
    redraw(req.t0, true);
  }
}
// Above the text box: how much of it the selected model reads (its context, from the manifest).
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
const inspector = new RowInspector({ svg: $('#row-plot'), sub: $('#inspector-sub'), legend: $('#row-legend'), spreadNote: $('#spread-note'), onHover: (h) => setHover(h) });
// A head chosen in the grid or in the plot of which heads are hard.
const selectHead = (layer, head) => {
  state.layer = layer;
  state.head = head;
  writeControls();
  writeUrl();
  requestCompute();
};
const headsWhy = new HeadsWhy($('#heads-why-plot'), $('#heads-why-note'), selectHead);
const modelPanel = new ModelPanel({
  onSelect: selectHead,
  onGenerate: () => compute.post({ kind: 'generate', id: compute.nextId(), params: computeParams(), n: state.genN, key: generationKey() }),
});
const longView = new LongView({
  post: (message) => compute.post(message),
  onN: (n) => { state.longN = n; writeUrl(); },
  onWindow: (w) => { state.longWindow = w; writeUrl(); },
});
// The generation's length (the model panel's box, a setting of the URL).
$('#gen-n').addEventListener('change', (e) => {
  state.genN = genLengthIn(e.target.value, state.genN);
  e.target.value = String(state.genN);
  writeUrl();
});

// The readout speaks for keyboard users while a heatmap has focus (not on every mouse move).
for (const hm of document.querySelectorAll('.hm')) {
  hm.addEventListener('focus', () => $('#readout').setAttribute('aria-live', 'polite'));
  hm.addEventListener('blur', () => $('#readout').removeAttribute('aria-live'));
}

let view = null;  // what is drawn: { L, causal, A, Ahat, diff, params, ranges }

function redraw(t0, fresh = false) {
  const tDraw = performance.now();
  const { params, errors, timings } = result;
  const shared = drawMatrices(fresh);
  const row = shownRow();
  if (controls.row.value !== String(row)) controls.row.value = String(row);
  controls.row.max = String(view.L - 1);
  if (result.model) drawModel(result.model, params, row, fresh, shared);
  else {
    for (const h of Object.values(heatmaps)) h.labels(null);
    $('#headline').innerHTML = syntheticHeadline(params, errors, result.codebook);
  }
  drawNotes(params, result);
  writeTry();
  drawSide(result.codebook, result.model, params, view.L);
  drawErrors(errors);
  for (const h of Object.values(heatmaps)) h.setRow(row);
  drawInspector();
  setHover(hover, true);

  const tDone = performance.now();
  drawTimings(timings, tDone - tDraw, tDone - t0, fresh, result.codebook);
  recordUpdate({ latency: tDone - t0, drawMs: tDone - tDraw, fresh, worker: timings.worker }, t0);
  if (readyText) setStatus(`ready: ${readyText}`, false, readyWhy);  // a failure before clears with this success
}

// A, Â and A − Â with their legends; the colour ranges are kept until a fresh result (a redraw
// for another row or the log scale keeps them). Sets `view`; returns the shared scale.
function drawMatrices(fresh) {
  const { A, Ahat, params, model } = result;
  const L = params.L, causal = params.causal;
  let { ranges, diff } = view ?? {};
  if (fresh || !view) {
    diff = difference(A, Ahat);
    ranges = heatmapRanges({ A, Ahat, diff, model });
  }
  const log = setting('log');
  const shared = sequentialScale({ vmax: ranges.vmax, log, floor: ranges.floor });
  const dscale = divergingScale({ vmax: ranges.dmax, log });
  heatmaps.exact.draw(A, L, L, shared, causal);
  heatmaps.approx.draw(Ahat, L, L, shared, causal);
  heatmaps.diff.draw(diff, L, L, dscale, causal);
  view = { L, causal, A, Ahat, diff, params, ranges, total: model?.shown?.total ?? L };
  // A text longer than the heatmaps' window: they show its last positions, and say so.
  setNote($('#window-note'), windowNote(model?.shown));
  drawLegend($('#legend-shared'), shared, sharedLegend({ model, causal, log, scale: shared, ranges }));
  drawLegend($('#legend-diff'), dscale, diffLegend({ log, ranges }));
  return shared;
}

// A trained model: the grid and the model panel, the characters on the axes, the line view.
function drawModel(model, params, row, fresh, shared) {
  const { A, Ahat, L } = view;
  modelPanel.draw(model, params, row, fresh, shared);
  const labels = axisLabels({ chars: model.chars, L, A, Ahat, i: row, width: heatmaps.exact.root.getBoundingClientRect().width || 300 });
  for (const [name, spec] of Object.entries(labels)) heatmaps[name].labels(spec);
  lineView.draw({ chars: model.chars, A, Ahat, L, i: row, label: model.label, before: model.rows?.before[row] });
}

// For tests and benchmarks (window.__favorDemo): each update's latency, and when its frame showed.
function recordUpdate(record, t0) {
  metrics.updates++;
  if (metrics.updates === 1) metrics.firstView = performance.now();  // from navigation start
  const r = { id: metrics.updates, ...record, frame: null };
  metrics.history.push(r);
  if (metrics.history.length > 2000) metrics.history.shift();
  document.body.dataset.updates = String(metrics.updates);
  requestAnimationFrame(() => setTimeout(() => { r.frame = performance.now() - t0; }, 0));
}

// What the panels say beside the matrices: the caption under Â, the badge on entries that are not
// probabilities (trigonometric features), the features note, the story's kernel note and, for
// Performer as soft VQ, its measured identity with FAVOR+.
function drawNotes(params, r) {
  const caption = approxCaption(params, r);
  $('#approx-caption').replaceChildren(...captionParts(caption).map((part, i) =>
    (i % 2 === 1 ? Object.assign(document.createElement('span'), { className: 'nowrap', textContent: part }) : part)));
  $('#approx-caption').title = caption;
  const negative = negativeNote(r.nonPositive, r.nonFinite), note = $('#negative-note');
  note.hidden = !negative;
  if (negative) {
    note.textContent = negative.text;
    note.title = negative.title;
    note.setAttribute('aria-label', note.title);
  }
  $('#features-note').textContent = featuresNote(params, r);
  setNote($('#story-kernel'), storyKernelNote(params, r));
  const identity = $('#identity-note'), id = r.codebook?.identity;
  identity.hidden = !id;
  if (id) {
    identity.innerHTML = identityNote(id);
    identity.dataset.value = String(id.matrix);
    identity.dataset.output = String(id.output);
  }
}

// Beside the inspector: on synthetic inputs in codebook modes, the PCA view of keys and codewords;
// on a model, which heads are hard, for the kernels measureOf has a measure of.
function drawSide(cb, model, params, L) {
  const measure = model ? measureOf(params.kernel, model.overview) : null;
  $('#pca').hidden = !cb;
  $('#heads-why').hidden = !measure;
  document.querySelector('.below').classList.toggle('with-side', Boolean(cb || measure));
  if (cb && pcaView.view !== cb.view) pcaView.draw(cb.view, { L, clusters: cb.clusters, assignment: cb.assignment });
  if (measure) headsWhy.draw(model.overview, params, measure);
}

function drawErrors(errors) {
  for (const td of document.querySelectorAll('#metrics td')) {
    const v = errors[td.dataset.metric];
    td.textContent = fmt(v);
    td.dataset.value = String(v);
  }
}

function drawTimings(t, drawMs, latency, fresh, codebook) {
  const rows = timingRows(t, drawMs, { model: result?.model, codebook });
  const total = latencyLabel({ first: metrics.updates === 0, fresh });
  const cell = ([name, v, note, title]) => `<tr><th scope="row"${title ? ` title="${title}"` : ''}>${name}</th><td class="${note ? 'cached' : ''}">${note || v.toFixed(v < 10 ? 2 : 1)}</td></tr>`;
  $('#timings').innerHTML = rows.map(cell).join('') +
    `<tr class="total"><th scope="row" title="${total[1]}">${total[0]}</th><td data-latency="${latency}">${latency.toFixed(1)}</td></tr>`;
}

function drawInspector() {
  if (!view) return;
  const i = Math.min(shownRow(), view.L - 1);
  inspector.draw({ view, i, log: setting('log'), rows: result?.model?.rows, j: hover ? hover[1] : null, spread: result?.spread });
}

function setHover(h, fromRedraw = false) {
  const changed = !fromRedraw && (h?.[0] !== hover?.[0] || h?.[1] !== hover?.[1]);
  hover = h;
  for (const map of Object.values(heatmaps)) map.setCursor(h ? h[0] : null, h ? h[1] : null);
  if (result?.codebook) pcaView.highlight(h ? h[1] : null);
  if (!view) return;
  $('#readout').innerHTML = readoutHtml(view, h, { codebook: result?.codebook, chars: result?.model?.chars });
  if (changed) inspector.setCursor(h ? h[1] : null);
}

// ---------------------------------------------------------------- studies (studies.js)

const studies = setUpStudies({ state, setting, isModel, modelRows: () => view?.total ?? 256,
  speedSetting: () => modeControls(state, { hasExported: favorTrained() }).speed, metrics, writeUrl });

// ---------------------------------------------------------------- start

writeControls();
writeUrl();
requestCompute();
let resizeTimer = 0;
addEventListener('resize', () => {
  clearTimeout(resizeTimer);
  resizeTimer = setTimeout(() => { if (result) redraw(performance.now()); studies.draw(); longView.redraw(); }, 100);
});
