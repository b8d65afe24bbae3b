// Color scales for the heatmaps: a sequential scale (viridis) shared by A and Â, linear or
// logarithmic, and a diverging scale (blue-white-red) centred at 0 for A − Â, linear or
// symmetric-log. Each maps a value to an index into a 256-entry RGBA lookup table.

const LUT_SIZE = 256;

function packRGB(r, g, b) {
  const c = (x) => Math.max(0, Math.min(255, Math.round(x * 255)));
  return (255 << 24 | c(b) << 16 | c(g) << 8 | c(r)) >>> 0;  // little-endian ImageData
}

// Viridis, polynomial fit (after mattz, CC0).
function viridis(t) {
  const c0 = [0.2777273272234177, 0.005407344544966578, 0.3340998053353061];
  const c1 = [0.1050930431085774, 1.404613529898575, 1.384590162594685];
  const c2 = [-0.3308618287255563, 0.214847559468213, 0.09509516302823659];
  const c3 = [-4.634230498983486, -5.799100973351585, -19.33244095627987];
  const c4 = [6.228269936347081, 14.17993336680509, 56.69055260068105];
  const c5 = [4.776384997670288, -13.74514537774601, -65.35303263337234];
  const c6 = [-5.435455855934631, 4.645852612178535, 26.3124352495832];
  return [0, 1, 2].map((k) => c0[k] + t * (c1[k] + t * (c2[k] + t * (c3[k] + t * (c4[k] + t * (c5[k] + t * c6[k]))))));
}

const DIVERGING_STOPS = [
  [0, [0.019, 0.188, 0.380]], [0.2, [0.129, 0.400, 0.675]], [0.4, [0.573, 0.773, 0.871]],
  [0.5, [0.969, 0.969, 0.969]], [0.6, [0.957, 0.647, 0.510]], [0.8, [0.839, 0.376, 0.302]], [1, [0.404, 0, 0.122]],
];

function diverging(t) {
  for (let s = 1; s < DIVERGING_STOPS.length; s++) {
    const [t1, c1] = DIVERGING_STOPS[s];
    if (t <= t1) {
      const [t0, c0] = DIVERGING_STOPS[s - 1];
      const u = (t - t0) / (t1 - t0);
      return c0.map((x, k) => x + u * (c1[k] - x));
    }
  }
  return DIVERGING_STOPS.at(-1)[1];
}

export const SEQUENTIAL_LUT = Uint32Array.from({ length: LUT_SIZE }, (_, i) => packRGB(...viridis(i / (LUT_SIZE - 1))));
export const DIVERGING_LUT = Uint32Array.from({ length: LUT_SIZE }, (_, i) => packRGB(...diverging(i / (LUT_SIZE - 1))));
export const MASKED_COLOR = packRGB(0.86, 0.86, 0.86);
export const INVALID_COLOR = packRGB(0.35, 0.35, 0.35);  // NaN: never expected from the library

export function lutToCss(lut, i) {
  const c = lut[i];
  return `rgb(${c & 255}, ${(c >>> 8) & 255}, ${(c >>> 16) & 255})`;
}

// The q-quantile of the positive finite values (or of |values|), from a 4096-bin histogram:
// an upper limit for a color scale that a few spikes cannot wash out.
export function quantile(values, q = 0.999, abs = false, count = values.length) {
  let max = 0;
  for (let i = 0; i < count; i++) {
    const x = abs ? Math.abs(values[i]) : values[i];
    if (x > max && x < Infinity) max = x;
  }
  if (max === 0) return 0;
  const bins = new Uint32Array(4096);
  let n = 0;
  for (let i = 0; i < count; i++) {
    const x = abs ? Math.abs(values[i]) : values[i];
    if (!(x > 0) || x === Infinity) continue;
    bins[Math.min(4095, Math.floor((x / max) * 4096))]++;
    n++;
  }
  const target = Math.ceil(n * q);
  let seen = 0, b = 0;
  for (; b < 4096; b++) { seen += bins[b]; if (seen >= target) break; }
  return Math.min(max, ((b + 1) / 4096) * max);
}

const SUPERSCRIPT = { '-': '⁻', 0: '⁰', 1: '¹', 2: '²', 3: '³', 4: '⁴', 5: '⁵', 6: '⁶', 7: '⁷', 8: '⁸', 9: '⁹' };
const superscript = (e) => String(e).replace(/./g, (c) => SUPERSCRIPT[c]);
export function pow10Label(e) {
  return e === 0 ? '1' : e === 1 ? '10' : `10${superscript(e)}`;
}

// Numbers for readouts: 3 significant digits, never "NaN".
export function fmt(x, digits = 3) {
  if (x === null || x === undefined) return '—';
  if (Number.isNaN(x)) return '—';
  if (x === Infinity) return '∞';
  if (x === -Infinity) return '−∞';
  if (x === 0) return '0';
  const a = Math.abs(x);
  const s = a >= 1e-3 && a < 1e5 ? x.toPrecision(digits) : x.toExponential(digits - 1);
  return s.replace(/^-/, '−').replace(/e\+?(-?)(\d+)$/, (_, sign, e) => `·10${superscript(Number(sign + e))}`);
}

// A rate (characters per second): whole numbers with separators from 100 on (1,050, not 1.05·10³).
export const fmtRate = (x) => (x >= 100 ? Math.round(x).toLocaleString('en-US') : fmt(x, 3));

// Sequential scale on [0, vmax], or log10 on [floor, vmax]; non-positive values go to the bottom.
export function sequentialScale({ vmax, log, floor }) {
  const top = vmax > 0 ? vmax : 1;
  if (!log) {
    const k = (LUT_SIZE - 1) / top;
    return {
      kind: 'sequential', log, vmin: 0, vmax: top, lut: SEQUENTIAL_LUT, mode: 'linear', k, offset: 0,
      index: (x) => (x > 0 ? Math.min(LUT_SIZE - 1, Math.round(x * k)) : 0),
      position: (x) => Math.max(0, Math.min(1, x / top)),
    };
  }
  const lo = Math.log10(Math.min(floor, top / 10)), hi = Math.log10(top);
  const k = (LUT_SIZE - 1) / (hi - lo);
  return {
    kind: 'sequential', log, vmin: 10 ** lo, vmax: top, lut: SEQUENTIAL_LUT, mode: 'log', k: k / Math.LN10, offset: lo * Math.LN10,
    index: (x) => (x > 0 ? Math.max(0, Math.min(LUT_SIZE - 1, Math.round((Math.log10(x) - lo) * k))) : 0),
    position: (x) => (x > 0 ? Math.max(0, Math.min(1, (Math.log10(x) - lo) / (hi - lo))) : 0),
  };
}

// Diverging scale on [−vmax, vmax], centred at 0; `log` = symmetric log with a linear core of
// width vmax·1e-3.
export function divergingScale({ vmax, log }) {
  const top = vmax > 0 ? vmax : 1e-12;
  const half = (LUT_SIZE - 1) / 2;
  if (!log) {
    return {
      kind: 'diverging', log, vmax: top, lut: DIVERGING_LUT, mode: 'diverging', k: half / top, offset: half,
      index: (x) => Math.max(0, Math.min(LUT_SIZE - 1, Math.round(half + (x / top) * half))),
      position: (x) => Math.max(0, Math.min(1, 0.5 + x / top / 2)),
    };
  }
  const lin = top * 1e-3, norm = Math.log10(1 + top / lin);
  const f = (x) => Math.sign(x) * Math.log10(1 + Math.abs(x) / lin) / norm;
  return {
    kind: 'diverging', log, vmax: top, linthresh: lin, lut: DIVERGING_LUT, mode: 'symlog', k: half / (norm * Math.LN10), offset: half, inv: 1 / lin,
    index: (x) => Math.max(0, Math.min(LUT_SIZE - 1, Math.round(half + f(x) * half))),
    position: (x) => Math.max(0, Math.min(1, 0.5 + f(x) / 2)),
  };
}
