// The page's heatmap colours (demo/src/colors.js, demo/src/heatmap.js) read against their
// definitions in float64: the colour a heatmap gives each value, the index the model panel and
// the legend's ticks use for it, the quantile that sets a scale's top, and the two colour tables.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  DIVERGING_LUT, INVALID_COLOR, MASKED_COLOR, SEQUENTIAL_LUT, divergingScale, fmt, quantile, sequentialScale,
} from '../../demo/src/colors.js';
import { Heatmap } from '../../demo/src/heatmap.js';
import { rng } from './helpers.mjs';

// The table entry a value's colour comes from, by each scale's definition: the value's place
// between the scale's ends (linear, or in log10; diverging: centred at 0, symmetric-log with a
// linear core of vmax/1000), times 255, to the nearest entry; non-positive values at the bottom
// of a sequential scale. Returns the unrounded place too, to leave out values within rounding of
// a half (the page's loop computes it in another order, and may round the other way there).
function reference({ kind, log, vmax, floor }, x) {
  const clamp = (t) => (t <= 0 ? 0 : t >= 255 ? 255 : t);
  let t;
  if (kind === 'sequential' && !log) t = x > 0 ? (x / vmax) * 255 : 0;
  else if (kind === 'sequential') {
    const lo = Math.log10(Math.min(floor, vmax / 10)), hi = Math.log10(vmax);
    t = x > 0 ? ((Math.log10(x) - lo) / (hi - lo)) * 255 : 0;
  } else if (!log) t = 127.5 + (x / vmax) * 127.5;
  else {
    const lin = vmax / 1000;
    t = 127.5 + (Math.sign(x) * Math.log10(1 + Math.abs(x) / lin) / Math.log10(1 + vmax / lin)) * 127.5;
  }
  t = clamp(t);
  return { index: Math.round(t), t };
}
const nearHalf = (t) => Math.abs((t % 1) - 0.5) < 1e-9;

const SCALES = [
  { kind: 'sequential', log: false, vmax: 0.37 },
  { kind: 'sequential', log: true, vmax: 0.37, floor: 1e-6 },
  { kind: 'sequential', log: true, vmax: 2.5, floor: 1 },  // floor above vmax/10: the scale spans a decade
  { kind: 'diverging', log: false, vmax: 0.08 },
  { kind: 'diverging', log: true, vmax: 0.08 },
];
const make = (s) => (s.kind === 'sequential' ? sequentialScale(s) : divergingScale(s));

// Values over every part of each scale: zeros, negatives, both ends and past them, the log
// scales' decades, infinities.
function values(s, n, seed) {
  const g = rng(seed);
  const out = [0, -0, s.vmax, -s.vmax, 2 * s.vmax, -2 * s.vmax, Infinity, -Infinity, 1e-30, -1e-30, s.vmax / 1000, -s.vmax / 1000];
  while (out.length < n) {
    const r = g.uniform();
    const magnitude = r < 0.5 ? g.uniform() * 1.2 * s.vmax : s.vmax * 10 ** (-9 * g.uniform());
    out.push(g.uniform() < 0.25 ? -magnitude : magnitude);
  }
  return Float32Array.from(out);
}

// A Heatmap over stand-ins for its elements: the canvas's pixels land in `pixels()`.
function heatmap() {
  let image = null;
  const element = () => ({ style: {}, hidden: false, addEventListener() {} });
  const ctx = {
    createImageData: (w, h) => ({ width: w, height: h, data: new Uint8ClampedArray(w * h * 4) }),
    putImageData: (img) => { image = img; },
  };
  const canvas = { ...element(), width: 0, height: 0, classList: { toggle() {} }, getContext: () => ctx };
  const parts = { canvas, '.xh-h': element(), '.xh-v': element(), '.row-mark': element() };
  const root = { ...element(), querySelector: (q) => parts[q] };
  const map = new Heatmap(root, { onHover() {}, onSelect() {}, name: 'test' });
  return { map, pixels: () => new Uint32Array(image.data.buffer) };
}

test('a heatmap colours each value with the table entry its scale defines, and scale.index agrees', () => {
  for (const [n, s] of SCALES.entries()) {
    const scale = make(s);
    const x = values(s, 4000, 10 + n);
    const rows = 40, cols = x.length / rows;
    const { map, pixels } = heatmap();
    map.draw(x, rows, cols, scale, false);
    const px = pixels();
    let decided = 0;
    for (let p = 0; p < x.length; p++) {
      const { index, t } = reference(s, x[p]);
      if (nearHalf(t)) continue;
      decided++;
      assert.equal(px[p], scale.lut[index], `${s.kind}${s.log ? ' log' : ''}: value ${x[p]} drew entry ${scale.lut.indexOf(px[p])}, not ${index}`);
      assert.equal(scale.index(x[p]), index, `${s.kind}${s.log ? ' log' : ''}: index(${x[p]})`);
    }
    assert.ok(decided >= 0.95 * x.length, `${decided} of ${x.length} values away from a rounding tie`);
    // Both ends of the table are reached.
    assert.ok(px.includes(scale.lut[0]) && px.includes(scale.lut[255]));
  }
});

test('a causal heatmap greys the entries above the diagonal and marks NaN apart', () => {
  const s = SCALES[1], scale = make(s);
  const L = 24, x = values(s, L * L, 3);
  x[5 * L + 2] = NaN;
  x[2 * L + 9] = NaN;  // above the diagonal: masked whatever it holds
  const { map, pixels } = heatmap();
  map.draw(x, L, L, scale, true);
  const px = pixels();
  for (let i = 0; i < L; i++) {
    for (let j = 0; j < L; j++) {
      const p = i * L + j;
      if (j > i) assert.equal(px[p], MASKED_COLOR, `(${i}, ${j})`);
      else if (Number.isNaN(x[p])) assert.equal(px[p], INVALID_COLOR, `(${i}, ${j})`);
      else if (!nearHalf(reference(s, x[p]).t)) assert.equal(px[p], scale.lut[reference(s, x[p]).index], `(${i}, ${j})`);
    }
  }
  // Redrawn at another size and without the mask, over the same Heatmap: every pixel is the new matrix's.
  const y = values(s, 12 * 30, 4);
  map.draw(y, 12, 30, scale, false);
  const py = pixels();
  assert.equal(py.length, y.length);
  assert.ok(!py.includes(MASKED_COLOR));
});

test("the legend's ticks sit where the heatmap puts their values' colours", () => {
  // drawLegend places a value's tick at scale.position(value) along a bar of the 256 entries; the
  // heatmap colours that value with entry scale.index(value): the entry under the tick.
  for (const s of SCALES) {
    const scale = make(s);
    for (const x of values(s, 2000, 7)) {
      if (!Number.isFinite(x)) continue;
      const p = scale.position(x), i = scale.index(x);
      assert.ok(p >= 0 && p <= 1, `position(${x}) = ${p}`);
      assert.ok(Math.abs(p * 255 - i) <= 0.5 + 1e-9, `${s.kind}${s.log ? ' log' : ''}: value ${x} at ${p}, entry ${i}`);
    }
    if (s.kind === 'diverging') {
      assert.equal(scale.position(0), 0.5);
      assert.equal(scale.position(-s.vmax), 0);
      assert.equal(scale.position(s.vmax), 1);
    } else {
      assert.equal(scale.position(s.vmax), 1);
      assert.ok(Math.abs(scale.position(scale.vmin)) < 1e-12);
    }
  }
  // A scale with no range (an all-zero matrix) still maps values into the table.
  for (const scale of [sequentialScale({ vmax: 0, log: false }), sequentialScale({ vmax: 0, log: true, floor: 1e-6 }),
    divergingScale({ vmax: 0, log: false }), divergingScale({ vmax: 0, log: true })]) {
    for (const x of [0, 1e-9, 1, -1]) {
      const i = scale.index(x);
      assert.ok(Number.isInteger(i) && i >= 0 && i <= 255, `${scale.kind} ${scale.log}: index(${x}) = ${i}`);
    }
  }
});

test('quantile: the bin edge at or just above the q-quantile of the positive finite values', () => {
  const g = rng(21);
  for (const [n, q, abs] of [[1, 0.5, false], [1000, 0.999, false], [5000, 0.9, true], [20000, 0.999, true], [300, 1, false]]) {
    const v = new Float32Array(n);
    for (let i = 0; i < n; i++) v[i] = Math.exp(3 * g.normal()) * (abs && g.uniform() < 0.5 ? -1 : 1);
    if (n > 10) v[3] = Infinity, v[4] = NaN, v[5] = 0, v[6] = -v[7];
    const kept = [...v].map((x) => (abs ? Math.abs(x) : x)).filter((x) => x > 0 && x < Infinity).sort((a, b) => a - b);
    const max = kept.at(-1);
    const exact = kept[Math.ceil(kept.length * q) - 1];
    const got = quantile(v, q, abs);
    assert.ok(got >= exact && got <= Math.min(max, exact + max / 4096) * (1 + 1e-12),
      `n ${n}, q ${q}: ${got} for the exact ${exact} (max ${max})`);
  }
  assert.equal(quantile(new Float32Array([0, -1, NaN, Infinity]), 0.9), 0);
  // count: only the first values are read.
  assert.equal(quantile(new Float32Array([1, 2, 1000]), 1, false, 2), 2);
});

test('the colour tables: viridis grows lighter end to end; the diverging table is white at 0, blue below, red above', () => {
  const linear = (c) => ((c /= 255) <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4);
  const luminance = (v) => 0.2126 * linear(v & 255) + 0.7152 * linear((v >>> 8) & 255) + 0.0722 * linear((v >>> 16) & 255);
  const rgb = (v) => [v & 255, (v >>> 8) & 255, (v >>> 16) & 255];
  assert.equal(SEQUENTIAL_LUT.length, 256);
  assert.equal(DIVERGING_LUT.length, 256);
  for (const lut of [SEQUENTIAL_LUT, DIVERGING_LUT]) for (const v of lut) assert.equal(v >>> 24, 255, 'opaque');
  // Rounding to 8 bits leaves a few one-level dips between neighbours; over four entries it always rises.
  for (let i = 0; i + 4 < 256; i++) assert.ok(luminance(SEQUENTIAL_LUT[i + 4]) > luminance(SEQUENTIAL_LUT[i]), `viridis ${i}`);
  for (let i = 1; i < 256; i++) assert.ok(luminance(SEQUENTIAL_LUT[i]) >= luminance(SEQUENTIAL_LUT[i - 1]) - 1e-3, `viridis ${i}`);
  // Dark purple to yellow.
  const [r0, g0, b0] = rgb(SEQUENTIAL_LUT[0]), [r1, g1, b1] = rgb(SEQUENTIAL_LUT[255]);
  assert.ok(b0 > g0 && r0 > g0 && luminance(SEQUENTIAL_LUT[0]) < 0.03, `viridis starts at rgb(${r0}, ${g0}, ${b0})`);
  assert.ok(r1 > 200 && g1 > 200 && b1 < 80, `viridis ends at rgb(${r1}, ${g1}, ${b1})`);
  // Lighter towards the middle from either side.
  for (let i = 1; i <= 127; i++) assert.ok(luminance(DIVERGING_LUT[i]) > luminance(DIVERGING_LUT[i - 1]), `diverging ${i}`);
  for (let i = 129; i < 256; i++) assert.ok(luminance(DIVERGING_LUT[i]) < luminance(DIVERGING_LUT[i - 1]), `diverging ${i}`);
  for (const i of [127, 128]) for (const c of rgb(DIVERGING_LUT[i])) assert.ok(c >= 240, `diverging ${i} near white`);
  const [rl, , bl] = rgb(DIVERGING_LUT[0]), [rh, , bh] = rgb(DIVERGING_LUT[255]);
  assert.ok(bl > rl && rh > bh, 'blue for negative, red for positive');
  // Neither greys the page uses for masked and NaN entries appears in either table.
  for (const grey of [MASKED_COLOR, INVALID_COLOR]) assert.ok(!SEQUENTIAL_LUT.includes(grey) && !DIVERGING_LUT.includes(grey));
});

test('fmt: three significant digits, powers of ten written out, never NaN', () => {
  // toPrecision's own exponent form (12345 → 1.23e+4) comes out as a power of ten too.
  const cases = [[0, '0'], [1, '1.00'], [-0.5, '−0.500'], [0.001234, '0.00123'], [12345, '1.23·10⁴'], [1234567, '1.23·10⁶'],
    [0.0009876, '9.88·10⁻⁴'], [2.5e-7, '2.50·10⁻⁷'], [-3e12, '−3.00·10¹²'], [NaN, '—'], [null, '—'], [undefined, '—'],
    [Infinity, '∞'], [-Infinity, '−∞']];
  for (const [x, want] of cases) assert.equal(fmt(x), want, `fmt(${x})`);
  assert.equal(fmt(0.001234, 2), '0.0012');
  assert.equal(fmt(99999, 2), '1.0·10⁵');
});
