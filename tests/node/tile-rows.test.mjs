// The GEMM's register tile (loadFavor's tileRows: 2, 4 or 6 rows): what 'auto' picks in this engine,
// and that every tile gives the same bits in every build this engine runs (relaxed where it
// validates: `npm test` runs this suite in Node 22 too), on one thread and two, for every call
// whose products go through the GEMM.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { loadFavor } from 'favor-attention';

import { RELAXED_SIMD_SUPPORTED, RELAXED_TILE_ROWS, assertBitIdentical, concatRows, normalTensor, sliceRows } from './helpers.mjs';

test("tileRows 'auto' takes 6 rows for the relaxed build on V8 >= 13.6, 4 for the scalar build, else 2; 2, 4 and 6 are taken as given", async () => {
  for (const simd of ['auto', 'fixed', false]) {
    const favor = await loadFavor({ simd, threads: 1 });
    const expected = !favor.info.simd ? 4 : favor.info.relaxedSimd ? RELAXED_TILE_ROWS : 2;
    assert.equal(favor.info.tileRows, expected, `simd: ${simd} (relaxed: ${favor.info.relaxedSimd}, V8 ${process.versions.v8})`);
    assert.equal((await loadFavor({ simd, threads: 1, tileRows: 'auto' })).info.tileRows, expected);
    for (const rows of [2, 4, 6]) assert.equal((await loadFavor({ simd, threads: 1, tileRows: rows })).info.tileRows, rows);
  }
});

// Shapes with full tiles and tails of every kind (L = 203: 33 tiles of 6 and 5 rows left, or 101
// pairs and one row; 96, 40 and 24 columns: whole pairs of strips, a strip left over).
const q = normalTensor([2, 203, 32], 1, 0.6), k = normalTensor([2, 203, 32], 2, 0.6), v = normalTensor([2, 203, 24], 3);

function outputs(favor) {
  const featureMap = favor.createFeatureMap({ dim: 32, features: 96, seed: 5 });
  const hyperbolic = favor.createFeatureMap({ dim: 32, features: 40, kernel: 'hyperbolic', seed: 6 });
  const state = favor.createCausalState({ method: 'favor', featureMap });
  try {
    const codebook = favor.kmeans(k, { clusters: 12, seed: 2 });
    return {
      favor: favor.favorAttention(q, k, v, { featureMap }),
      favorCausal: favor.favorAttention(q, k, v, { featureMap, causal: true, chunk: 48 }),
      hyperbolic: favor.favorAttention(q, k, v, { featureMap: hyperbolic }),
      matrix: favor.favorAttentionMatrix(sliceRows(q, 0, 50), sliceRows(k, 0, 61), { featureMap }),
      codebook: favor.codebookAttention(q, k, v, { codebook, assignment: 'soft' }),
      matmul: favor.matmul(q, normalTensor([40, 32], 4), { transposeB: true }),
      state: concatRows([[0, 150], [150, 151], [151, 159], [159, 203]].map(([a, b]) =>
        state.append(sliceRows(q, a, b), sliceRows(k, a, b), sliceRows(v, a, b)))),
    };
  } finally {
    state.dispose();
    hyperbolic.dispose();
    featureMap.dispose();
  }
}

for (const simd of [...(RELAXED_SIMD_SUPPORTED ? ['relaxed'] : []), 'fixed', false]) {
  test(`2-, 4- and 6-row tiles give the same bits (simd: ${simd}, 1 and 2 threads)`, async () => {
    const expected = outputs(await loadFavor({ simd, threads: 1, tileRows: 4 }));
    for (const [threads, rows] of [[1, 6], [2, 6], [2, 4], [1, 2], [2, 2]]) {
      const favor = await loadFavor({ simd, threads, tileRows: rows });
      assert.equal(favor.info.tileRows, rows);
      const actual = outputs(favor);
      for (const name of Object.keys(expected)) {
        assert.deepEqual(actual[name].dims, expected[name].dims, name);
        assertBitIdentical(actual[name].data, expected[name].data, `${name}: ${rows} rows, ${threads} thread(s) vs 4 rows, 1 thread`);
      }
      favor.dispose();
    }
  });
}
