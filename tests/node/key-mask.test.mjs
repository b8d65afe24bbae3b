// keyMask on every attention call and on append: a masked key is as if it were absent (compared
// with calls on the sequence without it, and with the float64 reference), masks broadcast
// against k's leading dims by numpy rules, and a query that sees no unmasked key gets zeros.
//
// Tolerances: removing keys changes only which float32 terms are summed, so outputs agree to
// float rounding (1e-5 of the largest entry; exact attention, whose kernel streams the same
// keys in the same order, to 1e-6); against the float64 reference, 1e-4 as in favor.test.mjs.
import assert from 'node:assert/strict';
import { before, test } from 'node:test';

import { loadFavor } from 'favor-attention';

import { assertBelow, maxRelDiff, normalTensor, rng, sliceRows } from './helpers.mjs';
import * as ref from './reference.mjs';

let favor;
before(async () => {
  favor = await loadFavor({ threads: 1 });
});

const d = 8;

function randomMask(dims, seed, p = 0.35) {
  const g = rng(seed), n = dims.reduce((a, b) => a * b, 1);
  return { data: Uint8Array.from({ length: n }, () => (g.uniform() < p ? 0 : 1)), dims };
}

// The keys (rows of k, v) of one head whose mask byte is 1.
function keep(t, mask) {
  const cols = t.dims[t.dims.length - 1], rows = [];
  for (let j = 0; j < mask.length; j++) if (mask[j]) rows.push(...t.data.subarray(j * cols, (j + 1) * cols));
  return { data: Float32Array.from(rows), dims: [rows.length / cols, cols] };
}

test('bidirectional: a masked key is as if absent (every function, one head)', () => {
  const L = 12, S = 30;
  const q = normalTensor([L, d], 1, 0.8), k = normalTensor([S, d], 2, 0.8), v = normalTensor([S, 5], 3);
  const mask = randomMask([S], 4);
  const kk = keep(k, mask.data), vv = keep(v, mask.data);
  const fm = favor.createFeatureMap({ dim: d, features: 16, seed: 1 });
  const book = favor.randomCodebook({ clusters: 5, dim: d, seed: 2 });
  const pairs = [
    [favor.exactAttention(q, k, v, { keyMask: mask }), favor.exactAttention(q, kk, vv), 1e-6, 'exactAttention'],
    [favor.favorAttention(q, k, v, { featureMap: fm, keyMask: mask }), favor.favorAttention(q, kk, vv, { featureMap: fm }), 1e-5, 'favorAttention'],
    [favor.codebookAttention(q, k, v, { codebook: book, keyMask: mask }), favor.codebookAttention(q, kk, vv, { codebook: book }), 1e-5, 'codebookAttention'],
  ];
  for (const [got, want, tol, what] of pairs) assertBelow(maxRelDiff(got.data, want.data), tol, what);
  // matrices: the masked columns are 0, the others the matrix of the kept keys
  const matrices = [
    [favor.attentionMatrix(q, k, { keyMask: mask }), favor.attentionMatrix(q, kk), 'attentionMatrix'],
    [favor.favorAttentionMatrix(q, k, { featureMap: fm, keyMask: mask }), favor.favorAttentionMatrix(q, kk, { featureMap: fm }), 'favorAttentionMatrix'],
    [favor.codebookAttentionMatrix(q, k, { codebook: book, keyMask: mask }), favor.codebookAttentionMatrix(q, kk, { codebook: book }), 'codebookAttentionMatrix'],
  ];
  const kept = kk.dims[0];
  for (const [got, want, what] of matrices) {
    const packed = new Float32Array(L * kept);
    for (let i = 0; i < L; i++) {
      let c = 0;
      for (let j = 0; j < S; j++) {
        if (mask.data[j]) packed[i * kept + c++] = got.data[i * S + j];
        else assert.equal(got.data[i * S + j], 0, `${what}: masked column ${j}`);
      }
    }
    assertBelow(maxRelDiff(packed, want.data), 1e-5, what);
  }
  fm.dispose();
});

test('causal with masks, bottom-right: against the float64 reference', () => {
  const H = 2, L = 20, S = 26;
  const q = normalTensor([H, L, d], 10, 0.8), k = normalTensor([H, S, d], 11, 0.8), v = normalTensor([H, S, 4], 12);
  const mask = randomMask([H, S], 13, 0.4);
  mask.data.fill(0, 0, 9);  // head 0: queries 0..2 (positions 6..8) see no key
  const maskOf = (h) => mask.data.subarray(h * S, (h + 1) * S);
  const fm = favor.createFeatureMap({ dim: d, features: 16, kernel: 'hyperbolic', seed: 3 });
  const exact = favor.exactAttention(q, k, v, { causal: true, keyMask: mask });
  assertBelow(maxRelDiff(exact.data, ref.exactAttention(q, k, v, { causal: true, maskOf }).data), 1e-5, 'exact');
  const A = favor.attentionMatrix(q, k, { causal: true, keyMask: mask });
  assertBelow(maxRelDiff(A.data, ref.attentionMatrix(q, k, { causal: true, maskOf }).data), 1e-5, 'attentionMatrix');
  const out = favor.favorAttention(q, k, v, { featureMap: fm, causal: true, keyMask: mask });
  const want = ref.favorAttention('hyperbolic', fm.projection, q, k, v, { causal: true, maskOf });
  assertBelow(maxRelDiff(out.data, want.data), 1e-4, 'favor');
  const Ahat = favor.favorAttentionMatrix(q, k, { featureMap: fm, causal: true, keyMask: mask });
  assertBelow(maxRelDiff(Ahat.data, ref.favorAttentionMatrix('hyperbolic', fm.projection, q, k, { causal: true, maskOf }).data), 1e-4, 'favor matrix');
  // rows with no visible key are zeros, never NaN, in every function
  const book = favor.randomCodebook({ clusters: 4, dim: d });
  for (const [t, cols, what] of [[exact, 4, 'exact'], [out, 4, 'favor'], [A, S, 'matrix'], [Ahat, S, 'favor matrix'],
    [favor.codebookAttention(q, k, v, { codebook: book, causal: true, keyMask: mask }), 4, 'codebook'],
    [favor.codebookAttentionMatrix(q, k, { codebook: book, causal: true, keyMask: mask }), S, 'codebook matrix']]) {
    assert.ok(t.data.every(Number.isFinite), what);
    for (let i = 0; i < 3; i++) for (let c = 0; c < cols; c++) assert.equal(t.data[i * cols + c], 0, `${what}: row ${i}`);
    assert.ok(t.data.slice(3 * cols, 4 * cols).some((x) => x !== 0), `${what}: row 3 sees key 9`);
  }
  fm.dispose();
});

test('every kernel: a fully masked sequence gives zeros; a causal masked call equals per-row calls on the kept keys', () => {
  const L = 16;
  const q = normalTensor([L, d], 20, 0.5), k = normalTensor([L, d], 21, 0.5), v = normalTensor([L, 3], 22);
  const none = { data: new Uint8Array(L), dims: [L] };
  const mask = randomMask([L], 23);
  for (const kernel of ['positive', 'hyperbolic', 'trigonometric', 'relu', 'oprf', 'sderf', 'aderf']) {
    const fm = favor.createFeatureMap({ dim: d, features: 12, kernel, seed: 4 });
    for (const causal of [false, true]) {
      const z = favor.favorAttention(q, k, v, { featureMap: fm, causal, keyMask: none });
      assert.ok(z.data.every((x) => x === 0), `${kernel}, causal ${causal}: all masked -> zeros`);
    }
    // Query i over the kept keys j <= i, as its own bidirectional call (OPRF, FAVOR#: parameters
    // from all keys in the masked call, so compare those kernels with fixed parameters).
    const fixed = kernel === 'oprf' ? { rho: 1.5 } : kernel === 'sderf' || kernel === 'aderf' ? { fit: { q, k } } : null;
    const map = fixed ? favor.createFeatureMap({ dim: d, features: 12, kernel, seed: 4, ...fixed }) : fm;
    const got = favor.favorAttention(q, k, v, { featureMap: map, causal: true, keyMask: mask, chunk: 5 });
    for (let i = 0; i < L; i++) {
      const prefix = mask.data.subarray(0, i + 1);
      const row = got.data.subarray(i * 3, i * 3 + 3);
      if (!prefix.some((x) => x)) {
        assert.ok(row.every((x) => x === 0), `${kernel} row ${i}`);
        continue;
      }
      const want = favor.favorAttention(sliceRows(q, i, i + 1), keep(sliceRows(k, 0, i + 1), prefix), keep(sliceRows(v, 0, i + 1), prefix), { featureMap: map });
      assertBelow(maxRelDiff(row, want.data), kernel === 'trigonometric' ? 1e-4 : 1e-5, `${kernel} row ${i}`);
    }
    if (map !== fm) map.dispose();
    fm.dispose();
  }
});

test('masks broadcast against k leading dims: [S], [B, 1, S], [B, H, S] and [1, S]', () => {
  const B = 2, H = 3, L = 7, S = 11;
  const q = normalTensor([B, H, L, d], 30), k = normalTensor([B, H, S, d], 31), v = normalTensor([B, H, S, d], 32);
  const full = (m) => {  // the mask repeated to [B, H, S] by hand
    const data = new Uint8Array(B * H * S);
    const md = m.dims, lead = md.slice(0, -1);
    for (let b = 0; b < B; b++) for (let h = 0; h < H; h++) {
      const idx = [b, h].slice(2 - lead.length).map((x, i) => (lead[i] === 1 ? 0 : x));
      let off = 0;
      for (let i = 0; i < idx.length; i++) off = off * lead[i] + idx[i];
      data.set(m.data.subarray(off * S, off * S + S), (b * H + h) * S);
    }
    return { data, dims: [B, H, S] };
  };
  for (const dims of [[S], [1, S], [B, 1, S], [B, H, S], [1, H, S]]) {
    const m = randomMask(dims, 33 + dims.length);
    const a = favor.exactAttention(q, k, v, { keyMask: m }), b = favor.exactAttention(q, k, v, { keyMask: full(m) });
    assert.deepEqual(Array.from(a.data), Array.from(b.data), `dims [${dims}]`);
  }
});

test('append with a key mask: the masked positions are absent for every later query', () => {
  const H = 2, L = 40;
  const q = normalTensor([H, L, d], 40, 0.7), k = normalTensor([H, L, d], 41, 0.7), v = normalTensor([H, L, d], 42);
  const mask = randomMask([H, L], 43);
  const fm = favor.createFeatureMap({ dim: d, features: 16, seed: 5 });
  const book = favor.randomCodebook({ clusters: 6, dim: d });
  for (const [options, whole] of [
    [{ method: 'exact' }, favor.exactAttention(q, k, v, { causal: true, keyMask: mask })],
    [{ method: 'favor', featureMap: fm }, favor.favorAttention(q, k, v, { featureMap: fm, causal: true, keyMask: mask })],
    [{ method: 'codebook', codebook: book }, favor.codebookAttention(q, k, v, { codebook: book, causal: true, keyMask: mask })]]) {
    const state = favor.createCausalState(options);
    const outs = [];
    for (const [a, b] of [[0, 13], [13, 14], [14, 31], [31, 40]]) {
      const m = new Uint8Array(H * (b - a));
      for (let h = 0; h < H; h++) m.set(mask.data.subarray(h * L + a, h * L + b), h * (b - a));
      outs.push(state.append(sliceRows(q, a, b), sliceRows(k, a, b), sliceRows(v, a, b), { keyMask: { data: m, dims: [H, b - a] } }));
    }
    const got = new Float32Array(whole.data.length);
    let at = 0;
    for (const o of outs) {
      const n = o.dims[1];
      for (let h = 0; h < H; h++) got.set(o.data.subarray(h * n * d, (h + 1) * n * d), (h * L + at) * d);
      at += n;
    }
    assertBelow(maxRelDiff(got, whole.data), 2e-5, options.method);
    state.dispose();
  }
  fm.dispose();
});

// Left padding: a mask hiding whole key blocks (exact attention streams keys in blocks of 128)
// before the first attending key. The queries have then seen no key for several blocks: their
// running max is -inf there, which must give weight 0, not exp(-inf + inf) = NaN (exactAttention
// used to report such inputs as "not finite"). Against the float64 reference, and appended in
// pieces to an exact causal state.
test('a mask hiding whole key blocks before the first attending key (left padding): as if absent', () => {
  const H = 2, L = 420, pad = 300;
  const q = normalTensor([H, L, d], 50, 0.8), k = normalTensor([H, L, d], 51, 0.8), v = normalTensor([H, L, 4], 52);
  const mask = { data: new Uint8Array(H * L), dims: [H, L] };
  for (let h = 0; h < H; h++) for (let j = pad - 40 * h; j < L; j++) mask.data[h * L + j] = j % 9 === 4 ? 0 : 1;
  const maskOf = (h) => mask.data.subarray(h * L, (h + 1) * L);
  const fm = favor.createFeatureMap({ dim: d, features: 16, seed: 6 });
  for (const causal of [false, true]) {
    const exact = favor.exactAttention(q, k, v, { causal, keyMask: mask });
    assertBelow(maxRelDiff(exact.data, ref.exactAttention(q, k, v, { causal, maskOf }).data), 1e-5, `exact, causal ${causal}`);
    const out = favor.favorAttention(q, k, v, { featureMap: fm, causal, keyMask: mask });
    assertBelow(maxRelDiff(out.data, ref.favorAttention('positive', fm.projection, q, k, v, { causal, maskOf }).data), 1e-4,
      `favor, causal ${causal}`);
    if (causal) {  // rows before a head's first kept key see nothing: zeros
      for (let h = 0; h < H; h++)
        for (const t of [exact, out]) assert.ok(t.data.subarray(h * L * 4, (h * L + pad - 40 * h) * 4).every((x) => x === 0));
    }
  }
  const whole = favor.exactAttention(q, k, v, { causal: true, keyMask: mask });
  const state = favor.createCausalState({ method: 'exact' });
  const got = new Float32Array(whole.data.length);
  for (const [a, b] of [[0, 290], [290, 291], [291, L]]) {
    const m = new Uint8Array(H * (b - a));
    for (let h = 0; h < H; h++) m.set(mask.data.subarray(h * L + a, h * L + b), h * (b - a));
    const o = state.append(sliceRows(q, a, b), sliceRows(k, a, b), sliceRows(v, a, b), { keyMask: { data: m, dims: [H, b - a] } });
    for (let h = 0; h < H; h++) got.set(o.data.subarray(h * (b - a) * 4, (h + 1) * (b - a) * 4), (h * L + a) * 4);
  }
  // Masked keys leave the state's cache, so its key blocks fall elsewhere than in one call: float
  // rounding, not bits (as in the append test above).
  assertBelow(maxRelDiff(got, whole.data), 2e-5, 'exact state appended in pieces');
  state.dispose();
  fm.dispose();
});
