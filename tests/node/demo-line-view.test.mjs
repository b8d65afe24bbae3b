// The page's "what query i attends to" view (demo/src/line-view.js): the text in lines that break
// between words (lineStarts: every character drawn once, in order, no line longer than it may be,
// a newline only at a line's end, and a line cut inside a word only where the word does not fit a
// line of its own); the keys it draws arcs to and the weight it leaves undrawn, against float64
// sums over causal rows; the width of an arc; and its subtitle.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { MAX_ZOOM, arcWidth, drawnKeys, lineStarts, lineSubtitle, textZoom } from '../../demo/src/line-view.js';
import { rng } from './helpers.mjs';

const linesOf = (text, perLine) => {
  const starts = lineStarts(text, text.length, perLine);
  return starts.map((s, i) => text.slice(s, starts[i + 1] ?? text.length));
};

test('a sentence breaks after spaces, words whole', () => {
  const text = 'During the most violent shocks of the Typhoon, the man at the tiller';
  assert.deepEqual(linesOf(text, 20), ['During the most ', 'violent shocks of ', 'the Typhoon, the ', 'man at the tiller']);
  assert.deepEqual(linesOf('a\nbb ccc\n', 10), ['a\n', 'bb ccc\n']);
  assert.deepEqual(linesOf('x'.repeat(25) + ' yy', 10), ['xxxxxxxxxx', 'xxxxxxxxxx', 'xxxxx yy']);
  assert.deepEqual(linesOf('short', 10), ['short']);
});

test('random texts: every character once, in order; lines fit; breaks only where needed', () => {
  const g = rng(11), alphabet = 'abcdefgh    \n';
  for (let trial = 0; trial < 400; trial++) {
    const n = 1 + Math.floor(g.uniform() * 300), perLine = 10 + Math.floor(g.uniform() * 40);
    const text = Array.from({ length: n }, () => alphabet[Math.floor(g.uniform() * alphabet.length)]).join('');
    const lines = linesOf(text, perLine);
    assert.equal(lines.join(''), text);
    for (const [l, line] of lines.entries()) {
      assert.ok(line.length >= 1 && line.length <= perLine, `line ${l} of ${line.length} characters (at most ${perLine})`);
      assert.ok(!line.slice(0, -1).includes('\n'), `a newline inside line ${l}`);
      const last = l === lines.length - 1;
      if (last || line.endsWith('\n') || line.endsWith(' ')) continue;
      // cut inside a word: only with no space to break at and the line full
      assert.equal(line.length, perLine, `line ${l} cut short inside a word: ${JSON.stringify(line)}`);
      assert.ok(!line.slice(1).includes(' '), `line ${l} could have broken at a space: ${JSON.stringify(line)}`);
    }
  }
});

test('a short text is drawn larger, on one line that fits; a long one at its own size', () => {
  const cw = 7.2;
  for (const width of [240, 390, 700, 1100]) {
    for (let L = 1; L <= 400; L++) {
      const z = textZoom(L, width, cw);
      assert.ok(z >= 1 && z <= MAX_ZOOM, `zoom ${z}`);
      // zoomed only when the whole text fits one line at that zoom
      if (z > 1) assert.ok(4 + L * cw * z <= width - 4 + 1e-9, `L ${L} width ${width}: ${4 + L * cw * z} px`);
      // and as large as fits, up to the cap
      if (z < MAX_ZOOM && L * cw < width - 8) assert.ok(Math.abs(4 + L * cw * z - (width - 4)) < 1e-9);
    }
  }
  assert.equal(textZoom(256, 1100, cw), 1);
  assert.equal(textZoom(2, 1100, cw), MAX_ZOOM);
});

// A causal L x L matrix of rows that sum to 1, weights spread over orders of magnitude.
function causalRows(L, random) {
  const M = new Float32Array(L * L);
  for (let i = 0; i < L; i++) {
    let sum = 0;
    for (let j = 0; j <= i; j++) sum += (M[i * L + j] = Math.exp(6 * random()) - 1 + 1e-9);
    for (let j = 0; j <= i; j++) M[i * L + j] /= sum;
  }
  return M;
}

test('the keys drawn are those of weight >= 1 % in A or Â up to the query, and the undrawn weight is A on the rest', () => {
  const random = rng(7).uniform, L = 96;
  const A = causalRows(L, random), Ahat = causalRows(L, random);
  for (const i of [0, 1, 17, 50, 95]) {
    const { keys, undrawn } = drawnKeys(A, Ahat, L, i);
    let rest = 0, count = 0;
    for (let j = 0; j <= i; j++) {
      const a = A[i * L + j], b = Ahat[i * L + j];
      if (a >= 0.01 || b >= 0.01) {
        assert.deepEqual(keys[count++], [j, a, b], `row ${i}, key ${j}`);
      } else {
        rest += a;
      }
    }
    assert.equal(keys.length, count, `row ${i}`);
    // the same terms, summed in another order: float64 rounding only
    assert.ok(Math.abs(undrawn - rest) <= 1e-12, `row ${i}: ${undrawn} against ${rest}`);
    // drawn and undrawn weight make up the row
    const drawn = keys.reduce((s, [, a]) => s + a, 0);
    assert.ok(Math.abs(drawn + undrawn - 1) < 1e-5, `row ${i}: ${drawn} + ${undrawn}`);
  }
  // keys past the query are never drawn, whatever they hold
  const spoiled = Float32Array.from(A);
  spoiled[10 * L + 11] = 0.5;
  assert.ok(drawnKeys(spoiled, Ahat, L, 10).keys.every(([j]) => j <= 10));
  // a key of 1 % or more in either is drawn; one under 1 % in both is not, its exact weight undrawn
  const under = Math.fround(0.0099), over = Math.fround(0.0101);
  const row2 = (values) => Float32Array.of(0, 0, 0, 0, 0, 0, ...values);  // row 2 of a 3 x 3 matrix
  const edge = drawnKeys(row2([over, under, 0]), row2([0, under, over]), 3, 2);
  assert.deepEqual(edge.keys.map(([j]) => j), [0, 2]);
  assert.equal(edge.undrawn, under);
});

test('an arc\'s width grows with the weight, from 0.6 px to 9.6 px at 1 and no wider', () => {
  assert.equal(arcWidth(0), 0.6);
  assert.equal(arcWidth(1), 9.6);
  assert.equal(arcWidth(3), 9.6);
  for (let w = 0; w < 1; w += 0.01) assert.ok(arcWidth(w + 0.01) > arcWidth(w));
});

test('the subtitle: the keys drawn, the undrawn weight, and in a window the weight before it', () => {
  const keys = [[3, 0.5, 0.4], [7, 0.3, 0.2]];
  assert.equal(lineSubtitle({ keys, undrawn: 0.0134 }), '2 keys drawn; undrawn exact weight 0.013');
  assert.equal(lineSubtitle({ keys, undrawn: 0.0134, before: 0.21 }), '2 keys drawn; undrawn exact weight 0.013 in the window, 0.21 on keys before it');
  assert.equal(lineSubtitle({ keys: [], undrawn: 0, before: 0 }), '0 keys drawn; undrawn exact weight 0 in the window, 0 on keys before it');
  assert.equal(lineSubtitle({ keys: keys.slice(0, 1), undrawn: 0 }), '1 key drawn; undrawn exact weight 0');
});
