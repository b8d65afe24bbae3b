// The exact-attention kernel runs the same arithmetic in the SIMD and scalar wasm builds (4-float
// vector extensions lowered to wasm SIMD or to scalar code, no FMA, sequential sums), so the two
// builds return bit-identical outputs; shapes cover every tail of the kernel (queries past a
// strip of 8 and a block of 64, keys past a group of 4 and a block of 128, value columns past 8
// and 4), causal and cross attention.
import { before, test } from 'node:test';

import { loadFavor } from 'favor-attention';

import { SIMD_SUPPORTED, assertBitIdentical, normalTensor } from './helpers.mjs';


const builds = {};
before(async () => {
  builds.scalar = await loadFavor({ simd: false });
  if (SIMD_SUPPORTED) builds.simd = await loadFavor({ simd: 'fixed' });
});

test('SIMD and scalar builds give bit-identical exact attention', (t) => {
  if (!builds.simd) return t.skip('no wasm SIMD in this engine');
  let seed = 7000;
  for (const [L, S, d, dv] of [[1, 1, 1, 1], [9, 7, 3, 5], [65, 129, 64, 64], [130, 300, 17, 13], [200, 200, 64, 12]]) {
    for (const causal of L === S ? [false, true] : [false]) {
      const q = normalTensor([2, L, d], seed++), k = normalTensor([2, S, d], seed++), v = normalTensor([2, S, dv], seed++);
      const a = builds.simd.exactAttention(q, k, v, { causal });
      const b = builds.scalar.exactAttention(q, k, v, { causal });
      assertBitIdentical(a.data, b.data, `L=${L} S=${S} d=${d} dv=${dv} causal=${causal}`);
    }
  }
});
