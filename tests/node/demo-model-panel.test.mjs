// The model panel's pure parts (demo/src/model-panel.js): the grid of heads is one tab stop, and
// the arrow keys, Home and End move between its cells as they are laid out (gridMove): every cell
// reachable from every other, never past the edges, other keys left to the browser; the quoted
// end of the text above the predictions (quote) starts at a word; the model menu's entries
// (modelOption) name each model once.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { DEFAULT_TEXT, gridMove, modelOption, quote } from '../../demo/src/model-panel.js';
import { readManifest } from '../../model/node.js';

test('arrow keys move by one cell or one row, clamped to the grid', () => {
  const g = { count: 16, columns: 4 };
  assert.equal(gridMove(5, 'ArrowRight', g), 6);
  assert.equal(gridMove(5, 'ArrowLeft', g), 4);
  assert.equal(gridMove(5, 'ArrowDown', g), 9);
  assert.equal(gridMove(5, 'ArrowUp', g), 1);
  assert.equal(gridMove(0, 'ArrowUp', g), 0);
  assert.equal(gridMove(0, 'ArrowLeft', g), 0);
  assert.equal(gridMove(15, 'ArrowDown', g), 15);
  assert.equal(gridMove(15, 'ArrowRight', g), 15);
  assert.equal(gridMove(13, 'ArrowDown', g), 15, 'the last row clamps to the last cell');
  assert.equal(gridMove(7, 'Home', g), 0);
  assert.equal(gridMove(7, 'End', g), 15);
  for (const key of ['Enter', ' ', 'Tab', 'a', 'PageDown']) assert.equal(gridMove(7, key, g), null, key);
});

test('from any cell, arrows reach every cell, and each step stays in the grid', () => {
  for (const [count, columns] of [[16, 4], [12, 4], [6, 3], [1, 1]]) {
    for (let start = 0; start < count; start++) {
      const seen = new Set([start]), queue = [start];
      while (queue.length) {
        const at = queue.shift();
        for (const key of ['ArrowLeft', 'ArrowRight', 'ArrowUp', 'ArrowDown']) {
          const to = gridMove(at, key, { count, columns });
          assert.ok(Number.isInteger(to) && to >= 0 && to < count, `${count}/${columns}: ${at} ${key} → ${to}`);
          if (!seen.has(to)) { seen.add(to); queue.push(to); }
        }
      }
      assert.equal(seen.size, count, `${count} cells, ${columns} a row, from ${start}`);
    }
  }
});

test('the quote before the predictions: its last characters from the start of a word, ⏎ for a newline', () => {
  assert.equal(quote(DEFAULT_TEXT, DEFAULT_TEXT.length - 1), '…slack—because some play');
  assert.equal(quote('During the most violent', 9), 'During the');
  assert.equal(quote('ab', 1), 'ab');
  assert.equal(quote('hello world\nfoo bar baz', 22), '…world⏎foo bar baz');
  assert.equal(quote('x'.repeat(40), 39), `…${'x'.repeat(16)}`, 'no word start near: 16 characters');
  // at most 16 + 8 characters and the ellipsis, and always the row's own character last
  const words = 'the whale is a mammal of great size and the sea is wide'.repeat(3);
  for (let row = 0; row < words.length; row++) {
    const q = quote(words, row);
    assert.ok(q.replace('…', '').length <= 24, q);
    assert.ok(q.endsWith(words[row]), q);
    const shown = q.replace('…', ''), start = row - shown.length + 1;
    assert.equal(q.startsWith('…'), start > 0, q);
    // from a word's start, unless none is within 8 characters before the last 16
    const wordStart = start === 0 || words[start - 1] === ' ';
    assert.ok(wordStart || (shown.length === 16 && !words.slice(Math.max(0, start - 8), start).includes(' ') && start > 8), `${row}: "${q}"`);
  }
});

test('the model menu names each model once: the manifest\'s title without the name it repeats', async () => {
  const options = (await readManifest()).models.map(modelOption);
  assert.equal(options.length, 5);
  assert.deepEqual(options.slice(0, 2), ['softmax: trained with softmax attention (held-out 2.07 bits/char)',
    'performer: trained with causal FAVOR+ (held-out 2.11 bits/char)']);
  for (const o of options) assert.doesNotMatch(o, /^([\w-]+): \1:/i, o);
  assert.equal(modelOption({ name: 'x', title: 'X-ray: seen', heldOutBpc: 2 }), 'x: X-ray: seen (held-out 2.00 bits/char)', 'only the name itself');
});
