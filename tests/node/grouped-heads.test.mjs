// Grouped-query and multi-query heads: q [..., Hq, L, d] with k, v [..., Hkv, S, d], query head h
// reading key/value head floor(h / (Hq / Hkv)). Every function and the causal state are compared
// with the same call on K and V repeated by hand. The grouped FAVOR+/codebook path computes each
// key/value head's features once and reads them with the same query code, so it agrees with the
// repeated call to float rounding (1e-6 of the largest entry; exact attention bit for bit).
import assert from 'node:assert/strict';
import { before, test } from 'node:test';

import { loadFavor } from 'favor-attention';

import { assertBelow, assertBitIdentical, assertThrowsNamed, maxRelDiff, normalTensor, repeatHeads, sliceRows } from './helpers.mjs';

let favor;
before(async () => {
  favor = await loadFavor({ threads: 1 });
});

const d = 8, L = 33, S = 41;

for (const [name, hq, hkv] of [['grouped-query 4/2', 4, 2], ['multi-query 3/1', 3, 1], ['4/4 (plain)', 4, 4]]) {
  test(`${name}: every function equals K and V repeated by hand`, () => {
    const g = hq / hkv;
    const q = normalTensor([2, hq, L, d], 1, 0.7), k = normalTensor([2, hkv, S, d], 2, 0.7), v = normalTensor([2, hkv, S, 5], 3);
    const kr = repeatHeads(k, g), vr = repeatHeads(v, g);
    const mask = { data: Uint8Array.from({ length: 2 * hkv * S }, (_, i) => (i % 7 === 3 ? 0 : 1)), dims: [2, hkv, S] };
    const maskR = { data: repeatHeads({ data: Float32Array.from(mask.data), dims: [2, hkv, 1, S] }, g).data, dims: [2, hq, S] };
    maskR.data = Uint8Array.from(maskR.data);
    const fm = favor.createFeatureMap({ dim: d, features: 16, seed: 4 });
    const oprf = favor.createFeatureMap({ dim: d, features: 16, kernel: 'oprf', seed: 4 });
    const sderf = favor.createFeatureMap({ dim: d, features: 16, kernel: 'sderf', seed: 4 });
    const aderf = favor.createFeatureMap({ dim: d, features: 16, kernel: 'aderf', seed: 4, fit: { q, k } });
    const book = favor.randomCodebook({ clusters: 6, dim: d, seed: 5 });
    for (const causal of [false, true]) {
      const o = { causal, keyMask: mask }, or = { causal, keyMask: maskR };
      assertBitIdentical(favor.exactAttention(q, k, v, o).data, favor.exactAttention(q, kr, vr, or).data, `exact ${causal}`);
      assertBitIdentical(favor.attentionMatrix(q, k, o).data, favor.attentionMatrix(q, kr, or).data, `matrix ${causal}`);
      for (const map of [fm, oprf, sderf, aderf]) {
        assertBelow(maxRelDiff(favor.favorAttention(q, k, v, { ...o, featureMap: map }).data,
          favor.favorAttention(q, kr, vr, { ...or, featureMap: map }).data), 1e-6, `favor ${map.kernel} ${causal}`);
        assertBelow(maxRelDiff(favor.favorAttentionMatrix(q, k, { ...o, featureMap: map }).data,
          favor.favorAttentionMatrix(q, kr, { ...or, featureMap: map }).data), 1e-6, `favor matrix ${map.kernel} ${causal}`);
      }
      assertBelow(maxRelDiff(favor.codebookAttention(q, k, v, { ...o, codebook: book }).data,
        favor.codebookAttention(q, kr, vr, { ...or, codebook: book }).data), 1e-6, `codebook ${causal}`);
      assertBelow(maxRelDiff(favor.codebookAttentionMatrix(q, k, { ...o, codebook: book }).data,
        favor.codebookAttentionMatrix(q, kr, { ...or, codebook: book }).data), 1e-6, `codebook matrix ${causal}`);
      // per key/value head codebooks ([2, hkv, c, d]) = the same codebooks repeated per query head
      const books = favor.kmeans(k, { clusters: 5, seed: 1 });
      assertBelow(maxRelDiff(favor.codebookAttention(q, k, v, { ...o, codebook: books }).data,
        favor.codebookAttention(q, kr, vr, { ...or, codebook: repeatHeads(books, g) }).data), 1e-6, `per-kv codebooks ${causal}`);
    }
    // the causal state
    const qq = normalTensor([2, hq, S, d], 6, 0.7);
    for (const options of [{ method: 'exact' }, { method: 'favor', featureMap: fm }, { method: 'codebook', codebook: book }]) {
      const a = favor.createCausalState(options), b = favor.createCausalState(options);
      for (const [x, y] of [[0, 10], [10, 11], [11, S]]) {
        const ga = a.append(sliceRows(qq, x, y), sliceRows(k, x, y), sliceRows(v, x, y));
        const gb = b.append(sliceRows(qq, x, y), sliceRows(kr, x, y), sliceRows(vr, x, y));
        assertBelow(maxRelDiff(ga.data, gb.data), 1e-6, `${options.method} state`);
      }
      a.dispose(), b.dispose();
    }
    fm.dispose(), oprf.dispose(), sderf.dispose(), aderf.dispose();
  });
}

test('heads that do not divide, or other leading dims, are RangeErrors naming k', () => {
  const q = normalTensor([2, 4, 5, d], 1), v = normalTensor([2, 3, 5, d], 2);
  assertThrowsNamed(() => favor.exactAttention(q, normalTensor([2, 3, 5, d], 3), v), RangeError, /^exactAttention: k: .*\[2, 3\].*\[2, 4\].*multiple/);
  assertThrowsNamed(() => favor.attentionMatrix(q, normalTensor([1, 2, 5, d], 3)), RangeError, /^attentionMatrix: k: leading/);
  assertThrowsNamed(() => favor.exactAttention(q, normalTensor([2, 2, 5, d], 3), v), RangeError, /^exactAttention: v: leading/);
  assertThrowsNamed(() => favor.exactAttention(q, normalTensor([4, 5, d], 3), normalTensor([4, 5, d], 3)), RangeError, /^exactAttention: k: leading/);
  // the instance keeps working
  assert.deepEqual(favor.exactAttention(q, normalTensor([2, 2, 5, d], 3), normalTensor([2, 2, 5, d], 4)).dims, [2, 4, 5, d]);
});
