// favor.matmul against a float64 product: a [..., n, k] times b [k, m] or, with transposeB, b [m, k]
// (a PyTorch Linear weight), plus a bias. Tolerance: each entry is a float32 sum of k products
// (k <= 300 here), |error| <= k * 2^-24 * sum |a_i b_i|; 1e-5 of the largest |entry| is ~10x that
// bound at these sizes, while a transposed, shifted or missing term moves entries by >= 1e-2.
import assert from 'node:assert/strict';
import { before, test } from 'node:test';

import { loadFavor } from 'favor-attention';

import { assertBelow, assertBitIdentical, maxRelDiff, normalTensor } from './helpers.mjs';
import * as ref from './reference.mjs';

let favor, threaded;
before(async () => {
  [favor, threaded] = await Promise.all([loadFavor({ threads: 1 }), loadFavor({ threads: 2 })]);
});

test('matmul equals the float64 product, with and without transposeB and bias, any leading dims', () => {
  for (const [adims, k, m] of [[[1, 1], 1, 1], [[5, 7], 7, 3], [[2, 3, 70, 33], 33, 65], [[300, 128], 128, 384], [[9, 300], 300, 10]]) {
    const a = normalTensor(adims, k + m);
    for (const transposeB of [false, true]) {
      const b = normalTensor(transposeB ? [m, k] : [k, m], 2 * k + m);
      for (const bias of [undefined, normalTensor([m], 7)]) {
        const got = favor.matmul(a, b, { transposeB, ...(bias && { bias }) });
        assert.deepEqual(got.dims, [...adims.slice(0, -1), m]);
        assertBelow(maxRelDiff(got.data, ref.linearProduct(a, b, transposeB, bias)), 1e-5, `[${adims}] x ${transposeB ? 'b^T' : 'b'}${bias ? ' + bias' : ''}`);
        // rows are split into fixed blocks: the same bits on any thread count
        assertBitIdentical(threaded.matmul(a, b, { transposeB, ...(bias && { bias }) }).data, got.data, 'threads');
      }
    }
  }
});
