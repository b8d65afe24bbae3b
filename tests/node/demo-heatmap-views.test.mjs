// What the page's heatmaps show around their pixels, read against the matrices they describe:
// the colour ranges (demo/src/heatmap-ranges.js), the characters on the axes
// (demo/src/axis-labels.js) and the line that reads the hovered entry (demo/src/readout.js).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { axisLabels, strongestKeys } from '../../demo/src/axis-labels.js';
import { fmt } from '../../demo/src/colors.js';
import { difference, heatmapRanges } from '../../demo/src/heatmap-ranges.js';
import { READOUT_HINT, readoutHtml } from '../../demo/src/readout.js';
import { rng } from './helpers.mjs';

// A causal L × L matrix of row-normalized positive weights with a few sharp rows.
function causalWeights(L, seed) {
  const g = rng(seed);
  const M = new Float32Array(L * L);
  for (let i = 0; i < L; i++) {
    let sum = 0;
    for (let j = 0; j <= i; j++) sum += (M[i * L + j] = Math.exp(4 * g.normal()));
    for (let j = 0; j <= i; j++) M[i * L + j] /= sum;
  }
  return M;
}

test('strongest keys: the largest weights of the row first, each a gap from every stronger one kept', () => {
  for (const [L, seed] of [[64, 1], [200, 2], [256, 3]]) {
    const M = causalWeights(L, seed);
    for (const i of [0, 1, 17, L - 1]) {
      for (const gap of [1, 3, 9]) {
        for (const k of [1, 4, 8]) {
          const kept = strongestKeys(M, L, i, k, gap);
          const w = (j) => M[i * L + j];
          assert.ok(kept.length >= 1 && kept.length <= Math.min(k, i + 1), `${kept.length} keys`);
          assert.ok(kept.every((j) => j >= 0 && j <= i), 'only keys of the row (j ≤ i)');
          let best = 0;
          for (let j = 0; j <= i; j++) if (w(j) > w(best)) best = j;
          assert.equal(kept[0], best, 'the strongest key comes first');
          for (let a = 1; a < kept.length; a++) assert.ok(w(kept[a - 1]) >= w(kept[a]), 'strongest first');
          for (let a = 0; a < kept.length; a++) {
            for (let b = a + 1; b < kept.length; b++) assert.ok(Math.abs(kept[a] - kept[b]) >= gap, `keys ${kept[a]}, ${kept[b]} closer than ${gap}`);
          }
          // A key left out that is stronger than the weakest kept lies within the gap of a stronger kept one.
          if (kept.length === k) {
            const weakest = w(kept[kept.length - 1]);
            for (let j = 0; j <= i; j++) {
              if (kept.includes(j) || w(j) <= weakest) continue;
              assert.ok(kept.some((c) => w(c) >= w(j) && Math.abs(c - j) < gap), `key ${j} left out without a stronger neighbour`);
            }
          } else {
            // Fewer than k: every key of the row is within the gap of one kept.
            for (let j = 0; j <= i; j++) assert.ok(kept.some((c) => Math.abs(c - j) < gap), `key ${j} neither kept nor near one`);
          }
        }
      }
    }
  }
});

test('axis labels: every character where they fit, else the query and its strongest keys on each map', () => {
  const text = 'Call me Ishmael.\nSome years ago';
  const L = text.length, chars = [...text];
  const A = causalWeights(L, 4), Ahat = causalWeights(L, 5);
  const shown = (c) => (c === ' ' ? '␣' : c === '\n' ? '⏎' : c);
  const i = 20;

  const wide = axisLabels({ chars, L, A, Ahat, i, width: 8 * L });
  for (const name of ['exact', 'approx', 'diff']) {
    assert.deepEqual(wide[name].rows.map(([r, t]) => [r, t]), chars.map((c, r) => [r, shown(c)]), `${name}: every row labelled`);
    assert.deepEqual(wide[name].cols.map(([j]) => j), chars.map((_, j) => j), `${name}: every column labelled`);
    assert.deepEqual(wide[name].rows.filter(([, , cls]) => cls === 'query').map(([r]) => r), [i], 'the query marked');
  }
  assert.ok(wide.exact.rows.some(([, t]) => t === '⏎') && wide.exact.rows.some(([, t]) => t === '␣'), 'space and newline shown as symbols');

  const width = 2 * L;  // under 8 px a character: only the strongest keys
  const narrow = axisLabels({ chars, L, A, Ahat, i, width });
  const gap = Math.ceil((10 * L) / width);
  for (const [name, M] of [['exact', A], ['approx', Ahat], ['diff', A]]) {
    const keys = strongestKeys(M, L, i, 4, gap);
    assert.deepEqual(narrow[name].rows, [[i, shown(chars[i]), 'query']], `${name}: only the query's row`);
    assert.deepEqual(narrow[name].cols, [...keys].sort((a, b) => a - b).map((j) => [j, shown(chars[j]), 'key']), `${name}: its keys, in order`);
  }
  assert.notDeepEqual(narrow.exact.cols, narrow.approx.cols, 'Â is labelled by its own strongest keys');
});

test('colour ranges: a trained model on one fixed scale, synthetic inputs on their own, a spike of A − Â cut off', () => {
  const L = 100, n = L * L, g = rng(6);
  const A = Float32Array.from({ length: n }, () => 0.5 * g.uniform());
  A[7] = 0;
  A[8] = 2e-3;
  const Ahat = Float32Array.from(A, (a) => a + 0.01 * g.uniform());
  Ahat[9] = 0.9;  // above A's maximum: saturates
  const diff = difference(A, Ahat);
  for (let x = 0; x < n; x++) assert.equal(diff[x], Math.fround(A[x] - Ahat[x]));
  let maxA = 0, minPos = Infinity, absMax = 0;
  for (let x = 0; x < n; x++) {
    maxA = Math.max(maxA, A[x]);
    if (A[x] > 0) minPos = Math.min(minPos, A[x]);
    absMax = Math.max(absMax, Math.abs(diff[x]));
  }
  const over = (vmax) => Ahat.filter((b) => b > vmax * 1.0001).length;

  const model = heatmapRanges({ A, Ahat, diff, model: {} });
  assert.equal(model.vmax, 1);
  assert.equal(model.floor, 1e-4);
  assert.equal(model.over, 0, 'nothing above 1');

  const synthetic = heatmapRanges({ A, Ahat, diff, model: undefined });
  assert.equal(synthetic.vmax, maxA);
  assert.equal(synthetic.floor, minPos, 'the smallest positive weight, when above 10⁻⁶ of the top');
  assert.equal(synthetic.over, over(maxA));
  assert.ok(synthetic.over >= 1, 'Â[9] saturates');
  // One entry of A − Â (|−0.9 + A[9]| ≥ 0.4) far above the rest (≤ 0.01): the scale ends near 0.01 and counts it.
  assert.ok(synthetic.dmax >= 0.0099 && synthetic.dmax <= 0.01 + 2 * absMax / 4096, `dmax ${synthetic.dmax}`);
  assert.equal(synthetic.dover, diff.filter((e) => Math.abs(e) > synthetic.dmax).length);
  assert.ok(synthetic.dover >= 1 && synthetic.dover <= 1 + n / 1000, `${synthetic.dover} entries beyond`);

  // Without the spike the scale ends at the largest difference and nothing lies beyond it.
  Ahat[9] = A[9];
  const calm = heatmapRanges({ A, Ahat, diff: difference(A, Ahat), model: undefined });
  assert.equal(calm.dover, 0);
  assert.equal(calm.over, over(maxA), "Â above A's top, counted");
  assert.equal(calm.dmax, Math.max(...difference(A, Ahat).map(Math.abs)));

  // A tiny positive weight does not stretch the log scale below 10⁻⁶ of its top.
  A[8] = 1e-12;
  assert.equal(heatmapRanges({ A, Ahat, diff, model: undefined }).floor, maxA * 1e-6);
});

test('the readout: the hovered entry\'s values, characters and codeword, masked entries and the hint', () => {
  const L = 4;
  const A = Float32Array.from([1, 0, 0, 0, 0.25, 0.75, 0, 0, 0.2, 0.3, 0.5, 0, 0.1, 0.2, 0.3, 0.4]);
  const Ahat = Float32Array.from(A, (a, x) => (x === 13 ? -0.05 : a * 0.9));
  const view = { L, causal: true, A, Ahat };
  assert.equal(readoutHtml(view, null), READOUT_HINT);
  assert.match(readoutHtml(view, [1, 3]), /\(i, j\) = \(<b>1<\/b>, <b>3<\/b>\): masked \(causal: key j > query i\)/);
  assert.doesNotMatch(readoutHtml({ ...view, causal: false }, [1, 3]), /masked/);

  const html = readoutHtml(view, [2, 1]);
  assert.match(html, new RegExp(`A = <b>${fmt(0.3)}</b>`));
  assert.match(html, new RegExp(`Â = <b>${fmt(Math.fround(0.3) * 0.9)}</b>`));
  assert.match(html, new RegExp(`A − Â = <b class="err-pos">${fmt(Math.fround(0.3) - Math.fround(Math.fround(0.3) * 0.9))}</b> \\(10 % of A\\)`));
  assert.doesNotMatch(html, /≤ 0|codeword|query/);

  // An error of more than 10 times A is read as a ratio; none where Â is not positive.
  const tiny = { L: 2, causal: false, A: Float32Array.from([1, 5.63e-31, 0.5, 0.5]), Ahat: Float32Array.from([1, 8.31e-12, 0.5, -6]) };
  assert.match(readoutHtml(tiny, [0, 1]), new RegExp(`\\(Â = ${fmt(Math.fround(8.31e-12) / Math.fround(5.63e-31), 2)} × A\\)$`));
  assert.doesNotMatch(readoutHtml(tiny, [0, 1]), /%/);
  assert.match(readoutHtml(tiny, [1, 1]), /\(≤ 0\).*err-pos">6\.50<\/b>$/);
  assert.match(readoutHtml(tiny, [1, 0]), /\(0 % of A\)$/);

  const negative = readoutHtml(view, [3, 1], { chars: ['<', '&', ' ', '\n'], codebook: { view: { assign: [2, 0, 1, 1] }, assignment: 'soft' } });
  assert.match(negative, /Â = <b>−0\.0500<\/b> <span class="err-pos">\(≤ 0\)<\/span>/);
  assert.match(negative, /query <code>\\n<\/code> → key <code>&amp;<\/code>/, 'characters escaped for HTML');
  assert.match(negative, /key 1 → codeword 0 \(nearest\)$/);
  assert.match(readoutHtml(view, [0, 0], { chars: ['<'], codebook: { view: { assign: [3] }, assignment: 'hard' } }), /<code>&lt;<\/code>.*key 0 → codeword 3$/);
  assert.doesNotMatch(readoutHtml(view, [0, 0], { codebook: { view: { assign: [] }, assignment: 'hard' } }), /codeword/, 'a key past the codebook\'s assignments');
});
