// KL(A_i ‖ Â_i) of one row of attention weights, entries [start, start + count) of A and Â, with
// Â's row renormalized and its entries that are not positive and finite counted as 1e-12 (they
// cannot be probabilities): { kl, nonPositive }. The inspector's measure, also computed in the
// worker for rows longer than the heatmaps' window.
export function rowKL(A, Ahat, start, count) {
  let total = 0, nonPositive = 0;
  const q = (b) => (Number.isFinite(b) && b > 0 ? b : 1e-12);
  for (let j = start; j < start + count; j++) {
    const b = Ahat[j];
    if (!(Number.isFinite(b) && b > 0)) nonPositive++;
    total += q(b);
  }
  let kl = 0;
  for (let j = start; j < start + count; j++) {
    const a = A[j];
    if (a > 0) kl += a * Math.log((a * total) / q(Ahat[j]));
  }
  return { kl, nonPositive };
}
