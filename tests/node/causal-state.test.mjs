// createCausalState: appending a sequence in any split gives the outputs of one causal call on the
// whole sequence (exact, every FAVOR+ kernel, hard/soft/gaussian codebooks; one head, several,
// grouped-query heads; inputs of large norm), and bottom-right causal calls (L < S) agree with
// the float64 reference and with the state.
//
// Tolerance 2e-5 of the largest output entry: a split changes only where the carried sums are
// cut (the same float32 terms summed in another grouping, and the carried state rescaled at
// other points), ~1e-6 relative per feature sum; a wrong mask, a lost or doubled key, or a
// shift not carried moves outputs by >= 1e-2. The exact state computes the same rows over the
// same keys as one call, and is checked bit for bit.
import assert from 'node:assert/strict';
import { before, test } from 'node:test';

import { loadFavor } from 'favor-attention';

import { assertBelow, assertBitIdentical, concatRows, maxRelDiff, normalTensor, rng, sliceRows } from './helpers.mjs';
import * as ref from './reference.mjs';

const TOL = 2e-5;
let favor;
before(async () => {
  favor = await loadFavor({ threads: 1 });
});

function splits(L, seed) {
  const g = rng(seed), pieces = [];
  for (let a = 0; a < L;) {
    const n = Math.min(L - a, 1 + Math.floor(g.uniform() * 23));
    pieces.push(n);
    a += n;
  }
  return { 'one row at a time': Array(L).fill(1), 'random pieces': pieces, 'all at once': [L], 'prefill then decode': [L - 5, 1, 1, 1, 1, 1] };
}

function runState(options, q, k, v, pieces) {
  const state = favor.createCausalState(options);
  const outs = [];
  let a = 0;
  for (const n of pieces) {
    outs.push(state.append(sliceRows(q, a, a + n), sliceRows(k, a, a + n), sliceRows(v, a, a + n)));
    a += n;
  }
  assert.equal(state.length, a);
  state.dispose();
  return concatRows(outs);
}

const L = 70, d = 16;
const shapes = {
  'one head': { q: [L, d], kv: [L, d] },
  'several heads': { q: [2, 3, L, d], kv: [2, 3, L, d] },
  'grouped-query heads': { q: [2, 4, L, d], kv: [2, 2, L, d] },
};

function inputs(shape, seed, std) {
  return { q: normalTensor(shape.q, seed, std), k: normalTensor(shape.kv, seed + 1, std), v: normalTensor(shape.kv, seed + 2) };
}

test('exact state: any split gives the one-shot causal outputs bit for bit', () => {
  for (const [name, shape] of Object.entries(shapes)) {
    const { q, k, v } = inputs(shape, 10, 1);
    const whole = favor.exactAttention(q, k, v, { causal: true });
    for (const [split, pieces] of Object.entries(splits(L, 1))) {
      assertBitIdentical(runState({ method: 'exact' }, q, k, v, pieces).data, whole.data, `${name}, ${split}`);
    }
  }
});

const KERNELS = ['positive', 'hyperbolic', 'trigonometric', 'relu', 'oprf', 'sderf', 'aderf'];

test('favor state: simplex and structured projections, any split, equal one causal favorAttention call', () => {
  // d = 16, m = 24: a full block and a cut one of each mode.
  for (const sampling of ['simplex', 'structured']) {
    const fm = favor.createFeatureMap({ dim: d, features: 24, kernel: 'positive', sampling, seed: 8 });
    assert.equal(fm.sampling, sampling);
    for (const [name, shape] of Object.entries(shapes)) {
      const { q, k, v } = inputs(shape, 40, 0.7);
      const whole = favor.favorAttention(q, k, v, { featureMap: fm, causal: true });
      for (const [split, pieces] of Object.entries(splits(L, 4))) {
        const got = runState({ method: 'favor', featureMap: fm }, q, k, v, pieces);
        assertBelow(maxRelDiff(got.data, whole.data), TOL, `${sampling}, ${name}, ${split}`);
      }
    }
    // after a redraw the state still follows the one-call result with the new W
    fm.redraw(9);
    const { q, k, v } = inputs(shapes['one head'], 41, 0.7);
    const whole = favor.favorAttention(q, k, v, { featureMap: fm, causal: true });
    assertBelow(maxRelDiff(runState({ method: 'favor', featureMap: fm }, q, k, v, splits(L, 5)['random pieces']).data, whole.data), TOL, `${sampling} redrawn`);
    fm.dispose();
  }
});

test('favor state: every kernel, any split, equals one causal favorAttention call', () => {
  for (const kernel of KERNELS) {
    const fit = { q: normalTensor([16, d], 5, 0.7), k: normalTensor([16, d], 6, 0.5) };
    const fm = favor.createFeatureMap({ dim: d, features: 24, kernel, seed: 3, ...(kernel === 'oprf' && { rho: 2.5 }),
      ...((kernel === 'sderf' || kernel === 'aderf') && { fit }) });
    for (const [name, shape] of Object.entries(shapes)) {
      const { q, k, v } = inputs(shape, 20, kernel === 'trigonometric' ? 0.3 : 0.7);
      const whole = favor.favorAttention(q, k, v, { featureMap: fm, causal: true });
      for (const [split, pieces] of Object.entries(splits(L, 2))) {
        const got = runState({ method: 'favor', featureMap: fm }, q, k, v, pieces);
        assertBelow(maxRelDiff(got.data, whole.data), TOL, `${kernel}, ${name}, ${split}`);
      }
    }
    fm.dispose();
  }
});

test('favor state at large input norms: the stabilizing shifts carry across appends (no overflow, no bias)', () => {
  // std 4 at d = 16: |q~|^2 ~ 64, features span e^+-60 and more; keys later in the sequence are
  // larger still, so the per-feature shift grows across appends and the state must be rescaled.
  const fm = favor.createFeatureMap({ dim: d, features: 32, seed: 5 });
  const shape = shapes['several heads'];
  const { q, k, v } = inputs(shape, 30, 4);
  for (let i = 0; i < k.data.length; i++) k.data[i] *= 1 + (Math.floor(i / d) % L) / 20;
  const whole = favor.favorAttention(q, k, v, { featureMap: fm, causal: true });
  assert.ok(whole.data.every(Number.isFinite));
  for (const [split, pieces] of Object.entries(splits(L, 3))) {
    const got = runState({ method: 'favor', featureMap: fm }, q, k, v, pieces);
    assert.ok(got.data.every(Number.isFinite), split);
    assertBelow(maxRelDiff(got.data, whole.data), TOL, `large norm, ${split}`);
  }
  // and both are the float64 estimator (small enough m and L to evaluate in double)
  const one = inputs(shapes['one head'], 31, 2.5);
  const want = ref.favorAttention('positive', fm.projection, one.q, one.k, one.v, { causal: true });
  const got = runState({ method: 'favor', featureMap: fm }, one.q, one.k, one.v, splits(L, 4)['random pieces']);
  assertBelow(maxRelDiff(got.data, want.data), 1e-4, 'large norm vs float64');
  fm.dispose();
});

test('a decode step that fails leaves the state as it was, bit for bit (favor and codebook, the last key/value head failing)', () => {
  // A decode step works on the state in place: it rescales the features whose shift the new key
  // raises, and adds the key once every head has succeeded. Here the first key/value head
  // succeeds (its rows rescaled: its new key is 1.5x the earlier ones) and the second one's
  // values overflow the output, so the append throws; afterwards the state must continue exactly
  // as a twin that never saw the failed step.
  const fm = favor.createFeatureMap({ dim: d, features: 32, seed: 6 });
  const codebook = favor.randomCodebook({ clusters: 6, dim: d, seed: 3 });
  const shape = { q: [4, 20, d], kv: [2, 20, d] };
  for (const options of [{ method: 'favor', featureMap: fm }, { method: 'codebook', codebook, assignment: 'soft' }]) {
    const { q, k, v } = inputs(shape, 50, 1.5);
    const step = (t) => [sliceRows(q, t, t + 1), sliceRows(k, t, t + 1), sliceRows(v, t, t + 1)];
    const [tried, twin] = [favor.createCausalState(options), favor.createCausalState(options)];
    for (const state of [tried, twin]) state.append(sliceRows(q, 0, 12), sliceRows(k, 0, 12), sliceRows(v, 0, 12));
    for (let t = 12; t < 20; t++) {
      const [qt, kt, vt] = step(t);
      if (t % 3 === 0) {
        // The second key/value head's queries are too large for float32 (their squared norms
        // overflow): it fails once the first head is done and its own rows are rescaled.
        const bigger = { data: kt.data.map((x) => 1.5 * x), dims: kt.dims };
        const huge = { data: qt.data.map((x, i) => (i < 2 * d ? x : 3e38)), dims: qt.dims };
        assert.throws(() => tried.append(huge, bigger, vt), { name: 'RangeError', message: /\bq\b.*(overflow|too large)/ }, `${options.method} t = ${t}`);
        assert.equal(tried.length, t, 'the failed step does not count');
      }
      assertBitIdentical(tried.append(qt, kt, vt).data, twin.append(qt, kt, vt).data, `${options.method} t = ${t}`);
    }
    tried.dispose(), twin.dispose();
  }
  fm.dispose();
});

test('codebook state: hard, soft and gaussian, shared and per key/value head codebooks', () => {
  for (const [name, shape] of Object.entries(shapes)) {
    const { q, k, v } = inputs(shape, 40, 1);
    const kvHeads = shape.kv.slice(0, -2);
    const books = { shared: favor.randomCodebook({ clusters: 6, dim: d, seed: 1 }),
      'per key/value head': favor.kmeans(k, { clusters: 6, seed: 2 }) };
    for (const [bookName, codebook] of Object.entries(books)) {
      if (bookName !== 'shared') assert.deepEqual(codebook.dims.slice(0, -2), kvHeads);
      for (const assignment of ['hard', 'soft', 'gaussian']) {
        const options = { codebook, assignment, temperature: 0.7 };
        const whole = favor.codebookAttention(q, k, v, { ...options, causal: true });
        for (const [split, pieces] of Object.entries(splits(L, 5))) {
          const got = runState({ method: 'codebook', ...options }, q, k, v, pieces);
          assertBelow(maxRelDiff(got.data, whole.data), TOL, `${name}, ${bookName}, ${assignment}, ${split}`);
        }
      }
    }
  }
});

test('bottom-right causal (L < S): the last L positions, against float64 and against the state', () => {
  const S = 40, Lq = 9;
  const q = normalTensor([2, Lq, d], 50, 0.7), k = normalTensor([2, S, d], 51, 0.7), v = normalTensor([2, S, 5], 52);
  const fm = favor.createFeatureMap({ dim: d, features: 24, seed: 6 });
  const exact = favor.exactAttention(q, k, v, { causal: true });
  assertBelow(maxRelDiff(exact.data, ref.exactAttention(q, k, v, { causal: true }).data), 1e-5, 'exact vs float64');
  const A = favor.attentionMatrix(q, k, { causal: true });
  assertBelow(maxRelDiff(A.data, ref.attentionMatrix(q, k, { causal: true }).data), 1e-5, 'matrix vs float64');
  assert.equal(A.data[S - Lq + 1], 0, 'query 0 does not see key S - L + 1');
  const approx = favor.favorAttention(q, k, v, { featureMap: fm, causal: true });
  assertBelow(maxRelDiff(approx.data, ref.favorAttention('positive', fm.projection, q, k, v, { causal: true }).data), 1e-4, 'favor vs float64');
  const Ahat = favor.favorAttentionMatrix(q, k, { featureMap: fm, causal: true });
  assertBelow(maxRelDiff(Ahat.data, ref.favorAttentionMatrix('positive', fm.projection, q, k, { causal: true }).data), 1e-4, 'favor matrix vs float64');
  const book = favor.randomCodebook({ clusters: 5, dim: d });
  const cb = favor.codebookAttention(q, k, v, { codebook: book, causal: true });
  // A chunked prefill against a state: the state holds the first S - L keys (their queries are
  // arbitrary), then the L queries arrive with their keys.
  const qAll = concatRows([normalTensor([2, S - Lq, d], 53), q]);
  for (const [options, want, what] of [[{ method: 'exact' }, exact, 'exact'], [{ method: 'favor', featureMap: fm }, approx, 'favor'],
    [{ method: 'codebook', codebook: book }, cb, 'codebook']]) {
    const state = favor.createCausalState(options);
    state.append(sliceRows(qAll, 0, S - Lq), sliceRows(k, 0, S - Lq), sliceRows(v, 0, S - Lq));
    const got = state.append(q, sliceRows(k, S - Lq, S), sliceRows(v, S - Lq, S));
    assertBelow(maxRelDiff(got.data, want.data), TOL, `${what}: state = bottom-right call`);
    state.dispose();
  }
  fm.dispose();
});

test('state memory: exact grows with the length, favor and codebook do not; reset forgets', () => {
  const fm = favor.createFeatureMap({ dim: d, features: 32, seed: 1 });
  const book = favor.randomCodebook({ clusters: 8, dim: d });
  const states = { exact: favor.createCausalState({ method: 'exact' }), favor: favor.createCausalState({ method: 'favor', featureMap: fm }),
    codebook: favor.createCausalState({ method: 'codebook', codebook: book }) };
  const sizes = {};
  const step = normalTensor([4, 1, d], 60);
  for (const [name, state] of Object.entries(states)) {
    sizes[name] = [];
    for (let t = 0; t < 3000; t++) {
      state.append(step, step, step);
      if (t === 99 || t === 2999) sizes[name].push(state.stateBytes);
    }
    assert.equal(state.length, 3000);
  }
  assert.equal(sizes.favor[0], sizes.favor[1], 'favor: same bytes at 100 and 3000 positions');
  assert.equal(sizes.codebook[0], sizes.codebook[1], 'codebook: same bytes at 100 and 3000 positions');
  // exact: at least (d + dv) floats per position and head
  assert.ok(sizes.exact[1] >= 3000 * 4 * 2 * d * 4, `exact holds ${sizes.exact[1]} bytes`);
  assert.ok(sizes.exact[1] > 10 * sizes.exact[0]);
  // favor: M x dv + 2 M floats per head, twice (the state and where the next append writes),
  // plus its copy of the map: independent of the length
  assert.ok(sizes.favor[0] <= 4 * (2 * 4 * (32 * d + 64) + 2 * 32 * d), `favor holds ${sizes.favor[0]} bytes`);
  for (const state of Object.values(states)) {
    state.reset();
    assert.equal(state.length, 0);
    // new leading dims are accepted after a reset
    const out = state.append(normalTensor([2, 3, d], 61), normalTensor([2, 3, d], 62), normalTensor([2, 3, d], 63));
    assert.deepEqual(out.dims, [2, 3, d]);
    state.dispose();
    assert.equal(state.disposed, true);
  }
  fm.dispose();
});

test('a state copies its feature map: redrawing or disposing the map later does not change it', () => {
  const fm = favor.createFeatureMap({ dim: d, features: 16, seed: 9 });
  const { q, k, v } = inputs(shapes['one head'], 70, 0.7);
  const whole = favor.favorAttention(q, k, v, { featureMap: fm, causal: true });
  const state = favor.createCausalState({ method: 'favor', featureMap: fm });
  const first = state.append(sliceRows(q, 0, 30), sliceRows(k, 0, 30), sliceRows(v, 0, 30));
  fm.redraw(10);
  fm.dispose();
  const rest = state.append(sliceRows(q, 30, L), sliceRows(k, 30, L), sliceRows(v, 30, L));
  assertBelow(maxRelDiff(concatRows([first, rest]).data, whole.data), TOL, 'after redraw and dispose');
  state.dispose();
});

// ---- exact state with a sliding window ----

// The mask [..., Hkv, L] of positions [a, b).
function sliceMask(mask, a, b) {
  const L = mask.dims[mask.dims.length - 1], heads = mask.data.length / L;
  const data = new Uint8Array(heads * (b - a));
  for (let h = 0; h < heads; h++) data.set(mask.data.subarray(h * L + a, h * L + b), h * (b - a));
  return { data, dims: [...mask.dims.slice(0, -1), b - a] };
}

function runMasked(options, q, k, v, pieces, mask) {
  const state = favor.createCausalState(options);
  const outs = [];
  let a = 0;
  for (const n of pieces) {
    const s = (t) => sliceRows(t, a, a + n);
    outs.push(state.append(s(q), s(k), s(v), mask ? { keyMask: sliceMask(mask, a, a + n) } : undefined));
    a += n;
  }
  assert.equal(state.length, a);
  state.dispose();
  return concatRows(outs);
}

// Every 4th key of each key/value head masked, and a run of 9 in the last one; its first 3 too
// (its first queries see no key: zeros).
function windowMask(kvDims) {
  const heads = kvDims.slice(0, -2).reduce((a, b) => a * b, 1);
  const data = new Uint8Array(heads * L).fill(1);
  for (let i = 0; i < data.length; i += 4) data[i] = 0;
  const last = (heads - 1) * L;
  data.fill(0, last + 30, last + 39).fill(0, last, last + 3);
  return { data, dims: [...kvDims.slice(0, -2), L] };
}

// Every shape, window and split, with and without the key mask: a state made with
// options(window) against reference(q, k, v, window, maskOf), which differs from unwindowed(q, k, v)
// where no key is masked (the window matters), within tol.
function checkWindows({ seed, splitSeed, windows, options, reference, unwindowed, tol }) {
  for (const [name, shape] of Object.entries(shapes)) {
    const { q, k, v } = inputs(shape, seed, 0.8);
    const mask = windowMask(shape.kv);
    for (const window of windows) {
      for (const masked of [false, true]) {
        const m = masked ? mask : undefined;
        const want = reference(q, k, v, window, (h) => (m ? m.data.subarray(h * L, (h + 1) * L) : undefined));
        if (!masked) assert.ok(maxRelDiff(want.data, unwindowed(q, k, v).data) > 1e-2, `${name}, window ${window}: the window changes the outputs`);
        for (const [split, pieces] of Object.entries(splits(L, splitSeed))) {
          const got = runMasked(options(window), q, k, v, pieces, m);
          assertBelow(maxRelDiff(got.data, want.data), tol, `${name}, window ${window}, masked ${masked}, ${split}`);
        }
      }
    }
  }
}

test('exact state with a window: any split matches the float64 sliding window (key masks, grouped heads)', () => {
  checkWindows({ seed: 80, splitSeed: 6, windows: [1, 3, 8, 33], tol: 1e-5,
    options: (window) => ({ method: 'exact', window }),
    reference: (q, k, v, window, maskOf) => ref.slidingWindowAttention(q, k, v, window, { maskOf }),
    unwindowed: (q, k, v) => favor.exactAttention(q, k, v, { causal: true }) });
});

test('exact state with a window at least the length: the unbounded state bit for bit', () => {
  for (const [name, shape] of Object.entries(shapes)) {
    const { q, k, v } = inputs(shape, 90, 1);
    const mask = windowMask(shape.kv);
    for (const m of [undefined, mask]) {
      for (const [split, pieces] of Object.entries(splits(L, 7))) {
        const unbounded = runMasked({ method: 'exact' }, q, k, v, pieces, m);
        for (const window of [L, L + 1, 2 ** 40]) {
          assertBitIdentical(runMasked({ method: 'exact', window }, q, k, v, pieces, m).data, unbounded.data,
            `${name}, window ${window}, masked ${!!m}, ${split}`);
        }
      }
    }
  }
});

test('exact state with a window: stateBytes stays flat once it is full (filled one position at a time or by a long prefill)', () => {
  const window = 64, H = 4;
  const step = normalTensor([H, 1, d], 100);
  const oneByOne = favor.createCausalState({ method: 'exact', window });
  const prefilled = favor.createCausalState({ method: 'exact', window });
  const unbounded = favor.createCausalState({ method: 'exact' });
  for (let t = 0; t < 2 * window; t++) oneByOne.append(step, step, step), unbounded.append(step, step, step);
  const prompt = normalTensor([H, 1000, d], 101);
  prefilled.append(prompt, prompt, prompt);
  const prefillBytes = prefilled.stateBytes;
  prefilled.append(step, step, step);
  const full = oneByOne.stateBytes, unboundedBefore = unbounded.stateBytes;
  assert.ok(prefilled.stateBytes < prefillBytes / 4, `the prefill's room is given back (${prefillBytes} -> ${prefilled.stateBytes} bytes)`);
  assert.equal(prefilled.stateBytes, full);
  // the window's keys and values (d + dv floats each) and a few strips more, per head
  assert.ok(full <= 4 * H * (window + 48) * 2 * d, `a full windowed cache holds ${full} bytes`);
  for (let t = 0; t < 500; t++) {
    oneByOne.append(step, step, step), prefilled.append(step, step, step), unbounded.append(step, step, step);
    assert.equal(oneByOne.stateBytes, full, `step ${t}`);
    assert.equal(prefilled.stateBytes, full, `step ${t}`);
  }
  assert.ok(unbounded.stateBytes > 4 * unboundedBefore, 'the unbounded cache grows meanwhile');
  assert.equal(oneByOne.length, 2 * window + 500);
  for (const state of [oneByOne, prefilled, unbounded]) state.dispose();
});

// ---- FAVOR+ state with a sliding window ----

test('favor state with a window: any split matches the float64 windowed sums (key masks, grouped heads)', () => {
  const fm = favor.createFeatureMap({ dim: d, features: 32, seed: 11 });
  checkWindows({ seed: 110, splitSeed: 8, windows: [4, 8, 20, 44], tol: TOL,
    options: (window) => ({ method: 'favor', featureMap: fm, window }),
    reference: (q, k, v, window, maskOf) => ref.windowedFavorAttention('positive', fm.projection, q, k, v, window, { maskOf }),
    unwindowed: (q, k, v) => favor.favorAttention(q, k, v, { featureMap: fm, causal: true }) });
  fm.dispose();
});

test('favor state with a window of more than 4 times the length: the unwindowed state bit for bit', () => {
  const fm = favor.createFeatureMap({ dim: d, features: 32, seed: 12 });
  const { q, k, v } = inputs(shapes['grouped-query heads'], 120, 1);
  for (const [split, pieces] of Object.entries(splits(L, 9))) {
    const whole = runState({ method: 'favor', featureMap: fm }, q, k, v, pieces);
    for (const window of [4 * L, 2 ** 40]) {
      assertBitIdentical(runState({ method: 'favor', featureMap: fm, window }, q, k, v, pieces).data, whole.data, `window ${window}, ${split}`);
    }
  }
  fm.dispose();
});

test('favor state with a window: stateBytes is 4 unwindowed states once 3 blocks have passed, the same at every decode step', () => {
  const window = 64, H = 4;
  const fm = favor.createFeatureMap({ dim: d, features: 32, seed: 13 });
  const windowed = favor.createCausalState({ method: 'favor', featureMap: fm, window });
  const whole = favor.createCausalState({ method: 'favor', featureMap: fm });
  const mapBytes = windowed.stateBytes;
  const step = normalTensor([H, 1, d], 130);
  for (let t = 0; t <= 3 * window / 4; t++) windowed.append(step, step, step), whole.append(step, step, step);  // into the 4th block
  const full = windowed.stateBytes;
  assert.equal(full - mapBytes, 4 * (whole.stateBytes - mapBytes));
  const prompt = normalTensor([H, 300, d], 131);
  windowed.append(prompt, prompt, prompt);
  for (let t = 0; t < 300; t++) {
    windowed.append(step, step, step);
    assert.equal(windowed.stateBytes, full, `step ${t}`);
  }
  assert.equal(windowed.length, 3 * window / 4 + 601);
  for (const s of [windowed, whole]) s.dispose();
  fm.dispose();
});
