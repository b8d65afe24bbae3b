// The page's settings and its URL: what each setting may be and its default, the settings a
// query string gives (anything out of range or unknown falls back to its default), the query
// string that gives them back, and a control's new value into them. Pure functions of strings
// and objects, so that Node tests them.
import { PATTERNS } from './inputs.js';
import { DEFAULT_TEXT } from './model-panel.js';
import { LONG_LIMITS, LONG_WINDOWS } from './long-model.js';
import { KERNELS, SAMPLINGS, STUDY_KERNELS, fmtT, temperatureOf } from './modes.js';

export const LISTS = {
  L: [8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024],
  d: [4, 8, 12, 16, 24, 32, 48, 64, 96, 128],
  m: [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048],
};
// Temperature of soft VQ on a log slider: T = 10^(n/10), n = −20 … 10 (T = 0.01 … 10).
export const TEMP_RANGE = [-20, 10];
// The error study's curves: each checked kernel with each checked sampling mode ('grid'), or the
// preset that compares FAVOR+'s successors and W's sampling modes ('compare', studies.js).
const STUDY_SETS = ['grid', 'compare'];
const STUDY_METRICS = ['kernelMSE', 'mse', 'relFrobenius', 'maxAbs', 'meanRowKL', 'outputRelError'];
const STUDY_MMAX = [64, 256, 512, 1024, 2048];
// log, studyMetric, studySeeds and studyMmax are null until chosen: then they follow the mode
// (a trained model: log colors, mean row KL, a study that finishes in seconds; synthetic inputs:
// linear colors and the kernel MSE of Lemma 2). rowFollow: the inspected row is the text's last
// character, so the predictions are what comes next.
export const DEFAULTS = {
  L: 256, d: 64, m: 256, kernel: 'positive', sampling: 'orthogonal', tempStep: 0, causal: false, scale: 0.5,
  pattern: 'model', seed: 1, dataSeed: 0, log: null, row: 128, rowFollow: true, spread: false,
  studyKernels: ['positive'], studySamplings: ['iid', 'orthogonal', 'orthogonal-fixed'], studySet: 'grid', studySeeds: null, studyMmax: null, studyMetric: null, studyHeads: 'all', genN: 60,
  text: DEFAULT_TEXT, model: 'softmax', layer: 2, head: 1, trainedW: true, longN: LONG_LIMITS.default, longWindow: 0,
};
export const MODE_DEFAULTS = {
  model: { log: true, studyMetric: 'meanRowKL', studySeeds: 3, studyMmax: 256 },
  synthetic: { log: false, studyMetric: 'kernelMSE', studySeeds: 6, studyMmax: 1024 },
};
// A setting as the page uses it: the one chosen, else its mode's default. Causal synthetic inputs
// open on log colours too: row i spreads its weight over i + 1 keys, so the first rows' weights
// near 1 would top a linear scale and leave every later row one colour.
export function settingOf(s, key) {
  if (s[key] !== null && s[key] !== undefined) return s[key];
  if (key === 'log' && s.causal) return true;
  return MODE_DEFAULTS[s.pattern === 'model' ? 'model' : 'synthetic'][key];
}
export const TEXT_LIMIT = 1024;  // the box and the URL; the model reads the last 256 characters

const nearest = (list, v) => list.reduce((best, x) => (Math.abs(Math.log(x / v)) < Math.abs(Math.log(best / v)) ? x : best));
// An integer in [lo, hi] from a string, or undefined.
export const intIn = (s, lo, hi) => { if (s === null || s === undefined || String(s).trim() === '') return undefined; const v = Number(s); return Number.isInteger(v) && v >= lo && v <= hi ? v : undefined; };
export const GEN_RANGE = [1, 255];  // the models with learned positions end at 256 positions
// The generation's length from its box: a number out of range is clamped into it (as the row box
// clamps), one that is not a number keeps the last length.
export const genLengthIn = (s, last) => {
  const v = Math.round(Number(String(s ?? '').trim() || NaN));
  return Number.isFinite(v) ? Math.max(GEN_RANGE[0], Math.min(GEN_RANGE[1], v)) : last;
};

const MODEL_KEYS = ['model', 'layer', 'head', 'text', 'tw', 'gen', 'long', 'lwin', 'sheads'];

// The settings of a query string (location.search, with or without its '?').
export function parseSettings(search) {
  const q = new URLSearchParams(search);
  const s = structuredClone(DEFAULTS);
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
  s.spread = q.get('spread') === '1';
  const scale = Number(q.get('scale'));
  if (q.has('scale') && scale >= 0.05 && scale <= 1.5) s.scale = Math.round(scale * 20) / 20;
  s.seed = intIn(q.get('seed'), 0, 999999) ?? s.seed;
  s.dataSeed = intIn(q.get('data'), 0, 999999) ?? s.dataSeed;
  const row = intIn(q.get('row'), 0, s.pattern === 'model' ? 255 : s.L - 1);
  s.row = row ?? Math.min(DEFAULTS.row, s.L >> 1);
  s.rowFollow = s.pattern === 'model' && row === undefined;
  const sk = (q.get('skernels') ?? '').split(',').filter((k) => STUDY_KERNELS.includes(k));
  if (sk.length) s.studyKernels = sk;
  const ss = (q.get('ssamplings') ?? '').split(',').filter((x) => SAMPLINGS.includes(x));
  if (ss.length) s.studySamplings = ss;
  if (STUDY_SETS.includes(q.get('sset'))) s.studySet = q.get('sset');
  s.studySeeds = intIn(q.get('sseeds'), 2, 32) ?? null;
  if (['all', 'selected'].includes(q.get('sheads'))) s.studyHeads = q.get('sheads');
  s.genN = intIn(q.get('gen'), ...GEN_RANGE) ?? s.genN;
  s.longN = intIn(q.get('long'), LONG_LIMITS.min, LONG_LIMITS.max) ?? s.longN;
  const longWindow = intIn(q.get('lwin'), 0, LONG_LIMITS.max);
  if (LONG_WINDOWS.includes(longWindow)) s.longWindow = longWindow;
  const mmax = intIn(q.get('smax'), 1, 2048);
  if (STUDY_MMAX.includes(mmax)) s.studyMmax = mmax;
  if (STUDY_METRICS.includes(q.get('smetric'))) s.studyMetric = q.get('smetric');
  return s;
}

// The query string (without '?') whose settings are s: only what the mode uses, and the text
// only where it is not the default one.
export function settingsQuery(s) {
  const model = s.pattern === 'model';
  return String(new URLSearchParams({
    pattern: s.pattern,
    ...(model && { model: s.model, layer: s.layer, head: s.head }),
    m: s.m, kernel: s.kernel, sampling: s.sampling, temp: fmtT(temperatureOf(s.tempStep)),
    ...(!model && { L: s.L, d: s.d, causal: s.causal ? 1 : 0, scale: s.scale.toFixed(2), data: s.dataSeed }),
    seed: s.seed, ...(s.log !== null && { log: s.log ? 1 : 0 }), ...(!(model && s.rowFollow) && { row: s.row }), ...(s.spread && { spread: 1 }),
    skernels: s.studyKernels.join(','), ssamplings: s.studySamplings.join(','), sset: s.studySet, ...(s.studySeeds !== null && { sseeds: s.studySeeds }),
    ...(s.studyMmax !== null && { smax: s.studyMmax }), ...(s.studyMetric !== null && { smetric: s.studyMetric }),
    ...(model && { tw: s.trainedW ? 1 : 0, sheads: s.studyHeads, gen: s.genN, ...(s.longN !== DEFAULTS.longN && { long: s.longN }), ...(s.longWindow && { lwin: s.longWindow }) }),
    ...(model && s.text !== DEFAULT_TEXT && { text: s.text }),
  }));
}

// A control's new value into the settings `s`: input is the control's { value, checked };
// modelL the length of the model's drawn text (null when none is drawn). Returns 'draw' where
// the panels only need drawing again (the log scale, the inspected row), 'compute' where they
// need new matrices, or null for a value the settings cannot take (the page then writes the
// control back as it was). The row is clamped into the text; on a model an empty row box goes back
// to following the text's last character.
export function applyControl(s, key, input, { modelL = null } = {}) {
  const model = s.pattern === 'model';
  if (key === 'L' || key === 'd' || key === 'm') s[key] = LISTS[key][Number(input.value)];
  else if (key === 'temperature') s.tempStep = Math.round(Number(input.value));
  else if (key === 'scale') s.scale = Math.round(Number(input.value) * 20) / 20;
  else if (key === 'causal' || key === 'log' || key === 'trainedW' || key === 'spread') s[key] = input.checked;
  else if (key === 'text') { s.text = input.value; s.rowFollow = true; }
  else if (key === 'layer' || key === 'head') s[key] = Number(input.value);
  else if (key === 'row' && model && String(input.value).trim() === '') s.rowFollow = true;
  else if (key === 'seed' || key === 'dataSeed' || key === 'row') {
    const v = String(input.value).trim() === '' ? NaN : Math.floor(Number(input.value));
    if (!Number.isFinite(v) || (v < 0 && key !== 'row')) return null;
    s[key] = key === 'row' ? Math.max(0, Math.min(v, (model && modelL ? modelL : s.L) - 1)) : Math.min(v, 999999);
    if (key === 'row') s.rowFollow = false;
  } else s[key] = input.value;
  // A codebook as large as the text gives every key its own codeword (hard VQ: exact): start
  // smaller; on synthetic inputs at 4, below the clustered keys' 8 centres, where the suggestion
  // to raise m starts (captions.js syntheticTry). Back on random features, m is what it was, unless
  // it was changed meanwhile, which forgets it (`featuresM`: kept in the page's session, not in its URL).
  const kmeans = s.kernel === 'vq' || s.kernel === 'soft-vq';
  if (key === 'kernel' && kmeans && s.m >= (model ? modelL ?? 256 : s.L) / 2) {
    s.featuresM = s.m;
    s.m = model ? 32 : 4;
  } else if (key === 'kernel' && !kmeans && s.featuresM) s.m = s.featuresM;
  if (key === 'm' || (key === 'kernel' && !kmeans)) delete s.featuresM;
  if (key === 'L') s.row = Math.min(s.row, s.L - 1);
  return key === 'log' || key === 'row' ? 'draw' : 'compute';
}
