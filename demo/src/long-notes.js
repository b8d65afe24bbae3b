// The long-text view's sentences (long-view.js), each derived from the measurements it states: a
// live run's blocks and the evaluation's results (model/long-results.json). Kept apart from the
// drawing so that every sentence is checked against its figures in Node.
import { generationSummary } from '../../model/generation-rates.js';
import { fmt, fmtRate } from './colors.js';
import { LONG_MODEL } from './long-model.js';

export const BLOCK = 64;  // characters per method between the worker's progress messages

export const n0 = (x) => Math.round(x).toLocaleString('en-US');
// (a unit from where three digits of the smaller one would round up to 1000: never "1.00·10³ kB")
export const bytes = (b) => (b >= 999.5e3 ? `${fmt(b / 1e6, 3)} MB` : b >= 999.5 ? `${fmt(b / 1e3, 3)} kB` : `${n0(b)} B`);
export const ms = (x) => (x >= 10 ? `${n0(x)} ms` : `${fmt(x, 2)} ms`);
const short = (x) => (x >= 1024 ? `${x / 1024}k` : String(x));
export const binLabel = (b) => `${short(b.from)}–${short(b.to)}`;

// "a is R× as fast as b" where they differ by more than 10 %, else "about as fast".
export function compareRates(a, b, nameA, nameB) {
  const r = a / b;
  if (r >= 1.1) return `${nameA} ${fmt(r, 2)}× as fast as ${nameB}`;
  if (r <= 1 / 1.1) return `${nameB} ${fmt(1 / r, 2)}× as fast as ${nameA}`;
  return `${nameA} and ${nameB} about as fast (within 10 %)`;
}

// Before any run: what the view does, with the model's record from the manifest where known.
export function introNote(record) {
  return `The ${LONG_MODEL} model${record ? ` (${record.rotary ? 'rotary positions, ' : ''}trained with a context of ${n0(record.context)} characters)` : ''} ` +
    'continues the text above with exact attention, through a key/value cache that grows by one position per character, and with FAVOR+, ' +
    'through a state whose size does not grow with the text.';
}

// Characters per second over a list of blocks: their characters over their summed times.
const rateOver = (list, which) => list.reduce((s, b) => s + b[which].text.length, 0) / (list.reduce((s, b) => s + b[which].ms, 0) / 1000);

// The index of the first block from which FAVOR+ beats the exact cache in every block to the end
// (blocks.length where the last block is not one of them).
function favorAheadFrom(blocks) {
  let from = blocks.length;
  while (from > 0 && blocks[from - 1].favor.charsPerSecond > blocks[from - 1].exact.charsPerSecond) from--;
  return from;
}

/**
 * The note under a run: how it ran, its rates over its first and last blocks, where FAVOR+ led,
 * and the states' bytes. start: the worker's 'long-start' message; blocks: { from, position,
 * exact, favor } per pair of blocks (exact/favor: { text, ms, charsPerSecond, stateBytes });
 * results: the evaluation's, or null while not loaded.
 */
export function runNote({ start, blocks, seed, results }) {
  const parts = [`Interleaved: ${BLOCK} characters with the exact cache, then ${BLOCK} with the FAVOR+ state (${start.label}), and again, ` +
    `so that both curves grow together; the same model (${start.model}), prompt (the last ${n0(start.promptLength)} characters of the text box when you pressed generate) and sampling seed (${seed}). ` +
    'Each point is one block: its characters over the time of its own next() calls in the compute worker (performance.now()); ' +
    `the prompt's prefill (exact ${ms(start.prefillMs.exact)}, FAVOR+ ${ms(start.prefillMs.favor)}) is not in them.`];
  // the model was trained with FAVOR+: say how its exact attention predicts (the evaluation below),
  // against the FAVOR+ curve of the run's own window
  const curve = (id) => results?.curves.find((c) => c.id === id);
  const favorCurve = curve(start.window ? 'performer-favor-window' : 'performer-favor');
  const [withFavor, withExact] = [favorCurve?.all.mean, curve('performer-exact')?.all.mean];
  if (withFavor && withExact && (favorCurve.window ?? 0) === start.window) {
    parts.push(`${start.model} was trained with FAVOR+, so exact attention on its q and k is not what it learned: on held-out text it predicts ` +
      `${withExact > withFavor ? 'worse' : 'better'} that way (${fmt(withExact, 3)} against ${fmt(withFavor, 3)} bits per character with FAVOR+ ${start.window ? `over a window of ${n0(start.window)}` : 'over the whole prefix'}, over 8k-character sequences, below), ` +
      `${withExact > withFavor ? 'so the exact column\'s text is the poorer one; ' : ''}what the two columns compare is time and memory.`);
  }
  if (!blocks.length) return parts.join(' ');
  // rates over the first and the last (up to) four blocks of the run
  if (blocks.length >= 2) {
    const k = Math.min(4, Math.ceil(blocks.length / 2));
    const first = blocks.slice(0, k), last = blocks.slice(-k);
    const span = (list) => `characters ${n0(list[0].from + 1)}–${n0(list.at(-1).position)}`;
    const [ef, ff, el, fl] = [rateOver(first, 'exact'), rateOver(first, 'favor'), rateOver(last, 'exact'), rateOver(last, 'favor')];
    parts.push(`${k === 1 ? 'First block' : `First ${k} blocks`} (${span(first)}): exact ${fmtRate(ef)}, FAVOR+ ${fmtRate(ff)} characters/s (${compareRates(ff, ef, 'FAVOR+', 'exact')}); ` +
      `${k === 1 ? 'last block' : `last ${k}`} (${span(last)}): exact ${fmtRate(el)}, FAVOR+ ${fmtRate(fl)} (${compareRates(fl, el, 'FAVOR+', 'exact')}).`);
  }
  // where FAVOR+ stays faster than exact to the end (at least three blocks)
  const from = favorAheadFrom(blocks);
  if (blocks.length >= 3 && from === 0) parts.push('FAVOR+ was faster in every block.');
  else if (blocks.length - from >= 3) parts.push(`FAVOR+ was faster in every block from character ${n0(blocks[from].from + 1)} on.`);
  else if (blocks.length >= 3 && blocks.every((b) => b.exact.charsPerSecond > b.favor.charsPerSecond)) parts.push('The exact cache was faster in every block.');
  // stateBytes: what the states hold in wasm memory (the cache's allocation, which grows in steps)
  const e0 = start.stateBytes.exact, e1 = blocks.at(-1).exact.stateBytes, p1 = blocks.at(-1).position;
  const favorBytes = [start.stateBytes.favor, ...blocks.map((b) => b.favor.stateBytes)];
  const fmin = Math.min(...favorBytes), fmax = Math.max(...favorBytes);
  const steps = new Set([e0, ...blocks.map((b) => b.exact.stateBytes)]).size - 1;
  parts.push(`Memory (the bytes each method's states hold in wasm memory, summed over the layers): the exact cache went from ${bytes(e0)} after the prompt ` +
    `to ${bytes(e1)} after ${n0(p1)} characters${steps > 0 && steps < blocks.length ? ` (its allocation grew in ${steps} step${steps > 1 ? 's' : ''})` : ''}; the FAVOR+ state ` +
    `${fmin === fmax ? `stayed at ${bytes(fmin)}` : `stayed between ${bytes(fmin)} and ${bytes(fmax)}`}` +
    `${e1 > fmax ? `; at the end the cache holds ${fmt(e1 / fmax, 3)}× the state's bytes` : ''}.`);
  return parts.join(' ');
}

// The line under each column of a run with blocks: { exact, favor }.
export function runInfo({ exact, favor, blocks }) {
  const last = blocks.at(-1);
  return {
    exact: `${n0(exact.length)} characters; last block ${fmtRate(last.exact.charsPerSecond)} characters/s, cache ${bytes(last.exact.stateBytes)}`,
    favor: `${n0(favor.length)} characters; last block ${fmtRate(last.favor.charsPerSecond)} characters/s, state ${bytes(last.favor.stateBytes)}`,
  };
}

// Where the training context falls on the evaluation's bin axis (bin i at x = i): between the
// bins it separates, or inside one; null past the last bin.
export function contextOnBins(r) {
  const at = r.bins.findIndex((b) => r.context > b.from && r.context <= b.to);
  if (at < 0) return null;
  const b = r.bins[at];
  return r.context === b.to ? at + 0.5 : at - 0.5 + (r.context - b.from) / (b.to - b.from);
}

// What the sliding windows of the evaluation's curves see: "(all of them, or …)".
function windows(r) {
  const parts = [];
  if (r.curves.some((c) => c.id === 'softmax-window')) parts.push(`the last ${n0(r.context)} for the exact sliding window`);
  const favor = r.curves.find((c) => c.id === 'performer-favor-window');
  if (favor?.window) parts.push(`the last ${n0((3 * favor.window) / 4 + 1)} to ${n0(favor.window)} for FAVOR+ over a window (blocks of ${n0(favor.window / 4)})`);
  return parts.length ? ` (all of them, or ${parts.join(', ')})` : '';
}

/**
 * What a curve does over its bins' means (from the first to the last of `bins`): "stays within
 * 0.05" only where every bin does, else how it ends, and a bin between that strays further than
 * 0.05 from the first (the one furthest from it).
 */
export function curveMove(means, bins) {
  const [a, b] = [means[0], means.at(-1)], d = b - a;
  const far = means.reduce((best, x, i) => (Math.abs(x - a) > Math.abs(means[best] - a) ? i : best), 0);
  const strays = Math.abs(means[far] - a) >= 0.05 && far !== means.length - 1;
  const via = strays ? ` (through ${fmt(means[far], 3)} at ${binLabel(bins[far])})` : '';
  if (Math.abs(d) < 0.05) return strays ? `ends within 0.05 of where it starts (${fmt(a, 3)} → ${fmt(b, 3)}) after ${means[far] > a ? 'rising' : 'falling'} to ${fmt(means[far], 3)} at ${binLabel(bins[far])}` : `stays within 0.05 (${fmt(a, 3)} → ${fmt(b, 3)})`;
  return `${d > 0 ? 'rises' : 'falls'} from ${fmt(a, 3)} to ${fmt(b, 3)}${via}`;
}

/** The note under the evaluation's plot: how it was made, what each curve does past the training context, and its generation figures. */
export function evaluationNote(r) {
  const bins = r.bins, lastBin = bins.length - 1;
  // What each curve does past the training context: the bin in which it ends against the last bin.
  const before = bins.findIndex((b) => b.to >= r.context);
  let moves = '';
  if (before >= 0 && before < lastBin) {
    moves = ` From the bin ${binLabel(bins[before])} (${bins[before].to === r.context ? 'the last within the training context' : 'the one where the training context ends'}) to ${binLabel(bins[lastBin])}: ` +
      r.curves.map((c) => `${c.label}: ${curveMove(c.bins.slice(before, lastBin + 1).map((x) => x.mean), bins.slice(before, lastBin + 1))}`).join('; ') + '.';
  }
  const g = r.generation;
  let gen = '';
  if (g?.favor?.length && g?.favorWindow?.length && g?.exact?.length) {
    const { span, last } = generationSummary(g), end = (list) => list.at(-1).stateBytes;
    gen = ` The same evaluation generated ${n0(g.characters)} characters in Node after a ${n0(g.prompt)}-character prompt (${g.order}): ` +
      `characters per second over its last ${n0(span)} characters, ${fmtRate(last.exact)} exact, ${fmtRate(last.favor)} FAVOR+ and ${fmtRate(last.favorWindow)} FAVOR+ over a window of ${n0(g.window)} ` +
      `(${compareRates(last.favor, last.exact, 'FAVOR+', 'exact')}), with ${bytes(end(g.exact))} of cache against ${bytes(end(g.favor))} of state ` +
      `(${bytes(end(g.favorWindow))} with the window).`;
  }
  return `Precomputed by npm run eval:long (model/eval-long.mjs, the JS runner on favor-attention; ${r.cpu}, Node ${r.node}, ` +
    `${r.threads} thread${r.threads > 1 ? 's' : ''}): the held-out text (chapters 122–135 and the epilogue) cut into ${r.sequences} sequences of ${n0(r.length)} characters, ` +
    `each character predicted from the characters before it in its sequence${windows(r)}; ` +
    `points: mean over the seeds of each model, band ±1 s.d.${moves}${gen}`;
}
