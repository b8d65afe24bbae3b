// KL(A_i ‖ Â_i) of one row of attention weights, entries [start, start + count) of A and Â, with
// both rows renormalized and Â's entries that are not positive and finite counted as 1e-12 (they
// cannot be probabilities): { kl, nonPositive }. The library's compare() measures each row of its
// meanRowKL so; renormalizing A too keeps a float32 row that sums to 1 ± 1e-7 from reading as a
// KL of 1e-7 where Â = A, and makes the KL over a window of a row that of the window's keys.
// The inspector's measure, also computed in the worker for rows longer than the heatmaps' window.
export function rowKL(A, Ahat, start, count) {
  let total = 0, exactTotal = 0, nonPositive = 0;
  const q = (b) => (Number.isFinite(b) && b > 0 ? b : 1e-12);
  for (let j = start; j < start + count; j++) {
    const b = Ahat[j];
    if (!(Number.isFinite(b) && b > 0)) nonPositive++;
    total += q(b);
    if (A[j] > 0) exactTotal += A[j];
  }
  let kl = 0;
  for (let j = start; j < start + count; j++) {
    const a = A[j];
    if (a > 0) kl += a * Math.log((a * total) / (q(Ahat[j]) * exactTotal));
  }
  return { kl: exactTotal > 0 ? kl / exactTotal : 0, nonPositive };
}
