// What the page's matrix panels say (demo/src/captions.js), read against what they describe:
// every kernel and codebook mode the menu offers gets its own words (never "undefined"), the
// numbers in a sentence are the computation's own, and a note appears exactly when there is
// something to say.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  KERNEL_NOTES, STORY_NOTES, approxCaption, captionParts, codebookNote, diffLegend, featuresNote, identityNote, latencyLabel,
  modelTry, negativeNote, trainedNote, sharedLegend, storyKernelNote, syntheticHeadline, syntheticTry, timingRows, windowNote,
} from '../../demo/src/captions.js';
import { fmt, fmtRate } from '../../demo/src/colors.js';
import { makeInputs } from '../../demo/src/inputs.js';
import { DEFAULTS } from '../../demo/src/settings.js';
import { loadFavor } from 'favor-attention';
import { attentionMatrix, compare } from './reference.mjs';
import { CODEBOOK_MODES, FEATURE_KERNELS, KERNELS, MODE_NAMES, SAMPLINGS, fmtT } from '../../demo/src/modes.js';

const noGaps = (text) => assert.doesNotMatch(text, /undefined|NaN|null|\[object/, text);

const synthetic = (kernel, over = {}) => ({
  pattern: 'clustered', L: 64, d: 16, m: 32, kernel, sampling: 'orthogonal', scale: 0.5, causal: false, seed: 7,
  temperature: 0.25, layer: 0, head: 0, ...over,
});
const codebookOf = (kernel, over = {}) => ({ assignment: CODEBOOK_MODES[kernel], clusters: 32, capped: false, ...over });

test('every kernel and codebook mode of the menu has its words', () => {
  for (const k of FEATURE_KERNELS) assert.ok(KERNEL_NOTES[k], `KERNEL_NOTES.${k}`);
  for (const k of Object.keys(CODEBOOK_MODES)) assert.ok(MODE_NAMES[k], `MODE_NAMES.${k}`);
  assert.deepEqual([...FEATURE_KERNELS, ...Object.keys(CODEBOOK_MODES)].sort(), [...KERNELS].sort());
  for (const k of Object.keys(STORY_NOTES)) assert.ok(FEATURE_KERNELS.includes(k), `STORY_NOTES.${k} is a kernel`);
});

test('random features: the caption, headline and note name the kernel, the sampling, m and M', () => {
  for (const kernel of FEATURE_KERNELS) {
    for (const sampling of SAMPLINGS) {
      for (const m of [1, 32, 1024]) {
        const p = synthetic(kernel, { sampling, m });
        const caption = approxCaption(p, {});
        assert.equal(caption, `(${kernel}, ${sampling}, m = ${m})`);
        const parts = captionParts(caption);
        assert.equal(parts.join(''), caption);
        assert.equal(parts[1], `m = ${m}`, 'm and its value stay on one line');
        const note = featuresNote(p, { numFeatures: 2 * m });
        noGaps(note);
        assert.ok(note.includes(`M = ${2 * m} features`) && note.includes(KERNEL_NOTES[kernel]), note);
        if (m === 1) assert.ok(featuresNote(p, { numFeatures: 1 }).startsWith('φ(x) has M = 1 feature ('), 'one feature');
        const head = syntheticHeadline(p, { meanRowKL: 0.0123 }, null);
        noGaps(head);
        assert.ok(head.includes(`with ${kernel}, ${sampling}, m = ${m}`), head);
        assert.ok(head.includes(`<b class="num approx">${fmt(0.0123)}</b>`), head);
        assert.equal(storyKernelNote(p, {}), null, 'no story note without a model');
      }
    }
  }
  const head = syntheticHeadline(synthetic('positive', { L: 256, d: 64, scale: 0.333, causal: true }), { meanRowKL: 1 }, null);
  assert.ok(head.startsWith('Synthetic clustered Q and K (L = 256, d = 64, input scale 0.33, causal): '), head);
  assert.ok(!syntheticHeadline(synthetic('positive'), { meanRowKL: 1 }, null).includes('causal'));
  const gaussian = syntheticHeadline({ ...synthetic('positive'), pattern: 'gaussian' }, { meanRowKL: 1 }, null);
  assert.ok(gaussian.startsWith('Synthetic Gaussian Q and K'), gaussian);
});

test('codebook modes: the mode, its temperature where soft, its m and whether m was capped at L', () => {
  for (const kernel of Object.keys(CODEBOOK_MODES)) {
    for (const capped of [false, true]) {
      const p = synthetic(kernel, { temperature: 0.0316 });
      const cb = codebookOf(kernel, { capped, clusters: capped ? p.L : 32 });
      const caption = approxCaption(p, { codebook: cb });
      noGaps(caption);
      assert.ok(caption.startsWith(`(${MODE_NAMES[kernel]}`), caption);
      assert.equal(caption.includes(`T = ${fmtT(0.0316)}`), cb.assignment === 'soft', caption);
      const parts = captionParts(caption);
      assert.equal(parts.join(''), caption);
      assert.equal(parts[1], capped ? `m = ${p.L} = L` : 'm = 32');
      const note = featuresNote(p, { codebook: cb });
      assert.equal(note, codebookNote(p, cb));
      noGaps(note);
      if (cb.assignment === 'gaussian') {
        assert.ok(note.includes('C = W·∜d') && note.includes(`seed ${p.seed}`), note);
      } else {
        assert.ok(note.includes(`k-means codebook of ${cb.clusters} codewords`), note);
        assert.equal(note.includes(`m capped at L = ${p.L}`), capped, note);
        assert.equal(note.includes('nearest codeword'), cb.assignment === 'hard', note);
        assert.equal(note.includes(`T = ${fmtT(0.0316)}`), cb.assignment === 'soft', note);
      }
      const head = syntheticHeadline(p, { meanRowKL: 0.5 }, cb);
      assert.ok(head.endsWith(`with ${MODE_NAMES[kernel]}, m = ${cb.clusters}`), head);
    }
  }
});

test('a trained model: its label; the story note only where Â is not its FAVOR+', () => {
  const model = (label) => ({ label, shown: { total: 100, size: 100, offset: 0 } });
  const own = model('FAVOR+, the exported W (m = 64)');
  for (const kernel of KERNELS) {
    const p = synthetic(kernel, { layer: 1, head: 3 });
    const cb = kernel in CODEBOOK_MODES ? codebookOf(kernel) : undefined;
    const other = model(`${kernel}, m = 64`);
    assert.equal(approxCaption(p, { model: other, codebook: cb }), `(${other.label})`);
    const note = featuresNote(p, { model: other, codebook: cb });
    noGaps(note);
    assert.ok(note.startsWith(`Layer 1, head 3 of the model on the text:`) && note.includes(`Â by ${other.label}`), note);
    assert.equal(note.includes(`(${KERNEL_NOTES[kernel]})`), Boolean(KERNEL_NOTES[kernel]), note);
    assert.ok(!featuresNote(p, { model: own, codebook: cb }).includes('(unbiased'), 'no kernel note on the exported W');
    const story = storyKernelNote(p, { model: other, codebook: cb });
    if (kernel === 'positive') {
      assert.equal(story, null, 'positive random features are the story\'s FAVOR+');
    } else {
      noGaps(story);
      assert.ok(story.startsWith(`Here the grid and Â show ${other.label} instead`), story);
      assert.equal(story.includes(`(${STORY_NOTES[kernel]})`), Boolean(STORY_NOTES[kernel]) && !cb, story);
    }
    assert.equal(storyKernelNote(p, { model: own, codebook: cb }), null, 'the exported W is the story\'s own');
  }
});

test('a caption keeps each m = … on one line, and only that: the words after it wrap as any others', () => {
  // hard VQ on a model with as many codewords as characters (model-view.js): its label said m ≥ L
  const label = 'hard VQ, k-means m = 256 per head (m ≥ L = 256: every key is its own codeword, so Â = A: trivially exact)';
  const caption = approxCaption(synthetic('vq'), { model: { label }, codebook: codebookOf('vq') });
  const parts = captionParts(caption);
  assert.equal(parts.join(''), caption);
  assert.deepEqual(parts.filter((_, i) => i % 2 === 1), ['m = 256', 'm ≥ L = 256']);
  assert.equal(parts.length, 5);
  for (const c of [caption, '(FAVOR+ with the exported W (the last training draw; positive, m = 64))', '(Performer as soft VQ, C = W·∜d, orthogonal, m = 8)',
    '(hard VQ, k-means, m = 64 = L)', '(soft VQ, T = 0.0316, k-means, m = 32)']) {
    const kept = captionParts(c).filter((_, i) => i % 2 === 1);
    assert.equal(kept.length, (c.match(/\bm [=≥]/g) ?? []).length, c);
    for (const k of kept) assert.match(k, /^m( [=≥] (L|\d+))+$/, `${c}: "${k}" kept on one line`);
  }
  assert.deepEqual(captionParts('(no codewords)'), ['(no codewords)']);
});

test('the note on entries of Â that are not probabilities appears only when there are some', () => {
  assert.equal(negativeNote(0, 0), null);
  const only = negativeNote(5, 0);
  assert.equal(only.text, '⚠ 5 entries of Â ≤ 0 (why?)');
  assert.ok(only.title.startsWith('5 entries of Â are ≤ 0: '), only.title);
  const both = negativeNote(5, 2);
  assert.equal(both.text, '⚠ 7 entries of Â ≤ 0 or not finite (why?)');
  assert.ok(both.title.startsWith('5 entries of Â are ≤ 0 and 2 are not finite: '), both.title);
  assert.equal(negativeNote(0, 3).text, '⚠ 3 entries of Â ≤ 0 or not finite (why?)');
  assert.ok(negativeNote(0, 3).title.startsWith('3 entries of Â are not finite: '), negativeNote(0, 3).title);
  assert.equal(negativeNote(32241, 0).text, '⚠ 32,241 entries of Â ≤ 0 (why?)', 'counts with thousands separators');
  // one entry
  assert.equal(negativeNote(1, 0).text, '⚠ 1 entry of Â ≤ 0 (why?)');
  assert.ok(negativeNote(1, 0).title.startsWith('1 entry of Â is ≤ 0: '), negativeNote(1, 0).title);
  assert.ok(negativeNote(0, 1).title.startsWith('1 entry of Â is not finite: '), negativeNote(0, 1).title);
  assert.ok(negativeNote(2, 1).title.startsWith('2 entries of Â are ≤ 0 and 1 is not finite: '), negativeNote(2, 1).title);
});

test('a text past the heatmaps\' window: the positions shown are the last ones, numbered from 0', () => {
  assert.equal(windowNote(undefined), null);
  assert.equal(windowNote({ total: 500, size: 500, offset: 0 }), null);
  const text = windowNote({ total: 5000, size: 1024, offset: 3976 });
  assert.ok(text.startsWith('The model reads 5,000 characters; the heatmaps, the line view and the row inspector show the last 1,024 '), text);
  assert.ok(text.includes('(positions 3,976–4,999, numbered 0–1,023 here)'), text);
});

test('legends: the scale and its range as drawn; saturation and masking only where there is some', () => {
  const scale = { vmin: 1e-4 };
  const ranges = { vmax: 0.5, over: 0, dmax: 0.4, dover: 0 };
  assert.equal(sharedLegend({ model: null, causal: false, log: false, scale, ranges }), 'A and Â: A\'s linear scale 0 … 0.50');
  assert.equal(sharedLegend({ model: null, causal: true, log: true, scale, ranges: { ...ranges, over: 3 } }),
    'A and Â: A\'s log scale 10⁻⁴ … 0.50; 3 Â entries above A\'s top saturate; grey: masked (j > i)', 'a bottom that is a power of ten, as its tick writes it');
  assert.match(sharedLegend({ model: null, causal: false, log: true, scale: { vmin: 0.0023 }, ranges }), /log scale 0\.002 … 0\.50$/);
  assert.equal(sharedLegend({ model: {}, causal: true, log: false, scale, ranges: { ...ranges, vmax: 1 } }),
    'A, Â and every head in the grid: one fixed linear scale 0 … 1.0; grey: masked (j > i)');
  assert.equal(diffLegend({ log: false, ranges }), 'A − Â, diverging at 0');
  assert.equal(diffLegend({ log: true, ranges: { ...ranges, dover: 4 } }), `A − Â, diverging at 0 (symmetric log); 4 entries beyond ±${fmt(0.4, 2)} saturate`);
  assert.ok(sharedLegend({ model: null, causal: false, log: false, scale, ranges: { ...ranges, over: 3847 } }).includes('; 3,847 Â entries'));
  assert.ok(diffLegend({ log: false, ranges: { ...ranges, dover: 12000 } }).endsWith(`; 12,000 entries beyond ±${fmt(0.4, 2)} saturate`));
  // one entry
  assert.ok(sharedLegend({ model: {}, causal: true, log: false, scale, ranges: { ...ranges, over: 1 } }).includes('; 1 Â entry above 1 saturates;'));
  assert.ok(sharedLegend({ model: null, causal: false, log: false, scale, ranges: { ...ranges, over: 1 } }).endsWith("; 1 Â entry above A's top saturates"));
  assert.ok(diffLegend({ log: false, ranges: { ...ranges, dover: 1 } }).endsWith(`; 1 entry beyond ±${fmt(0.4, 2)} saturates`));
});

test('timings: a row per step of what was computed, each with its time or "cached"', () => {
  const t = {
    inputs: 1.5, featureMap: 2, exactMatrix: 3, approxMatrix: 4, exactOutput: 5, favorOutput: 6, errors: 7, identity: 8,
    pca: 9, approxModel: 10, overview: 11, headOutput: 12, forwardCached: false, mapCached: false,
  };
  const check = (rows, names) => {
    assert.deepEqual(rows.map((r) => r[0]), names);
    assert.equal(new Set(names).size, names.length, 'names are distinct');
    for (const [name, ms, note] of rows) assert.ok((Number.isFinite(ms) && ms >= 0) || note === 'cached', name);
    assert.equal(rows.at(-1)[1], 0.25, 'the drawing time last');
  };
  check(timingRows(t, 0.25, {}), ['inputs Q, K, V (JS)', 'W (createFeatureMap)', 'A (attentionMatrix)', 'Â (favorAttentionMatrix)',
    'out (exactAttention)', 'out (favorAttention)', 'compare, output error', 'draw every panel']);
  check(timingRows(t, 0.25, { model: {} }), ['model, exact attention', 'model, approximation', 'every head: A, Â, errors',
    'selected head: outputs', 'draw every panel']);
  for (const identity of [null, { matrix: 0, output: 0 }]) {
    for (const assignment of ['hard', 'soft', 'gaussian']) {
      const rows = timingRows(t, 0.25, { codebook: { assignment, identity } });
      check(rows, ['inputs Q, K, V (JS)', assignment === 'gaussian' ? 'W, C = W·∜d' : 'C (kmeans)', 'A (attentionMatrix)',
        'Â (codebook matrix)', 'out (exactAttention)', 'out (codebook)', 'compare, output error',
        ...(identity ? ['FAVOR+ check (Â, out)'] : []), 'PCA, nearest codeword', 'draw every panel']);
    }
  }
  // the spread over draws, where it was asked for: one more row before the drawing
  check(timingRows({ ...t, spread: 30 }, 0.25, {}), ['inputs Q, K, V (JS)', 'W (createFeatureMap)', 'A (attentionMatrix)', 'Â (favorAttentionMatrix)',
    'out (exactAttention)', 'out (favorAttention)', 'compare, output error', 'Â over 16 draws', 'draw every panel']);
  assert.match(timingRows({ ...t, spread: 30 }, 0.25, { codebook: { assignment: 'hard' } }).at(-2)[3], /16 draws of k-means/);
  const cached = timingRows({ ...t, inputs: 0, mapCached: true }, 0.25, {});
  assert.deepEqual(cached.slice(0, 2).map((r) => r[2]), ['cached', 'cached']);
  assert.equal(timingRows({ ...t, forwardCached: true }, 0.25, { model: {} })[0][2], 'cached');
});

test('the timings\' total says from what it counts: the page\'s start (loading included), a change, or a redraw', () => {
  const first = latencyLabel({ first: true, fresh: true });
  assert.equal(first[0], 'page start → all panels');
  assert.match(first[1], /loading the WebAssembly module/);
  assert.deepEqual(latencyLabel({ first: false, fresh: true })[0], 'change → all panels');
  assert.match(latencyLabel({ first: false, fresh: true })[1], /worker round trip/);
  assert.equal(latencyLabel({ first: false, fresh: false })[0], 'redraw → all panels');
  assert.match(latencyLabel({ first: false, fresh: false })[1], /nothing computed again/);
  for (const first of [true, false]) for (const fresh of [true, false]) assert.doesNotMatch(latencyLabel({ first, fresh })[1], /"/, 'a title attribute\'s text');
});

// The synthetic story's "Try:", measured here as the page computes it: the library's Â on the
// page's inputs (L = 256, d = 64; its default input seed and two others; k-means seeded by the
// default feature seed), against a float64 A.
test('the synthetic story\'s suggestion holds for each kernel menu entry', async () => {
  const favor = await loadFavor();
  const { L, d } = DEFAULTS;  // 256, 64
  const inputs = (pattern, scale, dataSeed) => {
    const { q, k } = makeInputs({ L, d, pattern, scale, dataSeed });
    const Q = { data: q, dims: [L, d] }, K = { data: k, dims: [L, d] };
    return { Q, K, A: attentionMatrix(Q, K) };
  };
  const kl = ({ A }, Ahat) => compare(A, Ahat).meanRowKL;
  const vq = (x, m, assignment = 'hard', temperature = undefined) => kl(x, favor.codebookAttentionMatrix(x.Q, x.K, {
    codebook: favor.kmeans(x.K, { clusters: m, seed: 1 }), assignment, ...(temperature ? { temperature } : {}),
  }));
  for (const kernel of KERNELS) {
    for (const pattern of ['gaussian', 'clustered']) {
      const text = syntheticTry(kernel, pattern, { m: 16, L });
      noGaps(text);
      assert.equal(/^choose clustered keys/.test(text), kernel in CODEBOOK_MODES && pattern !== 'clustered', `${kernel} on ${pattern}`);
      assert.equal(/Lower T/.test(text), kernel === 'soft-vq', kernel);
      assert.equal(/each of the 8 centres/.test(text), kernel in CODEBOOK_MODES, kernel);
      if (kernel === 'performer-vq') assert.match(text, /by ten times and more from m = 16,/);
    }
  }
  // at m >= L hard VQ is already exact: the suggestion is to lower m (or T), not to raise it
  for (const m of [L, 2 * L]) {
    assert.match(syntheticTry('vq', 'clustered', { m, L }), /^lower the codewords m below L = 256: .* no longer exact\.$/);
    assert.match(syntheticTry('soft-vq', 'clustered', { m, L }), /^lower T: .* hard VQ, which is exact here\.$/);
  }
  assert.match(syntheticTry('vq', 'clustered', { m: L - 1, L }), /^raise the codewords m/);
  // as many centres as makeInputs draws: min(8, L/2); every key lies nearest its own block's centre
  for (const Ls of [2, 8, 12, 16, 64]) {
    const c = Math.max(1, Math.min(8, Math.floor(Ls / 2)));
    assert.match(syntheticTry('vq', 'clustered', { m: 1, L: Ls }), new RegExp(`each of the ${c} centres`));
    // the keys' groups: keys of one centre lie about √14 apart (noise 0.35 in 64 dimensions), keys
    // of two centres about √114
    const { k } = makeInputs({ L: Ls, d: 64, pattern: 'clustered', scale: 1, dataSeed: 0 });
    const group = Array.from({ length: Ls }, (_, i) => i);
    const root = (i) => (group[i] === i ? i : (group[i] = root(group[i])));
    for (let i = 0; i < Ls; i++) {
      for (let j = 0; j < i; j++) {
        let dist = 0;
        for (let t = 0; t < 64; t++) dist += (k[i * 64 + t] - k[j * 64 + t]) ** 2;
        if (dist < 40) group[root(i)] = root(j);
      }
    }
    assert.equal(new Set(group.map((_, i) => root(i))).size, c, `L = ${Ls}: the keys' groups`);
  }
  for (const dataSeed of [DEFAULTS.dataSeed, 1, 2]) {
    const plateau = {}, ratio = {};
    for (const scale of [0.5, 1]) {
      const x = inputs('clustered', scale, dataSeed);
      const e = Object.fromEntries([4, 16, 64, L].map((m) => [m, vq(x, m)]));
      assert.ok(e[4] > 10 * e[16], `input seed ${dataSeed}, s = ${scale}: falls steeply up to a codeword per centre (${e[4]} → ${e[16]})`);
      assert.ok(e[64] > 0.5 * e[16], `input seed ${dataSeed}, s = ${scale}: then levels off (${e[16]} → ${e[64]})`);
      assert.ok(e[L] < 1e-4, `input seed ${dataSeed}, s = ${scale}: exact at m = L (${e[L]})`);
      plateau[scale] = e[64];
      const soft = [10, 1, 0.1].map((T) => vq(x, 16, 'soft', T));
      assert.ok(soft[0] > soft[1] && soft[1] > soft[2], `input seed ${dataSeed}, s = ${scale}: soft VQ's error falls with T (${soft})`);
      assert.ok(Math.abs(soft[2] - e[16]) < 0.1 * e[16] + 1e-3, `input seed ${dataSeed}, s = ${scale}: T = 0.1 is close to hard VQ (${soft[2]} vs ${e[16]})`);
      for (const m of [2, 4, 8, 16, 64, 128, 256]) {
        const map = favor.createFeatureMap({ dim: d, features: m, kernel: 'positive', sampling: 'orthogonal-fixed', seed: 1 });
        const performer = kl(x, favor.codebookAttentionMatrix(x.Q, x.K, { codebook: favor.codebookFromFeatureMap(map), assignment: 'gaussian' }));
        map.dispose();
        const kmeans = e[m] ?? vq(x, m);
        if (m >= 16) assert.ok(performer >= 10 * kmeans, `input seed ${dataSeed}, s = ${scale}, m = ${m}: k-means ten times better (${performer} vs ${kmeans})`);
        if (m < L) ratio[`${scale}|${m}`] = performer / kmeans;
      }
    }
    assert.ok(plateau[1] > 5 * plateau[0.5], `input seed ${dataSeed}: the level weighs more as s grows (${plateau[0.5]} → ${plateau[1]})`);
    for (const m of [16, 64]) assert.ok(ratio[`1|${m}`] < ratio[`0.5|${m}`], `input seed ${dataSeed}, m = ${m}: k-means' lead shrinks as s grows`);
    // with fewer codewords k-means leads by less
    for (const m of [2, 4, 8]) assert.ok(ratio[`0.5|${m}`] < ratio['0.5|16'], `input seed ${dataSeed}, m = ${m}: ${ratio[`0.5|${m}`]} vs ${ratio['0.5|16']} at m = 16`);
  }
  // feature kernels: the error grows with s at a fixed m; the trigonometric kernel gives weights <= 0
  const favorKL = (scale, kernel) => {
    const x = inputs('gaussian', scale, DEFAULTS.dataSeed);
    const map = favor.createFeatureMap({ dim: d, features: 256, kernel, sampling: 'orthogonal', seed: 1 });
    const Ahat = favor.favorAttentionMatrix(x.Q, x.K, { featureMap: map });
    map.dispose();
    return { kl: kl(x, Ahat), negative: Ahat.data.some((w) => !(w > 0)) };
  };
  const [low, high] = [0.5, 1.5].map((s) => favorKL(s, 'positive'));
  assert.ok(high.kl > 10 * low.kl, `positive: s = 0.5 → 1.5 (${low.kl} → ${high.kl})`);
  assert.ok(favorKL(1, 'trigonometric').negative, 'trigonometric: some weights <= 0');
});

test('Performer as soft VQ beside FAVOR+: the two measured differences, each in its place', () => {
  const html = identityNote({ matrix: 1.25e-7, output: 3.5e-6 });
  noGaps(html);
  assert.ok(html.includes(`max |Â − Â<sub>FAVOR+</sub>| = <b>${fmt(1.25e-7, 2)}</b>`), html);
  assert.ok(html.includes(`max |out − out<sub>FAVOR+</sub>| = <b>${fmt(3.5e-6, 2)}</b>`), html);
  assert.match(html, /^<span title="[^"]*">[^"]*<\/span>$/, 'one title attribute, closed');
});

test('the model story\'s suggestion names the other model of the pair: the softmax model beside one trained with FAVOR+', () => {
  for (const favorTrained of [false, true]) {
    const text = modelTry(favorTrained);
    noGaps(text);
    assert.match(text, /^type at the end of the text/);
    assert.match(text, favorTrained ? /choose the softmax model/ : /choose the performer model/);
    // what the other model's heads do was measured on the default passage: said so beside a typed text
    for (const kernel of KERNELS.filter((k) => !['vq', 'soft-vq'].includes(k))) {
      const typed = modelTry(favorTrained, kernel, { ownText: true });
      assert.equal(typed, modelTry(favorTrained, kernel).replace(/\.$/, ' on the default passage.'), kernel);
    }
    assert.equal(modelTry(favorTrained, 'vq', { m: 64, L: 256, ownText: true }), modelTry(favorTrained, 'vq', { m: 64, L: 256 }), 'VQ\'s is about the text shown');
  }
});

test('the model story\'s suggestion for VQ: raise m while m < L, never once m ≥ L already (hard VQ is exact there)', () => {
  for (const favorTrained of [false, true]) {
    for (const kernel of ['vq', 'soft-vq']) {
      for (const L of [undefined, null, 256]) assert.match(modelTry(favorTrained, kernel, { m: 128, L }), /raise the codewords m: at m = L/);
      for (const m of [256, 1024]) {
        const text = modelTry(favorTrained, kernel, { m, L: 256 });
        noGaps(text);
        assert.doesNotMatch(text, /raise the codewords/, text);
        assert.match(text, kernel === 'vq' ? /or lower the codewords m below L = 256: keys then share codewords, and hard VQ is no longer exact\.$/
          : /or lower T: with a codeword for every key \(m ≥ L = 256\), soft VQ then tends to hard VQ, which is exact here\.$/);
      }
    }
    // random features: m and L say nothing
    assert.equal(modelTry(favorTrained, 'positive', { m: 256, L: 256 }), modelTry(favorTrained, 'positive'));
  }
});

test('rates read as whole numbers from 100 on, never in powers of ten', () => {
  assert.equal(fmtRate(1050.4), '1,050');
  assert.equal(fmtRate(23456.7), '23,457');
  assert.equal(fmtRate(100), '100');
  assert.equal(fmtRate(99.46), '99.5');
  assert.equal(fmtRate(4.2), '4.20');
});

test('a model trained with FAVOR+ says why exact attention can read its text worse, under whichever kernel', () => {
  const performer = { name: 'performer', attention: 'favor' }, finetune = { name: 'finetune', attention: 'favor' };
  const text = trainedNote(performer, 'positive', { exact: 3.51, approx: 2.52 });
  noGaps(text);
  assert.equal(text, 'This model was trained with FAVOR+ in every layer: exact softmax on its q and k is attention it never used, ' +
    'and it reads this text worse with it (3.51 bits/char) than with FAVOR+ (2.52). The frames measure how far FAVOR+ is from ' +
    'softmax on these q and k, not what the model loses.');
  assert.match(trainedNote(finetune, 'positive', { exact: 2.0, approx: 2.5 }), /was fine-tuned away from, and it reads this text better with it \(2\.00 bits\/char\) than with FAVOR\+ \(2\.50\)/);
  assert.equal(trainedNote({ name: 'softmax', attention: 'softmax' }, 'positive', { exact: 1.9, approx: 5 }), null);
  assert.equal(trainedNote(finetune, 'hyperbolic', { exact: 2.53, approx: 2.12 }), 'This model, trained with softmax, was then fine-tuned with FAVOR+ in every layer: ' +
    'exact softmax on its q and k is attention it was fine-tuned away from, and it reads this text worse with it (2.53 bits/char) ' +
    'than with hyperbolic features (2.12). The frames measure how far the approximation is from softmax on these q and k, not what the model loses.');
  for (const kernel of ['trigonometric', 'relu', 'oprf', 'sderf', 'aderf', 'vq', 'soft-vq', 'performer-vq']) {
    const note = trainedNote(performer, kernel, { exact: 2.43, approx: 5 });
    noGaps(note);
    assert.match(note, /reads this text better with it \(2\.43 bits\/char\) than with (\w+ features|OPRF \(FAVOR\+\+\)|[SA]DERF \(FAVOR#\)|hard VQ|soft VQ|Performer as soft VQ) \(5\.00\)\. The frames measure how far the approximation is/, kernel);
  }
  assert.equal(trainedNote(undefined, 'positive', { exact: 3, approx: 2 }), null, 'before the manifest is read');
});
