// FAVOR+ runs the same arithmetic in the SIMD and scalar wasm builds: its products go through the
// GEMM of gemm.hpp (4-float vector extensions lowered to wasm SIMD or to scalar code, sequential
// sums over k, no FMA) and its elementwise steps through vector_math.hpp, so the two builds return
// bit-identical outputs. Shapes cover the GEMM's tails (rows past a tile of 4, columns past 8 and
// 4, features past a strip), every kernel, bidirectional and causal, chunks and cross attention.
import { before, test } from 'node:test';

import { loadFavor } from 'favor-attention';

import { SIMD_SUPPORTED, assertBitIdentical, normalTensor } from './helpers.mjs';


const builds = {};
before(async () => {
  builds.scalar = await loadFavor({ simd: false, threads: 1 });
  if (SIMD_SUPPORTED) builds.simd = await loadFavor({ simd: 'fixed', threads: 1 });
});

test('SIMD and scalar builds give bit-identical FAVOR+ attention', (t) => {
  if (!builds.simd) return t.skip('no wasm SIMD in this engine');
  let seed = 9100;
  const cases = [
    [1, 1, 1, 1, 1, 'positive'], [9, 7, 3, 5, 6, 'positive'], [130, 130, 64, 64, 256, 'positive'],
    [300, 300, 17, 13, 37, 'hyperbolic'], [77, 77, 33, 9, 20, 'trigonometric'], [200, 150, 64, 12, 64, 'relu'],
    [257, 257, 64, 64, 100, 'oprf'], [1030, 1030, 64, 64, 256, 'positive'],
    // FAVOR#: its parameters (moments by the GEMM, the eigensolver's scalar double loops)
    [120, 120, 32, 16, 64, 'sderf'], [90, 70, 16, 8, 48, 'aderf'],
  ];
  for (const [L, S, d, dv, m, kernel] of cases) {
    for (const causal of L === S ? [false, true] : [false]) {
      for (const chunk of [undefined, 5]) {
        const q = normalTensor([2, L, d], seed++, 0.5), k = normalTensor([2, S, d], seed++, 0.5), v = normalTensor([2, S, dv], seed++);
        const what = `L=${L} S=${S} d=${d} dv=${dv} m=${m} ${kernel} causal=${causal} chunk=${chunk}`;
        const options = { dim: d, features: m, kernel, seed: seed++ };
        const fa = builds.simd.createFeatureMap(options), fb = builds.scalar.createFeatureMap(options);
        const a = builds.simd.favorAttention(q, k, v, { featureMap: fa, causal, chunk });
        const b = builds.scalar.favorAttention(q, k, v, { featureMap: fb, causal, chunk });
        fa.dispose(), fb.dispose();
        assertBitIdentical(a.data, b.data, what);
      }
    }
  }
});

// A map sampled 'structured' projects by fast Walsh-Hadamard transforms (kernels/hadamard.cpp):
// rows interleaved in the SIMD lanes, the scalar build running the same butterflies in the same
// order, so again the same bits. d a power of two and not (padded to p), rows past a batch of 4.
test('SIMD and scalar builds give bit-identical FAVOR+ attention with structured (fast transform) projections', (t) => {
  if (!builds.simd) return t.skip('no wasm SIMD in this engine');
  let seed = 9300;
  for (const [L, d, m, kernel] of [[130, 64, 256, 'positive'], [37, 12, 30, 'hyperbolic'], [21, 5, 11, 'trigonometric'],
    [66, 16, 40, 'relu'], [45, 64, 100, 'oprf'], [3, 1, 2, 'positive']]) {
    for (const causal of [false, true]) {
      const q = normalTensor([2, L, d], seed++, 0.5), k = normalTensor([2, L, d], seed++, 0.5), v = normalTensor([2, L, 7], seed++);
      const options = { dim: d, features: m, kernel, sampling: 'structured', seed: seed++ };
      const fa = builds.simd.createFeatureMap(options), fb = builds.scalar.createFeatureMap(options);
      const a = builds.simd.favorAttention(q, k, v, { featureMap: fa, causal });
      const b = builds.scalar.favorAttention(q, k, v, { featureMap: fb, causal });
      fa.dispose(), fb.dispose();
      assertBitIdentical(a.data, b.data, `L=${L} d=${d} m=${m} ${kernel} causal=${causal}`);
    }
  }
});
