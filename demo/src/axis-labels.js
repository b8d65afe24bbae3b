// Characters on the heatmaps' axes: all of them where they fit, else the inspected query and the
// keys it weights most (exact on A and A − Â, approximated on Â), each at least a label's width
// from a stronger one shown (neighbouring keys' labels would print over each other).
import { shownChar } from './text.js';

// The `k` keys j ≤ i with the largest M[i, j], strongest first, each at least `gap` keys from
// every stronger one kept.
export function strongestKeys(M, L, i, k, gap) {
  const row = [];
  for (let j = 0; j <= i; j++) row.push([M[i * L + j], j]);
  const kept = [];
  for (const [, j] of row.sort((a, b) => b[0] - a[0])) {
    if (kept.length === k) break;
    if (kept.every((c) => Math.abs(c - j) >= gap)) kept.push(j);
  }
  return kept;
}

// The labels of each heatmap ({ exact, approx, diff }: { rows, cols } of [index, text, class])
// for `chars` on L × L maps `width` px wide, row i inspected.
export function axisLabels({ chars, L, A, Ahat, i, width }) {
  const all = width / L >= 8;
  const gap = Math.ceil((10 * L) / width);  // keys per 10 px: a label's width
  const labels = {};
  for (const [name, M] of [['exact', A], ['approx', Ahat], ['diff', A]]) {
    const keys = new Set(strongestKeys(M, L, i, 4, gap));
    const idx = all ? [...chars].map((_, j) => j) : [...keys].sort((a, b) => a - b);
    labels[name] = {
      rows: (all ? idx : [i]).map((r) => [r, shownChar(chars[r]), r === i ? 'query' : '']),
      cols: idx.map((j) => [j, shownChar(chars[j]), keys.has(j) ? 'key' : '']),
    };
  }
  return labels;
}
