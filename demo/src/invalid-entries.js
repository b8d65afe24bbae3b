// Entries of Â that cannot be drawn as probabilities (trigonometric features give them), counted
// for the badge beside the matrices (captions.js negativeNote): { nonPositive, nonFinite } over
// the entries a row has (j <= i where causal). zeroOk: exact zeros are underflow of a positive
// estimator (an exported W on a sharp head gives weights below float32's range), not invalid
// weights; only negative ones are counted then.
export function countInvalid(a, L, causal, zeroOk = false) {
  let nonPositive = 0, nonFinite = 0;
  for (let i = 0; i < L; i++) {
    const jmax = causal ? i : L - 1;
    for (let j = 0; j <= jmax; j++) {
      const x = a[i * L + j];
      if (!Number.isFinite(x)) nonFinite++;
      else if (x < 0 || (x === 0 && !zeroOk)) nonPositive++;
    }
  }
  return { nonPositive, nonFinite };
}
