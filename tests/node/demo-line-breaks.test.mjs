// The page's "what query i attends to" view lays the text out in lines that break between words
// (demo/src/line-view.js lineStarts): every character drawn once, in order, no line longer than
// it may be, a newline only at a line's end, and a line cut inside a word only where the word
// does not fit a line of its own.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { lineStarts } from '../../demo/src/line-view.js';
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
