// FAVOR#'s 'sderf' and 'aderf' kernels through the JS API: parameters from each call or fitted
// (fit: { q, k }), what a fitted map may do (causal states), where they meet OPRF, and that on
// anisotropic heads they approximate attention better than FAVOR+ and OPRF. The formulas
// themselves are checked against float64 and Monte Carlo in tests/native/test_dense_exponential.cpp.
import assert from 'node:assert/strict';
import { before, test } from 'node:test';

import { loadFavor } from 'favor-attention';

import { assertBelow, assertBitIdentical, normalTensor, rng, sliceRows } from './helpers.mjs';
import * as ref from './reference.mjs';

let favor;
before(async () => { favor = await loadFavor(); });

// Rows whose coordinate k has standard deviation size * 0.8^k (0.8^(d-1-k) reversed), plus a mean
// offset: an anisotropic, uncentred head like the trained models' sharp ones.
function anisotropic(rows, d, seed, size, offset = 0, reversed = false) {
  const g = rng(seed);
  const data = new Float32Array(rows * d);
  for (let i = 0; i < rows; i++) for (let k = 0; k < d; k++) data[i * d + k] = size * (g.normal() * 0.8 ** (reversed ? d - 1 - k : k) + offset);
  return { data, dims: [rows, d] };
}

test('sderf and aderf maps: m features, parameters from each call until fitted', () => {
  const q = anisotropic(30, 8, 1, 1), k = anisotropic(30, 8, 2, 1);
  for (const kernel of ['sderf', 'aderf']) {
    const map = favor.createFeatureMap({ dim: 8, features: 24, kernel, seed: 3 });
    assert.equal(map.kernel, kernel);
    assert.equal(map.numFeatures, 24);
    assert.equal(map.dataDependent, true);
    const fitted = favor.createFeatureMap({ dim: 8, features: 24, kernel, seed: 3, fit: { q, k } });
    assert.equal(fitted.dataDependent, false);
    // Fitted to exactly this call's q and k at the default scale: the parameters, and so the
    // output, are the bits of the map that computes them in the call.
    const v = normalTensor([30, 4], 4);
    assertBitIdentical(favor.favorAttention(q, k, v, { featureMap: fitted }).data,
      favor.favorAttention(q, k, v, { featureMap: map }).data, `${kernel}: fitted to the call's own q and k`);
    // Fitted elsewhere, the output differs.
    const other = favor.createFeatureMap({ dim: 8, features: 24, kernel, seed: 3, fit: { q: anisotropic(30, 8, 9, 0.3), k } });
    assert.ok(ref.maxRelError(favor.favorAttention(q, k, v, { featureMap: other }).data,
      favor.favorAttention(q, k, v, { featureMap: map }).data) > 1e-3);
    for (const m of [map, fitted, other]) m.dispose();
  }
  // 'oprf' fitted takes the samples' rho
  const oprf = favor.createFeatureMap({ dim: 8, features: 24, kernel: 'oprf', fit: { q, k, scale: 0.5 } });
  assertBelow(Math.abs(oprf.rho - 0.5 * ref.oprfRho(ref.projectionRows(q), ref.projectionRows(k))) / oprf.rho, 1e-6, 'oprf fit: rho of the samples');
  assert.equal(oprf.dataDependent, false);
  assert.equal(favor.createFeatureMap({ dim: 8, features: 4, kernel: 'oprf' }).dataDependent, true);
  assert.equal(favor.createFeatureMap({ dim: 8, features: 4 }).dataDependent, false);
});

test('where FAVOR# meets OPRF: equal query and key moments make aderf OPRF (to rounding)', () => {
  const x = anisotropic(200, 8, 5, 0.6, 0.2), v = normalTensor([200, 3], 6);
  const oprf = favor.createFeatureMap({ dim: 8, features: 32, kernel: 'oprf', seed: 7 });
  const aderf = favor.createFeatureMap({ dim: 8, features: 32, kernel: 'aderf', seed: 7 });
  // Psi = I to ~1e-7 (eigendecompositions in double): outputs agree to float rounding.
  assertBelow(ref.maxRelError(favor.favorAttention(x, x, v, { featureMap: aderf }).data,
    favor.favorAttention(x, x, v, { featureMap: oprf }).data), 1e-4, 'aderf with k = q');
});

test('a causal state needs a fitted map, and then continues like one causal call', () => {
  const L = 48, d = 8;
  const q = anisotropic(L, d, 11, 0.7, 0.1), k = anisotropic(L, d, 12, 0.5), v = normalTensor([L, 4], 13);
  for (const kernel of ['sderf', 'aderf']) {
    const loose = favor.createFeatureMap({ dim: d, features: 32, kernel });
    assert.throws(() => favor.createCausalState({ method: 'favor', featureMap: loose }), (e) => e instanceof RangeError && /featureMap.*not fitted/.test(e.message));
    const map = favor.createFeatureMap({ dim: d, features: 32, kernel, fit: { q, k } });
    const state = favor.createCausalState({ method: 'favor', featureMap: map });
    const outs = [];
    for (let i = 0; i < L; i += 16) outs.push(state.append(sliceRows(q, i, i + 16), sliceRows(k, i, i + 16), sliceRows(v, i, i + 16)));
    const got = new Float32Array(outs.flatMap((o) => Array.from(o.data)));
    const whole = favor.favorAttention(q, k, v, { featureMap: map, causal: true });
    // Chunked prefix sums against one pass: float32 reassociation only.
    assertBelow(ref.maxRelError(got, whole.data), 1e-5, `${kernel} state vs causal call`);
    state.dispose();
    map.dispose();
    loose.dispose();
  }
});

test('on anisotropic heads sderf and aderf approximate attention better than FAVOR+ and OPRF', () => {
  // d = 16, m = 64, mean row KL over 6 seeds. Queries and keys large along the same directions:
  // SDERF's per-direction coefficients help (KL 0.30 against OPRF's 0.61 and FAVOR+'s 0.75 when
  // written); along opposite directions, ADERF's balancing does (0.024 against OPRF's 0.28).
  const d = 16, L = 128;
  const meanKL = (q, k, kernel) => {
    const exact = favor.attentionMatrix(q, k, { causal: true });
    let sum = 0;
    for (let s = 0; s < 6; s++) {
      const map = favor.createFeatureMap({ dim: d, features: 64, kernel, seed: 100 + s });
      sum += favor.compare(exact, favor.favorAttentionMatrix(q, k, { featureMap: map, causal: true })).meanRowKL / 6;
      map.dispose();
    }
    return sum;
  };
  const q = anisotropic(L, d, 21, 2.2, 0.15);
  const same = anisotropic(L, d, 22, 2.2, 0.1), opposite = anisotropic(L, d, 22, 2.2, 0.1, true);
  const kl = Object.fromEntries(['positive', 'oprf', 'sderf'].map((kernel) => [kernel, meanKL(q, same, kernel)]));
  assert.ok(kl.sderf < 0.6 * kl.oprf, `sderf ${kl.sderf} vs oprf ${kl.oprf}`);
  assert.ok(kl.oprf < kl.positive, `oprf ${kl.oprf} vs positive ${kl.positive}`);
  const aderf = meanKL(q, opposite, 'aderf'), oprf = meanKL(q, opposite, 'oprf');
  assert.ok(aderf < 0.3 * oprf, `opposite directions: aderf ${aderf} vs oprf ${oprf}`);
});

test('grouped query heads: each head its own parameters, the output of its own call', () => {
  const d = 8, L = 20;
  const q = { data: new Float32Array([...anisotropic(L, d, 31, 0.6).data, ...anisotropic(L, d, 32, 1.2, 0.2).data]), dims: [2, L, d] };
  const k = { ...anisotropic(L, d, 33, 0.8), dims: [1, L, d] }, v = { ...normalTensor([L, 4], 34), dims: [1, L, 4] };
  for (const kernel of ['sderf', 'aderf']) {
    const map = favor.createFeatureMap({ dim: d, features: 16, kernel });
    const both = favor.favorAttention(q, k, v, { featureMap: map, causal: true });
    for (let h = 0; h < 2; h++) {
      const qh = { data: q.data.slice(h * L * d, (h + 1) * L * d), dims: [1, L, d] };
      assertBitIdentical(both.data.subarray(h * L * 4, (h + 1) * L * 4),
        favor.favorAttention(qh, k, v, { featureMap: map, causal: true }).data, `${kernel} head ${h}`);
    }
  }
});
