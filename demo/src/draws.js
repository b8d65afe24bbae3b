// The approximation is random: W (or k-means' start) is one draw of many. For the row inspector,
// the selected head's Â under DRAWS draws (the feature seed shown and the next ones), summarized
// entry by entry: the smallest, the largest and the mean. Pure: the compute worker (and
// model-view.js modelDraws) hand it each draw's Â, so that Node tests check it on the same calls.
import { rowKL } from './row-kl.js';

export const DRAWS = 16;

// Entry-by-entry minimum, maximum and mean of equally long arrays, added one at a time.
export class Spread {
  constructor(n) {
    this.lo = new Float32Array(n).fill(Infinity);
    this.hi = new Float32Array(n).fill(-Infinity);
    this.sum = new Float64Array(n);
    this.count = 0;
  }

  add(a) {
    const { lo, hi, sum } = this;
    for (let x = 0; x < a.length; x++) {
      const v = a[x];
      if (v < lo[x]) lo[x] = v;
      if (v > hi[x]) hi[x] = v;
      sum[x] += v;
    }
    this.count++;
  }

  result() {
    const mean = new Float32Array(this.sum.length);
    for (let x = 0; x < mean.length; x++) mean[x] = this.sum[x] / this.count;
    return { lo: this.lo, hi: this.hi, mean, draws: this.count };
  }
}

// The selected head's Â under DRAWS draws. approxOf(t) is draw t's Â as an L×L Float32Array (t = 0:
// the one shown); crop(a) keeps what the heatmaps draw (a model's window) and returns it.
export function spreadOfDraws(approxOf, crop = (a) => a, draws = DRAWS) {
  let spread = null;
  for (let t = 0; t < draws; t++) {
    const a = crop(approxOf(t));
    spread ??= new Spread(a.length);
    spread.add(a);
  }
  return spread.result();
}

// How row i of A sits among the draws: the keys (of S) whose exact weight lies inside the draws'
// range, and KL(A_i ‖ the draws' mean) as the inspector measures KL(A_i ‖ Â_i) (row-kl.js).
export function rowAmongDraws(A, { lo, hi, mean }, L, i, S) {
  let inside = 0;
  for (let j = i * L; j < i * L + S; j++) if (A[j] >= lo[j] && A[j] <= hi[j]) inside++;
  return { inside, kl: rowKL(A, mean, i * L, S).kl };
}
