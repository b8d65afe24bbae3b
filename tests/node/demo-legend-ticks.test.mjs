// The colour legends' ticks (demo/src/legend-ticks.js): each label is the value at its tick's
// place on the bar, to the digits it shows; a linear bar writes its numbers in one notation; the ends
// say what the legend's sentence says of the scale's range.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { divergingScale, fmt, sequentialScale } from '../../demo/src/colors.js';
import { legendTicks, logBottomLabel } from '../../demo/src/legend-ticks.js';

const SUPER = { '⁻': '-', '⁰': 0, '¹': 1, '²': 2, '³': 3, '⁴': 4, '⁵': 5, '⁶': 6, '⁷': 7, '⁸': 8, '⁹': 9 };
// A label's value and half a unit of its last digit.
function read(label) {
  const text = label.replace(/^−/, '-');
  let m = /^(-?)10([⁻⁰¹²³⁴⁵⁶⁷⁸⁹]+)$/.exec(text);
  if (m) return { value: Number(`${m[1]}1e${[...m[2]].map((c) => SUPER[c]).join('')}`), half: 0 };
  m = /^(-?[\d.]+)(?:·10([⁻⁰¹²³⁴⁵⁶⁷⁸⁹]+))?$/.exec(text);
  assert.ok(m, `a number: '${label}'`);
  const e = m[2] ? Number([...m[2]].map((c) => SUPER[c]).join('')) : 0;
  const decimals = (m[1].split('.')[1] ?? '').length;
  return { value: Number(m[1]) * 10 ** e, half: 0.5 * 10 ** (e - decimals) };
}
// The value a bar shows at position p: bisection on the scale's position, which only grows.
function valueAt(scale, p) {
  let lo = scale.kind === 'diverging' ? -scale.vmax : scale.vmin ?? 0, hi = scale.vmax;
  for (let n = 0; n < 200; n++) {
    const mid = (lo + hi) / 2;
    if (scale.position(mid) < p) lo = mid; else hi = mid;
  }
  return (lo + hi) / 2;
}

const TOPS = [3.7e-9, 2.2e-6, 7.7e-4, 0.001, 0.0031, 0.0039, 0.0045, 0.044, 0.056, 0.136, 0.37, 1, 2.5, 19, 430];

test('every tick says the value at its place, in one notation per bar', () => {
  let bars = 0;
  for (const vmax of TOPS) {
    const scales = [sequentialScale({ vmax, log: false }), divergingScale({ vmax, log: false }), divergingScale({ vmax, log: true })];
    for (const floor of [1e-4, 1e-6, vmax * 3e-3]) if (floor < vmax) scales.push(sequentialScale({ vmax, log: true, floor }));
    for (const scale of scales) {
      const name = `${scale.kind}${scale.log ? ' log' : ''} to ${vmax}`;
      const { ends, groups } = legendTicks(scale);
      assert.deepEqual(ends.map(([p]) => p), [0, 1], name);
      const ticks = [...ends, ...groups.flat()];
      for (const [p, label] of ticks) {
        assert.ok(p >= 0 && p <= 1, `${name}: '${label}' at ${p}`);
        const { value, half } = read(label);
        const at = valueAt(scale, p);
        assert.ok(Math.abs(value - at) <= half * (1 + 1e-9) + 1e-12 * vmax, `${name}: '${label}' sits at ${at}`);
      }
      // a linear bar's numbers are all written as powers of ten or none (a log bar's are read as
      // decades, 0.006 beside 6·10⁻⁴)
      const numbers = ticks.map(([, l]) => l).filter((l) => l !== '0');
      const powers = numbers.filter((l) => l.includes('·10'));
      if (!scale.log) assert.ok(powers.length === 0 || powers.length === numbers.length, `${name}: ${numbers.join(' | ')}`);
      // a diverging bar's ends are the ± of the legend's sentence (fmt, two digits)
      if (scale.kind === 'diverging' && !(vmax >= 1e-3 && 0.5 * vmax < 1e-3)) assert.deepEqual(ends.map(([, l]) => l), [fmt(-vmax, 2), fmt(vmax, 2)], name);
      bars++;
    }
  }
  assert.ok(bars > 50);
});

test('the bar that crosses 10⁻³ is written in decimals; a log bottom that is a power of ten is named as one', () => {
  const labels = (scale) => { const { ends, groups } = legendTicks(scale); return [...ends, ...groups.flat()].sort((a, b) => a[0] - b[0]).map(([, l]) => l); };
  assert.deepEqual(labels(sequentialScale({ vmax: 0.0031, log: false })), ['0', '0.0008', '0.0015', '0.0023', '0.0031']);
  assert.deepEqual(labels(divergingScale({ vmax: 0.0015, log: false })), ['−0.0015', '−0.0008', '0', '0.0008', '0.0015']);
  assert.deepEqual(labels(divergingScale({ vmax: 0.056, log: true })).filter((l, i, a) => i === 0 || i === a.length - 1), ['−0.056', '0.056']);
  assert.equal(logBottomLabel(1e-4), '10⁻⁴');
  assert.equal(logBottomLabel(1e-6), '10⁻⁶');
  assert.equal(logBottomLabel(0.0023), '0.002');
  assert.equal(labels(sequentialScale({ vmax: 1, log: true, floor: 1e-6 }))[0], '10⁻⁶');
});
