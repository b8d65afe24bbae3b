// The entries of Â the page counts as not probabilities (demo/src/invalid-entries.js): negative,
// zero (unless zeros are underflow) and not finite, over the entries each row has, against a
// matrix whose every entry's kind is set here.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { countInvalid } from '../../demo/src/invalid-entries.js';

// An L x L matrix with the given entries at (i, j), 0.5 elsewhere.
function matrix(L, entries) {
  const a = new Float32Array(L * L).fill(0.5);
  for (const [i, j, x] of entries) a[i * L + j] = x;
  return a;
}

test('negative, zero and non-finite entries are counted in the rows\' own entries only', () => {
  const L = 5;
  const a = matrix(L, [[0, 0, -1e-30], [2, 1, 0], [3, 3, -0], [4, 0, NaN], [4, 2, Infinity], [1, 4, -2], [0, 3, -Infinity], [2, 2, 1e-40]]);
  // bidirectional: every entry; -0 is zero; 1e-40 is a positive subnormal
  assert.deepEqual(countInvalid(a, L, false), { nonPositive: 4, nonFinite: 3 });
  // causal: (1, 4) and (0, 3) are above the diagonal, not the row's
  assert.deepEqual(countInvalid(a, L, true), { nonPositive: 3, nonFinite: 2 });
  // zeros as underflow: only the negative ones count
  assert.deepEqual(countInvalid(a, L, true, true), { nonPositive: 1, nonFinite: 2 });
  assert.deepEqual(countInvalid(matrix(L, []), L, false), { nonPositive: 0, nonFinite: 0 });
});
