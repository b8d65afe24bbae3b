// What the matrix panels say: the headline, the caption under Â, the notes beside the panels, the
// legends and the timings table, as pure functions of what was computed (the compute worker's
// result and its parameters). main.js puts them on the page; tests/node/demo-captions.test.mjs
// reads each sentence against what it describes.
import { fmt } from './colors.js';
import { DRAWS } from './draws.js';
import { logBottomLabel } from './legend-ticks.js';
import { clusterCount, patternWord } from './inputs.js';
import { MODE_NAMES, fmtT } from './modes.js';

// What each feature kernel's estimate is, in a few words.
export const KERNEL_NOTES = {
  positive: 'unbiased, positive',
  hyperbolic: 'unbiased, positive, lower variance',
  trigonometric: 'unbiased, not positive',
  relu: 'not a softmax estimator: a different kernel',
  oprf: 'unbiased, positive, A, B, D fitted to the inputs',
  sderf: 'unbiased, positive, per-direction A fitted to the inputs\' second moments',
  aderf: 'unbiased, positive, queries and keys rebalanced by Ψ, then OPRF',
};

// The story's paragraph is about FAVOR+: what the grid and Â show under another kernel.
export const STORY_NOTES = {
  oprf: 'FAVOR++, positive features with A, B, D fitted to each head\'s q and k',
  sderf: 'FAVOR#\'s symmetric features, OPRF\'s coefficient along each principal direction of the head\'s q̃ + k̃',
  aderf: 'FAVOR#\'s asymmetric features, queries and keys rebalanced by a matrix fitted to the head, then OPRF',
};

// A count as people read it: 32,241.
const count = (n) => n.toLocaleString('en-US');
// n entries, and the verb that agrees with them
const entries = (n) => `${count(n)} ${n === 1 ? 'entry' : 'entries'}`;
const agrees = (n, one, more) => (n === 1 ? one : more);

// A model run whose Â is the trained model's own (its exported W): the story's FAVOR+ itself.
const exportedW = (model) => /exported W/.test(model.label);

// The caption under Â: the model's approximation, or the codebook mode, or the feature map.
export function approxCaption(params, { model, codebook: cb }) {
  if (model) return `(${model.label})`;
  if (cb) {
    return `(${MODE_NAMES[params.kernel]}${cb.assignment === 'soft' ? `, T = ${fmtT(params.temperature)}` : ''}, ` +
      `${cb.assignment === 'gaussian' ? 'C = W·∜d, orthogonal-fixed' : 'k-means'}, m = ${cb.clusters}${cb.capped ? ' = L' : ''})`;
  }
  return `(${params.kernel}, ${params.sampling}, m = ${params.m})`;
}

// A caption cut around each of its "m = 256", "m = 64 = L", "m ≥ L = 256", which the page keeps
// on one line: [text, kept, text, …, text], the kept parts at the odd places; [caption] where it has
// none. Only the relation itself: the words after it wrap as any others.
export function captionParts(caption) {
  const parts = [];
  let last = 0;
  for (const m of caption.matchAll(/\bm(?: [=≥] (?:L|\d+))+/g)) {
    parts.push(caption.slice(last, m.index), m[0]);
    last = m.index + m[0].length;
  }
  return [...parts, caption.slice(last)];
}

// The synthetic inputs' headline (HTML: the mean row KL in bold).
export function syntheticHeadline(params, errors, cb) {
  const how = cb ? `${MODE_NAMES[params.kernel]}, m = ${cb.clusters}` : `${params.kernel}, ${params.sampling}, m = ${params.m}`;
  return `Synthetic ${patternWord(params.pattern)} Q and K (L = ${params.L}, d = ${params.d}, input scale ${params.scale.toFixed(2)}${params.causal ? ', causal' : ''}): ` +
    `mean row KL(A‖Â) <b class="num approx">${fmt(errors.meanRowKL)}</b> with ${how}`;
}

// The model story's suggestion (after "Try:"), by the model and the kernel menu: the other model
// of the pair that shows most (trained with FAVOR+, or with exact attention) and what its grid
// shows under the same kernel, or, for kernels no model makes easy, what to change instead. Its
// claims are about the default settings with that kernel (m = 256, the default text), which
// tests/node/demo-model-try.test.mjs measures on the models.
// How the story's sentences name each kernel's approximation.
const APPROX_NAMES = { positive: 'FAVOR+', hyperbolic: 'hyperbolic features', trigonometric: 'trigonometric features',
  relu: 'relu features', oprf: 'OPRF (FAVOR++)', sderf: 'SDERF (FAVOR#)', aderf: 'ADERF (FAVOR#)', ...MODE_NAMES };
// Hard or soft VQ with a codeword for every key (m ≥ L): hard VQ is exact, so the suggestion is to
// lower m, or T for soft VQ.
const lowerTry = (kernel, L) => (kernel === 'vq'
  ? `lower the codewords m below L = ${L}: keys then share codewords, and hard VQ is no longer exact.`
  : `lower T: with a codeword for every key (m ≥ L = ${L}), soft VQ then tends to hard VQ, which is exact here.`);

// favorTrained: the model shown was trained with FAVOR+ (the manifest's attention 'favor'), so the
// other of the pair is the softmax model. m, L: the codewords and the length of the text, where
// known; at m ≥ L there are no more codewords to add, and hard VQ is exact already.
export function modelTry(favorTrained, kernel = 'positive', { m, L, ownText = false } = {}) {
  const start = 'type at the end of the text (the predictions are what comes next), click a head in the grid, or ';
  // what another model's heads do was measured on the default passage: said so beside a typed text
  const where = ownText ? ' on the default passage' : '';
  if ((kernel === 'vq' || kernel === 'soft-vq') && L > 0 && m >= L) return start + lowerTry(kernel, L);
  if (kernel === 'vq' || kernel === 'soft-vq') {
    return `${start}raise the codewords m: at m = L every key is its own codeword and hard VQ is exact` +
      `${kernel === 'soft-vq' ? '; lower T and soft VQ tends to hard VQ' : ''}.`;
  }
  if (kernel === 'trigonometric' || kernel === 'relu') {
    return `${start}switch the kernel to positive (FAVOR+): ${kernel === 'relu' ? 'relu features estimate another kernel, not softmax' : 'trigonometric features give negative weights'}, ` +
      `and most heads of every model, the Performer's too, reach a KL of 1 with them${where}.`;
  }
  const name = APPROX_NAMES[kernel];
  if (!favorTrained) {
    return `${start}choose the performer model in the settings: trained with FAVOR+, none of its heads reaches a KL of 1 ` +
      `${kernel === 'positive' ? 'with it' : `with ${name} either`}${where}.`;
  }
  if (kernel === 'sderf') {
    return `${start}choose the softmax model in the settings: trained with exact attention, most of its heads reach a KL of 1 with FAVOR+, ` +
      `but not with SDERF, whose features are fitted to each head's q and k${where}.`;
  }
  return `${start}choose the softmax model in the settings: trained with exact attention, most of its heads reach a KL of 1 with ${name}${where}.`;
}

// The synthetic story's suggestion (after "Try:"), by the kernel menu and the input pattern:
// what to change to see how this estimator behaves (HTML). tests/node/demo-captions.test.mjs
// measures what each one claims.
export function syntheticTry(kernel, pattern, { m, L }) {
  const clustered = pattern === 'clustered' ? '' : 'choose clustered keys and ';
  const centres = clusterCount(L);
  if (kernel === 'performer-vq') {
    return `${clustered}switch to hard VQ at the same m: codewords that k-means fits to the keys beat these random ` +
      `directions in mean row KL, by ten times and more from m = ${2 * centres}, two codewords for each of the ${centres} centres ` +
      '(at the default L, d and input scale), by less with fewer codewords and as s grows.';
  }
  if ((kernel === 'vq' || kernel === 'soft-vq') && m >= L) return clustered + lowerTry(kernel, L);
  if (kernel === 'vq' || kernel === 'soft-vq') {
    return `${clustered}raise the codewords m: up to an input scale of about 1, the error falls steeply until there ` +
      `is a codeword for each of the ${centres} centres, then levels off (what is left is the keys' spread around their centre, ` +
      'which weighs more as s grows) until m = L, where every key is its own codeword and hard VQ is exact.' +
      (kernel === 'soft-vq' ? ' Lower T: soft VQ tends to hard VQ.' : '');
  }
  return 'raise the input scale s: the estimators\' variance grows like e<sup>‖q̃+k̃‖²</sup>, so sharper attention ' +
    'needs far more features; the trigonometric kernel even gives negative weights.';
}

// What the codebook modes computed.
export function codebookNote(params, cb) {
  if (cb.assignment === 'gaussian') {
    return `Codebook C = W·∜d of an orthogonal-fixed positive feature map (m = ${cb.clusters}, seed ${params.seed}); ` +
      'responsibilities exp(−‖k̃ − c̃‖²/2), not normalized.';
  }
  const how = cb.assignment === 'hard' ? 'each key replaced by its nearest codeword'
    : `responsibilities softmax(−‖k̃ − c̃‖²/2T), T = ${fmtT(params.temperature)}`;
  return `k-means codebook of ${cb.clusters} codewords fitted to the keys (k-means++ seed ${params.seed}, ≤ 25 Lloyd iterations)` +
    `${cb.capped ? `, m capped at L = ${params.L}` : ''}; ${how}.`;
}

// Under the error measures: what Â is.
export function featuresNote(params, { model, codebook: cb, numFeatures }) {
  if (model) {
    const note = KERNEL_NOTES[params.kernel] && !exportedW(model) ? ` (${KERNEL_NOTES[params.kernel]})` : '';
    return `Layer ${params.layer}, head ${params.head} of the model on the text: its real q and k (exact forward pass), Â by ${model.label}${note}.`;
  }
  return cb ? codebookNote(params, cb) : `φ(x) has M = ${numFeatures} ${agrees(numFeatures, 'feature', 'features')} (${KERNEL_NOTES[params.kernel]}).`;
}

// Performer as soft VQ beside FAVOR+ with the same W, measured in the same computation (HTML):
// { matrix, output } the largest differences of Â and of the outputs.
export function identityNote({ matrix, output }) {
  return '<span title="Â from codebookAttentionMatrix (Gaussian responsibilities, C = W·∜d) against favorAttentionMatrix ' +
    'with the same W, measured now; the outputs likewise">= FAVOR+ positive with this W:<br>' +
    `max |Â − Â<sub>FAVOR+</sub>| = <b>${fmt(matrix, 2)}</b><br>max |out − out<sub>FAVOR+</sub>| = <b>${fmt(output, 2)}</b></span>`;
}

// Beside the story, on a model run whose Â is not the story's FAVOR+: what the grid and Â show
// instead; null where they show FAVOR+.
export function storyKernelNote(params, { model, codebook: cb }) {
  if (!model || exportedW(model) || (!cb && params.kernel === 'positive')) return null;
  const what = STORY_NOTES[params.kernel] && !cb ? ` (${STORY_NOTES[params.kernel]})` : '';
  return `Here the grid and Â show ${model.label} instead${what}: the frames are its errors.`;
}

// A model trained with FAVOR+ (record.attention 'favor': the Performers from scratch, the
// fine-tuned model after softmax), under whichever kernel: exact softmax is not its attention,
// so its headline's two figures can read the other way round from a softmax model's, and the
// frames are not its loss. Null for other models.
export function trainedNote(record, kernel, bpc) {
  if (record?.attention !== 'favor') return null;
  const finetuned = record.name === 'finetune';
  const reads = bpc.exact > bpc.approx ? 'worse' : 'better';
  const name = APPROX_NAMES[kernel] ?? kernel;
  return `${finetuned ? 'This model, trained with softmax, was then fine-tuned with FAVOR+ in every layer: exact softmax on its q and k is attention it was fine-tuned away from'
    : 'This model was trained with FAVOR+ in every layer: exact softmax on its q and k is attention it never used'}, ` +
    `and it reads this text ${reads} with it (${fmt(bpc.exact, 3)} bits/char) than with ${name} (${fmt(bpc.approx, 3)}). ` +
    `The frames measure how far ${kernel === 'positive' ? 'FAVOR+' : 'the approximation'} is from softmax on these q and k, not what the model loses.`;
}

// Entries of Â that are not probabilities (the trigonometric estimator): { text, title }, or
// null where there are none.
export function negativeNote(nonPositive, nonFinite) {
  if (!nonPositive && !nonFinite) return null;
  return {
    text: `⚠ ${entries(nonPositive + nonFinite)} of Â ≤ 0${nonFinite ? ' or not finite' : ''} (why?)`,
    title: `${[nonPositive && `${entries(nonPositive)} of Â ${agrees(nonPositive, 'is', 'are')} ≤ 0`,
      nonFinite && `${nonPositive ? count(nonFinite) : `${entries(nonFinite)} of Â`} ${agrees(nonFinite, 'is', 'are')} not finite`]
      .filter(Boolean).join(' and ')}: ` +
      'the trigonometric (sin/cos) estimator is unbiased but not positive, so normalized rows can hold negative ' +
      'or very large weights (the Performer paper\'s motivating failure). The heatmaps draw them as 0 on the linear ' +
      'scale and at the floor of the log scale; the readout shows the true value; the KL treats them as 1e-12 and ' +
      'renormalizes the row.',
  };
}

// A text longer than the heatmaps' window ({ total, size, offset }): which positions they show;
// null where they show all of it.
export function windowNote(shown) {
  if (!(shown?.offset > 0)) return null;
  return `The model reads ${count(shown.total)} characters; the heatmaps, the line view and the row inspector show the last ${count(shown.size)} ` +
    `(positions ${count(shown.offset)}–${count(shown.total - 1)}, numbered 0–${count(shown.size - 1)} here) against the keys among them. ` +
    'The grid\'s pictures and frames, the error measures and the inspector\'s KL cover the whole text.';
}

// The legends under the heatmaps. scale: the shared scale ({ vmin }); ranges: { vmax, over, dmax, dover }.
export function sharedLegend({ model, causal, log, scale, ranges }) {
  const { vmax, over } = ranges;
  const name = `${log ? 'log' : 'linear'} scale${log ? ` ${logBottomLabel(scale.vmin)} … ${fmt(vmax, 2)}` : ` 0 … ${fmt(vmax, 2)}`}`;
  return model
    ? `A, Â and every head in the grid: one fixed ${name}${over ? `; ${count(over)} Â ${agrees(over, 'entry', 'entries')} above 1 ${agrees(over, 'saturates', 'saturate')}` : ''}; grey: masked (j > i)`
    : `A and Â: A's ${name}${over ? `; ${count(over)} Â ${agrees(over, 'entry', 'entries')} above A's top ${agrees(over, 'saturates', 'saturate')}` : ''}${causal ? '; grey: masked (j > i)' : ''}`;
}

export function diffLegend({ log, ranges }) {
  const { dover, dmax } = ranges;
  return `A − Â, diverging at 0${log ? ' (symmetric log)' : ''}${dover ? `; ${entries(dover)} beyond ±${fmt(dmax, 2)} ${agrees(dover, 'saturates', 'saturate')}` : ''}`;
}

// The timings' last row, [label, title]: from what to every panel drawn, for the page's first
// view (loading included), a change that computed, or one that only redrew.
export function latencyLabel({ first, fresh }) {
  if (first) return ['page start → all panels', 'from the page\'s first request to the compute worker to every panel drawn: loading the WebAssembly module and a model\'s weights included'];
  if (fresh) return ['change → all panels', 'from the control change to every panel drawn (worker round trip included)'];
  return ['redraw → all panels', 'from the control change to every panel redrawn (nothing computed again)'];
}

// The timings table's rows: [name, milliseconds, note ('cached' or ''), title].
export function timingRows(t, drawMs, { model, codebook }) {
  const rows = computeRows(t, { model, codebook });
  if (t.spread !== undefined) {
    rows.push([`Â over ${DRAWS} draws`, t.spread, '', `the selected head's Â under ${DRAWS} draws of ${codebook?.assignment === 'gaussian' || !codebook ? 'W' : 'k-means'}: range and mean of each entry`]);
  }
  return [...rows, ['draw every panel', drawMs]];
}

function computeRows(t, { model, codebook }) {
  if (model) {
    return [
      ['model, exact attention', t.inputs, t.forwardCached ? 'cached' : '', 'the forward pass on the text with exact attention in every layer, keeping each layer\'s q, k, v (dense layers by favor.matmul)'],
      ['model, approximation', t.approxModel, '', 'the forward pass with the approximation substituted in every layer'],
      ['every head: A, Â, errors', t.overview, '', 'attentionMatrix and the approximate matrix of every layer (4 heads per call), compare per head'],
      ['selected head: outputs', t.headOutput, '', 'exactAttention and the approximation on the selected head, output relative error'],
    ];
  }
  if (codebook) {
    return [
      ['inputs Q, K, V (JS)', t.inputs, t.inputs === 0 ? 'cached' : ''],
      codebook.assignment === 'gaussian' ? ['W, C = W·∜d', t.featureMap, t.mapCached ? 'cached' : '']
        : ['C (kmeans)', t.featureMap, t.mapCached ? 'cached' : ''],
      ['A (attentionMatrix)', t.exactMatrix],
      ['Â (codebook matrix)', t.approxMatrix, '', 'codebookAttentionMatrix'],
      ['out (exactAttention)', t.exactOutput],
      ['out (codebook)', t.favorOutput, '', 'codebookAttention'],
      ['compare, output error', t.errors],
      ...(codebook.identity ? [['FAVOR+ check (Â, out)', t.identity, '', 'favorAttentionMatrix and favorAttention with the same W, and the max differences']] : []),
      ['PCA, nearest codeword', t.pca, '', 'top-2 principal axes of the keys (JS, cached per input), projections, nearest codeword of every key (JS, or one attentionMatrix call when large)'],
    ];
  }
  return [
    ['inputs Q, K, V (JS)', t.inputs, t.inputs === 0 ? 'cached' : ''],
    ['W (createFeatureMap)', t.featureMap, t.mapCached ? 'cached' : ''],
    ['A (attentionMatrix)', t.exactMatrix],
    ['Â (favorAttentionMatrix)', t.approxMatrix],
    ['out (exactAttention)', t.exactOutput],
    ['out (favorAttention)', t.favorOutput],
    ['compare, output error', t.errors],
  ];
}
