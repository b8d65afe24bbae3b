// The grid of heads is one tab stop; the arrow keys, Home and End move between its cells as they
// are laid out (demo/src/model-panel.js gridMove): every cell reachable from every other, never
// past the edges, other keys left to the browser.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { gridMove } from '../../demo/src/model-panel.js';

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
