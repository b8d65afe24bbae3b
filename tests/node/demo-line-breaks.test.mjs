// The page's "what query i attends to" view lays the text out in lines that break between words
// (demo/src/line-view.js lineStarts): every character drawn once, in order, no line longer than
// it may be, a newline only at a line's end, and a line cut inside a word only where the word
// does not fit a line of its own.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { MAX_ZOOM, lineStarts, textZoom } from '../../demo/src/line-view.js';
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
