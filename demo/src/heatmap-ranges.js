// What the three heatmaps' colour scales span. A keeps its colours whatever the approximation:
// on a trained model one fixed scale for every head (weights are probabilities: 10⁻⁴ … 1 on the
// log scale, 0 … 1 linear); on synthetic inputs the range of A. Â is drawn on A's scale, its
// entries above the top saturate (the legend counts them). |A − Â| ends at its maximum unless
// that is a spike far above its 99.9th percentile.
import { quantile } from './colors.js';

export function difference(A, Ahat) {
  const diff = new Float32Array(A.length);
  for (let x = 0; x < A.length; x++) diff[x] = A[x] - Ahat[x];
  return diff;
}

// { vmax, floor } of A and Â's scale, dmax of A − Â's, and how many entries of Â (over) and of
// A − Â (dover) lie beyond them.
export function heatmapRanges({ A, Ahat, diff, model }) {
  const n = A.length;
  let maxA = 0, minPos = Infinity;
  for (let x = 0; x < n; x++) { const a = A[x]; if (a > maxA) maxA = a; if (a > 0 && a < minPos) minPos = a; }
  const q = quantile(diff, 0.999, true), max = quantile(diff, 1, true);
  const dmax = max > 1.5 * q ? q : max;
  const vmax = model ? 1 : Math.min(1, maxA);
  const floor = model ? 1e-4 : Math.max(vmax * 1e-6, Number.isFinite(minPos) ? minPos : vmax * 1e-6);
  let over = 0, dover = 0;
  for (let x = 0; x < n; x++) { if (Ahat[x] > vmax * 1.0001) over++; if (Math.abs(diff[x]) > dmax) dover++; }
  return { vmax, floor, dmax, over, dover };
}
