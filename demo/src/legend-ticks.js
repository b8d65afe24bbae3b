// What a colour legend's ticks say and where they sit: its two ends, then groups of ticks in the
// order they are kept while they fit (a diverging scale's ± pairs together, so that its ticks stay
// symmetric about 0). Each tick is [position along the bar, 0 … 1, label], the label the value
// at that position to the digits it shows, the numbers of one bar in one notation.
import { fmt, pow10Label } from './colors.js';

// The bottom of a log scale as its legend names it: a power of ten as one (10⁻⁴), else to one digit.
export function logBottomLabel(vmin) {
  const e = Math.round(Math.log10(vmin));
  return Math.abs(Math.log10(vmin) - e) < 1e-9 ? pow10Label(e) : fmt(vmin, 1);
}

// Labels of a linear bar from its smallest labelled value `low` to its top: fmt's two digits,
// except where the bar crosses 10⁻³, below which fmt writes powers of ten: then fixed decimals
// to the top's second digit, so that 0.00078 and 0.0031 are not written 7.8·10⁻⁴ and 0.0031.
function linearLabel(low, top) {
  if (!(low < 1e-3 && top >= 1e-3)) return (x) => fmt(x, 2);
  const decimals = 1 - Math.floor(Math.log10(top));
  return (x) => (x === 0 ? '0' : x.toFixed(decimals).replace(/^-/, '−'));
}

export function legendTicks(scale) {
  const groups = [];
  let ends;
  if (scale.kind === 'sequential' && scale.log) {
    const lo = Math.ceil(Math.log10(scale.vmin) - 1e-9), hi = Math.floor(Math.log10(scale.vmax) + 1e-9);
    const step = Math.max(1, Math.ceil((hi - lo + 1) / 6));
    for (let e = hi; e >= lo; e -= step) groups.push([[scale.position(10 ** e), pow10Label(e)]]);
    ends = [[0, logBottomLabel(scale.vmin)], [1, fmt(scale.vmax, 2)]];
  } else if (scale.kind === 'sequential') {
    const label = linearLabel(0.25 * scale.vmax, scale.vmax);
    ends = [[0, '0'], [1, label(scale.vmax)]];
    groups.push([[0.5, label(0.5 * scale.vmax)]], [0.25, 0.75].map((t) => [t, label(t * scale.vmax)]));
  } else if (scale.log) {
    ends = [[0, fmt(-scale.vmax, 2)], [1, fmt(scale.vmax, 2)]];
    groups.push([[0.5, '0']]);
    // a tenth and a hundredth of the top, rounded to one digit and placed where that value is
    for (const f of [1e-1, 1e-2]) {
      const v = Number((f * scale.vmax).toPrecision(1));
      groups.push([-1, 1].map((s) => [scale.position(s * v), fmt(s * v, 1)]));
    }
  } else {
    const label = linearLabel(0.5 * scale.vmax, scale.vmax);
    ends = [[0, label(-scale.vmax)], [1, label(scale.vmax)]];
    groups.push([[0.5, '0']], [-1, 1].map((s) => [0.5 + s / 4, label(s * 0.5 * scale.vmax)]));
  }
  return { ends, groups };
}
