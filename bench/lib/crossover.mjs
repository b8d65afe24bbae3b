// The crossover: the smallest L from which our FAVOR+ is faster than our exact attention.
// ratio(L) = exact time / FAVOR+ time (> 1: FAVOR+ faster), measured by interleaved calls.
// Search: a grid of powers of two, upward until FAVOR+ is clearly ahead (exact's L² cost only
// widens the gap beyond); the bracket is the last grid point where FAVOR+ was not faster and the
// next one; a bisection on multiples of `step` inside it gives the measured crossover, and a
// log-log interpolation of the two bracketing ratios gives an estimate to compare it with.
import { gaussian, median } from './inputs.mjs';

// Where log ratio crosses 0 on the line through (log L, log ratio) of the two grid points.
export function interpolateCrossover([L0, r0], [L1, r1]) {
  if (!(r0 > 0 && r1 > 0) || r0 === r1) return null;
  const t = -Math.log(r0) / (Math.log(r1) - Math.log(r0));
  return Math.exp(Math.log(L0) + t * (Math.log(L1) - Math.log(L0)));
}

// ratioAt: async L -> ratio. Returns { grid: [[L, r]], bisection: [[L, r]], crossover, bracket,
// interpolated, below: true when FAVOR+ was already faster at grid[0], never: true when it was not
// faster at the largest grid point measured }.
export async function searchCrossover(ratioAt, { grid, step = 32, enough = 1.5 }) {
  const measured = [];
  for (const L of grid) {
    const r = await ratioAt(L);
    measured.push([L, r]);
    if (r >= enough) break;
  }
  // The first grid index from which every measured ratio is > 1.
  let first = measured.length;
  while (first > 0 && measured[first - 1][1] > 1) --first;
  const result = { grid: measured, bisection: [], crossover: null, bracket: null, interpolated: null, below: false, never: false };
  if (first === measured.length) { result.never = true; return result; }
  if (first === 0) { result.below = true; result.crossover = measured[0][0]; return result; }
  const lo = measured[first - 1], hi = measured[first];
  result.bracket = [lo[0], hi[0]];
  result.interpolated = interpolateCrossover(lo, hi);
  let [a, b] = [lo[0], hi[0]];
  for (;;) {
    const mid = Math.round((a + b) / 2 / step) * step;
    if (mid <= a || mid >= b) break;
    const r = await ratioAt(mid);
    result.bisection.push([mid, r]);
    if (r > 1) b = mid; else a = mid;
  }
  result.crossover = b;
  return result;
}

// exact time / FAVOR+ time of our implementation `favor` at L (S = L, d = dv, one head): `rounds`
// rounds each calling both once (the order alternates), within ~budgetMs; returns the median of
// the per-round ratios and each kernel's median time. The inputs (N(0, sigma²), seeded by L) are placed once; the calls copy them
// in and the output out, as every call of the main tables does.
export function measureRatio(favor, featureMap, { L, d, causal, sigma, minRounds = 7, maxRounds = 41, budgetMs = 1500 }) {
  const t = (seed) => ({ data: gaussian(L * d, seed, sigma), dims: [L, d] });
  const q = t(3 * L + 1), k = t(3 * L + 2), v = t(3 * L + 3);
  const calls = [
    () => favor.exactAttention(q, k, v, { causal }),
    () => favor.favorAttention(q, k, v, { featureMap, causal }),
  ];
  const once = (f) => { const t0 = performance.now(); f(); return performance.now() - t0; };
  const warm = calls.map((f) => { once(f); return once(f); });
  const rounds = Math.max(minRounds, Math.min(maxRounds, Math.floor(budgetMs / (warm[0] + warm[1]))));
  const ratios = [], exact = [], fav = [];
  for (let r = 0; r < rounds; ++r) {
    const [first, second] = r % 2 ? [1, 0] : [0, 1];
    const times = [];
    times[first] = once(calls[first]);
    times[second] = once(calls[second]);
    ratios.push(times[0] / times[1]);
    exact.push(times[0]);
    fav.push(times[1]);
  }
  return { ratio: median(ratios), exactMs: median(exact), favorMs: median(fav), rounds };
}
