// The unnormalized kernel estimate φ(q̃_i)·φ(k̃_j) of exp(q̃_i·k̃_j), recomputed in float64 from a
// feature map's projection W (for OPRF and FAVOR# with their parameters from all of q̃ and k̃, as
// the library computes them per call), and Lemma 2's MSE of it (Choromanski et al. 2021, docs/design.md §3).
// Used by the error-vs-m study; x̃ = x·scale^{1/2} as in the library (default scale 1/√d).
import { rng } from './inputs.js';

// A fixed sample of (i, j) pairs: up to `maxRows` query rows × `maxRows` key rows (all of them
// when L ≤ maxRows), keeping j ≤ i when causal. Returns the scaled rows and per-pair statistics.
export function samplePairs(q, k, L, S, d, { causal, scale = 1 / Math.sqrt(d), maxRows = 64, seed = 12345 }) {
  const pick = (n) => {
    if (n <= maxRows) return Int32Array.from({ length: n }, (_, i) => i);
    const r = rng(seed, n), chosen = new Set();
    while (chosen.size < maxRows) chosen.add(Math.floor(r() * n));
    return Int32Array.from([...chosen].sort((a, b) => a - b));
  };
  const rows = pick(L), cols = pick(S);
  const root = Math.sqrt(scale);
  const scaled = (src, idx) => {
    const out = new Float64Array(idx.length * d);
    idx.forEach((row, a) => { for (let t = 0; t < d; t++) out[a * d + t] = src[row * d + t] * root; });
    return out;
  };
  const x = scaled(q, rows), y = scaled(k, cols);
  const sq = (m, n) => Float64Array.from({ length: n }, (_, a) => { let s = 0; for (let t = 0; t < d; t++) s += m[a * d + t] ** 2; return s; });
  const xsq = sq(x, rows.length), ysq = sq(y, cols.length);
  const pairs = [];
  for (let a = 0; a < rows.length; a++) {
    for (let b = 0; b < cols.length; b++) {
      if (causal && cols[b] > rows[a]) continue;
      let dot = 0;
      for (let t = 0; t < d; t++) dot += x[a * d + t] * y[b * d + t];
      pairs.push({ a, b, dot, sum: xsq[a] + ysq[b] + 2 * dot, diff: xsq[a] + ysq[b] - 2 * dot });
    }
  }
  // OPRF's ρ is taken over all of q̃ and k̃, as in the library.
  let qsq = 0, ksq = 0;
  const qmean = new Float64Array(d), kmean = new Float64Array(d);
  for (let i = 0; i < L; i++) for (let t = 0; t < d; t++) { const v = q[i * d + t] * root; qsq += v * v; qmean[t] += v / L; }
  for (let j = 0; j < S; j++) for (let t = 0; t < d; t++) { const v = k[j * d + t] * root; ksq += v * v; kmean[t] += v / S; }
  let cross = 0;
  for (let t = 0; t < d; t++) cross += qmean[t] * kmean[t];
  const rho = qsq / L + ksq / S + 2 * cross;
  // FAVOR#'s parameters come from the means and second moments of all of q̃ and k̃, as in the library.
  const moments = scaledMoments(q, k, L, S, d, root);
  return { d, rows, cols, x, y, xsq, ysq, pairs, rho, root, moments, dense: {} };
}

// FAVOR#'s inputs (denseExponentialParameters): { q, k } each the mean and mean x xᵀ of all the
// rows of q (L×d) and k (S×d) scaled by root (x̃ = x·root).
export const scaledMoments = (q, k, L, S, d, root) => ({ q: rowMoments(q, L, d, root), k: rowMoments(k, S, d, root) });

// Mean and mean x xᵀ (row-major d×d) of the rows of src (n×d) times root, in float64.
function rowMoments(src, n, d, root) {
  const mean = new Float64Array(d), second = new Float64Array(d * d);
  const row = new Float64Array(d);
  for (let i = 0; i < n; i++) {
    for (let t = 0; t < d; t++) row[t] = src[i * d + t] * root;
    for (let p = 0; p < d; p++) {
      mean[p] += row[p] / n;
      for (let t = p; t < d; t++) second[p * d + t] += (row[p] * row[t]) / n;
    }
  }
  for (let p = 0; p < d; p++) for (let t = 0; t < p; t++) second[p * d + t] = second[t * d + p];
  return { mean, second };
}

// sqrt(x² + z²) without overflow, as the core computes it (src/favor/features/symmetric_eigen.cpp).
function norm2(x, z) {
  const top = Math.max(Math.abs(x), Math.abs(z));
  if (top === 0) return 0;
  const a = x / top, b = z / top;
  return top * Math.sqrt(a * a + b * b);
}

// Eigenvalues and eigenvectors of a symmetric d×d matrix (row-major): { values, vectors } with
// eigenvector k in column k of vectors (row-major d×d). The core's algorithm in the same order
// (Householder tridiagonalization, then implicit QR steps with Wilkinson's shift), so that the
// page's FAVOR# parameters are the library's to rounding, eigenvector signs included.
export function symmetricEigen(input, d) {
  const t = Float64Array.from(input), q = new Float64Array(d * d);
  for (let p = 0; p < d; p++) for (let r = p + 1; r < d; r++) t[r * d + p] = t[p * d + r];
  for (let p = 0; p < d; p++) q[p * d + p] = 1;
  const v = new Float64Array(d), w = new Float64Array(d);
  for (let k = 0; k + 2 < d; k++) {
    const m = d - k - 1;
    let sq = 0;
    for (let i = 0; i < m; i++) sq += t[(k + 1 + i) * d + k] ** 2;
    if (sq === 0) continue;
    const alpha = t[(k + 1) * d + k] >= 0 ? -Math.sqrt(sq) : Math.sqrt(sq);
    let vsq = 0;
    for (let i = 0; i < m; i++) {
      v[i] = t[(k + 1 + i) * d + k] - (i === 0 ? alpha : 0);
      vsq += v[i] * v[i];
    }
    if (vsq === 0) continue;
    const inv = 1 / Math.sqrt(vsq);
    for (let i = 0; i < m; i++) v[i] *= inv;
    let vp = 0;
    for (let i = 0; i < m; i++) {
      let sum = 0;
      for (let j = 0; j < m; j++) sum += t[(k + 1 + i) * d + k + 1 + j] * v[j];
      w[i] = sum;
      vp += v[i] * sum;
    }
    for (let i = 0; i < m; i++) w[i] -= vp * v[i];
    for (let i = 0; i < m; i++) for (let j = 0; j < m; j++) t[(k + 1 + i) * d + k + 1 + j] -= 2 * (v[i] * w[j] + w[i] * v[j]);
    t[(k + 1) * d + k] = t[k * d + k + 1] = alpha;
    for (let i = 1; i < m; i++) t[(k + 1 + i) * d + k] = t[k * d + k + 1 + i] = 0;
    for (let r = 0; r < d; r++) {
      let s = 0;
      for (let j = 0; j < m; j++) s += q[r * d + k + 1 + j] * v[j];
      for (let j = 0; j < m; j++) q[r * d + k + 1 + j] -= 2 * s * v[j];
    }
  }
  const EPS = 2.220446049250313e-16;
  let steps = 0;
  for (let hi = d - 1; hi > 0 && steps < 64 * d;) {
    for (let i = 0; i < hi; i++) {
      if (Math.abs(t[(i + 1) * d + i]) <= EPS * (Math.abs(t[i * d + i]) + Math.abs(t[(i + 1) * d + i + 1]))) t[(i + 1) * d + i] = t[i * d + i + 1] = 0;
    }
    if (t[hi * d + hi - 1] === 0) { hi--; continue; }
    let lo = hi - 1;
    while (lo > 0 && t[lo * d + lo - 1] !== 0) lo--;
    steps++;
    const a = t[(hi - 1) * d + hi - 1], b = t[hi * d + hi - 1], c = t[hi * d + hi];
    const delta = 0.5 * (a - c);
    const denominator = delta + (delta >= 0 ? 1 : -1) * norm2(delta, b);
    const mu = denominator === 0 ? c : c - b * (b / denominator);
    for (let k = lo; k < hi; k++) {
      const x = k === lo ? t[lo * d + lo] - mu : t[k * d + k - 1];
      const z = k === lo ? t[(lo + 1) * d + lo] : t[(k + 1) * d + k - 1];
      const r = norm2(x, z);
      if (r === 0) continue;
      const cs = x / r, sn = z / r;
      const j0 = Math.max(lo, k - 1), j1 = Math.min(hi, k + 2);
      for (let j = j0; j <= j1; j++) {
        const u = t[k * d + j], y = t[(k + 1) * d + j];
        t[k * d + j] = cs * u + sn * y;
        t[(k + 1) * d + j] = -sn * u + cs * y;
      }
      for (let i = j0; i <= j1; i++) {
        const u = t[i * d + k], y = t[i * d + k + 1];
        t[i * d + k] = cs * u + sn * y;
        t[i * d + k + 1] = -sn * u + cs * y;
      }
      if (k > lo) t[(k + 1) * d + k - 1] = t[(k - 1) * d + k + 1] = 0;
      for (let i = 0; i < d; i++) {
        const u = q[i * d + k], y = q[i * d + k + 1];
        q[i * d + k] = cs * u + sn * y;
        q[i * d + k + 1] = -sn * u + cs * y;
      }
    }
  }
  return { values: Float64Array.from({ length: d }, (_, p) => t[p * d + p]), vectors: q };
}

const matmul = (a, b, d) => {
  const c = new Float64Array(d * d);
  for (let i = 0; i < d; i++) for (let k = 0; k < d; k++) { const x = a[i * d + k]; for (let j = 0; j < d; j++) c[i * d + j] += x * b[k * d + j]; }
  return c;
};
const transpose = (a, d) => Float64Array.from({ length: d * d }, (_, x) => a[(x % d) * d + Math.floor(x / d)]);
// V diag(f(λ)) Vᵀ of an eigendecomposition.
const spectral = ({ values, vectors }, f, d) => {
  const scaled = Float64Array.from(vectors, (x, i) => x * f(values[i % d]));
  return matmul(scaled, transpose(vectors, d), d);
};
// The eigendecomposition of a positive definite matrix with its spectrum kept >= floor.
function atLeast(moment, d, floor) {
  const e = symmetricEigen(moment, d);
  e.values = e.values.map((v) => Math.max(v, floor));
  return e;
}

// FAVOR#'s variance-optimal parameters for 'sderf' or 'aderf' (docs/design.md §3): per-direction
// a_k, log D, and the d×d transforms T of queries and keys (row-major), from the moments of
// samplePairs. A feature is D·exp(Σ_k a_k w_k² + Σ_k √(1 − 4a_k) w_k (T x)_k − ‖T x‖²/2) / √m.
export function denseExponentialParameters(kernel, { q, k }, d) {
  if (kernel === 'sderf') {
    // OPRF along each eigen-direction of mean (q̃ + k̃)(q̃ + k̃)ᵀ; T = Vᵀ.
    const both = Float64Array.from(q.second, (x, i) => x + k.second[i] + q.mean[Math.floor(i / d)] * k.mean[i % d] + k.mean[Math.floor(i / d)] * q.mean[i % d]);
    const e = symmetricEigen(both, d);
    const a = new Float64Array(d);
    let logD = 0;
    for (let t = 0; t < d; t++) {
      const c = oprfCoefficients(Math.max(0, e.values[t]), 1);
      a[t] = c.A;
      logD += c.logD;
    }
    const T = transpose(e.vectors, d);
    return { a, logD, query: T, key: T };
  }
  if (kernel !== 'aderf') throw new RangeError(`denseExponentialParameters: not a FAVOR# kernel: '${kernel}'`);
  // Ψ = P^{1/4} M_q^{-1/2} with P = M_q^{1/2} M_k M_q^{1/2}: Ψq̃ and Ψ^{-T}k̃ have equal second moments.
  // Both moments get the core's ridge δI (1e-6 of their mean eigenvalue, and 1e-30).
  let tr = 0;
  for (let p = 0; p < d; p++) tr += q.second[p * d + p] + k.second[p * d + p];
  const delta = (1e-6 * Math.max(0, tr)) / (2 * d) + 1e-30;
  const ridged = (M) => Float64Array.from(M, (x, i) => (i % (d + 1) === 0 ? x + delta : x));
  const eq = atLeast(ridged(q.second), d, delta);
  const rootQ = spectral(eq, Math.sqrt, d), invRootQ = spectral(eq, (x) => 1 / Math.sqrt(x), d);
  const ep = atLeast(matmul(matmul(rootQ, ridged(k.second), d), rootQ, d), d, delta * delta);
  const psi = matmul(spectral(ep, (x) => Math.sqrt(Math.sqrt(x)), d), invRootQ, d);
  const psiInvT = matmul(spectral(ep, (x) => 1 / Math.sqrt(Math.sqrt(x)), d), rootQ, d);
  // OPRF's ρ of the mapped rows, from the moments as they are (without the ridge).
  const trace = (t, M) => { const x = matmul(matmul(t, M, d), transpose(t, d), d); let s = 0; for (let p = 0; p < d; p++) s += x[p * d + p]; return s; };
  let cross = 0;
  for (let t = 0; t < d; t++) cross += q.mean[t] * k.mean[t];
  const c = oprfCoefficients(Math.max(0, trace(psi, q.second) + trace(psiInvT, k.second) + 2 * cross), d);
  return { a: new Float64Array(d).fill(c.A), logD: c.logD, query: psi, key: psiInvT };
}

// log(mean(exp(v))) without overflow.
function logMeanExp(values) {
  let max = -Infinity;
  for (const v of values) if (v > max) max = v;
  if (!Number.isFinite(max)) return max;
  let s = 0;
  for (const v of values) s += Math.exp(v - max);
  return max + Math.log(s / values.length);
}

// Lemma 2 numerators: the MSE for m projections is c / m, with c averaged over the pairs.
// Returns { positive, hyperbolic, trigonometric } (Infinity when it overflows float64).
export function theoryConstants(sample) {
  const pos = [], hyp = [], trig = [];
  for (const p of sample.pairs) {
    const z = p.sum;                                        // ‖x+y‖²
    const lpos = z + 2 * p.dot + Math.log(-Math.expm1(-z)); // e^{‖x+y‖²} SM² (1 − e^{−‖x+y‖²})
    pos.push(lpos);
    hyp.push(lpos + Math.log(0.5 * -Math.expm1(-z)));
    trig.push(z - 2 * p.dot + 2 * Math.log(-Math.expm1(-p.diff)) - Math.LN2);
  }
  const mean = (v) => Math.exp(logMeanExp(v.filter((x) => x > -Infinity).length ? v : [-Infinity]));
  return { positive: mean(pos), hyperbolic: mean(hyp), trigonometric: mean(trig) };
}

// OPRF coefficients (FAVOR++), as in the library.
export function oprfCoefficients(rho, d) {
  const phi = rho / d;
  const A = (1 - 2 * phi - Math.sqrt((2 * phi + 1) ** 2 + 8 * phi)) / 16;
  return { A, B: Math.sqrt(1 - 4 * A), logD: 0.25 * d * Math.log(1 - 4 * A) };
}

// Mean over the sampled pairs of (φ(x)·φ(y) − exp(x·y))² for projection W (Float32Array m×d).
// Returns null for kernels that do not estimate exp(x·y) (relu).
export function unnormalizedMSE(kernel, W, m, sample) {
  const est = unnormalizedEstimates(kernel, W, m, sample);
  if (est === null) return null;
  let total = 0;
  sample.pairs.forEach((p, n) => { const err = est[n] - Math.exp(p.dot); total += err * err; });
  return total / sample.pairs.length;
}

// φ(x̃_i)·φ(ỹ_j) for every sampled pair, in float64 (null for relu).
export function unnormalizedEstimates(kernel, W, m, sample) {
  if (kernel === 'relu') return null;
  const { d, x, y, xsq, ysq, rows, cols, pairs } = sample;
  const nx = rows.length, ny = cols.length;
  const proj = (src, n) => {
    const out = new Float64Array(n * m);
    for (let a = 0; a < n; a++) {
      for (let r = 0; r < m; r++) {
        let s = 0;
        for (let t = 0; t < d; t++) s += W[r * d + t] * src[a * d + t];
        out[a * m + r] = s;
      }
    }
    return out;
  };
  const dense = kernel === 'sderf' || kernel === 'aderf';  // their own projection per side, below
  const u = dense ? null : proj(x, nx), w = dense ? null : proj(y, ny);
  // Factor each estimate as Σ_r P[a, r] · R[b, r] (one or two banks of features).
  let banks;
  if (kernel === 'sderf' || kernel === 'aderf') {
    sample.dense[kernel] ??= denseExponentialParameters(kernel, sample.moments, d);
    const { a, logD, query, key } = sample.dense[kernel];
    // Σ_k a_k w_rk² per feature and W diag(√(1 − 4a)) T per side: exponents in one product each.
    const offset = Float64Array.from({ length: m }, (_, r) => { let s = 0; for (let t = 0; t < d; t++) s += a[t] * W[r * d + t] ** 2; return s; });
    const bank = (src, n, T) => {
      const WB = new Float64Array(m * d);
      for (let r = 0; r < m; r++) {
        for (let j = 0; j < d; j++) {
          let s = 0;
          for (let t = 0; t < d; t++) s += W[r * d + t] * Math.sqrt(1 - 4 * a[t]) * T[t * d + j];
          WB[r * d + j] = s;
        }
      }
      const out = new Float64Array(n * m);
      for (let i = 0; i < n; i++) {
        let half = 0;
        for (let t = 0; t < d; t++) { let s = 0; for (let j = 0; j < d; j++) s += T[t * d + j] * src[i * d + j]; half += 0.5 * s * s; }
        for (let r = 0; r < m; r++) {
          let s = 0;
          for (let j = 0; j < d; j++) s += WB[r * d + j] * src[i * d + j];
          out[i * m + r] = Math.exp(logD - 0.5 * Math.log(m) + offset[r] + s - half);
        }
      }
      return out;
    };
    banks = [[bank(x, nx, query), bank(y, ny, key)]];
  } else if (kernel === 'positive' || kernel === 'oprf') {
    let A = 0, B = 1, logPre = -0.5 * Math.log(m);
    const wsq = new Float64Array(m);
    if (kernel === 'oprf') {
      const c = oprfCoefficients(sample.rho, d);
      A = c.A; B = c.B; logPre += c.logD;
      for (let r = 0; r < m; r++) { let s = 0; for (let t = 0; t < d; t++) s += W[r * d + t] ** 2; wsq[r] = s; }
    }
    const bank = (proj, sq, n) => Float64Array.from({ length: n * m }, (_, i) => {
      const a = Math.floor(i / m), r = i - a * m;
      return Math.exp(logPre + A * wsq[r] + B * proj[i] - 0.5 * sq[a]);
    });
    banks = [[bank(u, xsq, nx), bank(w, ysq, ny)]];
  } else if (kernel === 'hyperbolic') {
    const logPre = -0.5 * Math.log(2 * m);
    const bank = (proj, sq, n, sign) => Float64Array.from({ length: n * m }, (_, i) =>
      Math.exp(logPre + sign * proj[i] - 0.5 * sq[Math.floor(i / m)]));
    banks = [[bank(u, xsq, nx, 1), bank(w, ysq, ny, 1)], [bank(u, xsq, nx, -1), bank(w, ysq, ny, -1)]];
  } else if (kernel === 'trigonometric') {
    const logPre = -0.5 * Math.log(m);
    const bank = (proj, sq, n, f) => Float64Array.from({ length: n * m }, (_, i) =>
      Math.exp(logPre + 0.5 * sq[Math.floor(i / m)]) * f(proj[i]));
    banks = [[bank(u, xsq, nx, Math.cos), bank(w, ysq, ny, Math.cos)], [bank(u, xsq, nx, Math.sin), bank(w, ysq, ny, Math.sin)]];
  } else {
    throw new RangeError(`unnormalizedMSE: unknown kernel '${kernel}'`);
  }
  const out = new Float64Array(pairs.length);
  pairs.forEach((p, n) => {
    let est = 0;
    for (const [P, R] of banks) {
      const po = p.a * m, ro = p.b * m;
      for (let r = 0; r < m; r++) est += P[po + r] * R[ro + r];
    }
    out[n] = est;
  });
  return out;
}

// Codebook attention's unnormalized kernel for every sampled pair, in float64: Σ_y R_jy exp(x̃_i·c̃_y)
// with c̃ = c·√scale and R the hard (nearest codeword) or soft (softmax(−‖ỹ − c̃‖²/2T)) assignment
// of the key; compared with exp(x̃_i·ỹ_j) like the random-feature estimates.
export function codebookKernelMSE(codebook, c, assignment, temperature, sample) {
  const { d, x, y, ysq, rows, cols, pairs, root } = sample;
  const ct = Float64Array.from(codebook.subarray(0, c * d), (v) => v * root);
  const csq = Float64Array.from({ length: c }, (_, r) => { let s = 0; for (let t = 0; t < d; t++) s += ct[r * d + t] ** 2; return s; });
  const dots = (src, n) => {
    const out = new Float64Array(n * c);
    for (let a = 0; a < n; a++) {
      for (let r = 0; r < c; r++) {
        let s = 0;
        for (let t = 0; t < d; t++) s += src[a * d + t] * ct[r * d + t];
        out[a * c + r] = s;
      }
    }
    return out;
  };
  const u = dots(x, rows.length), w = dots(y, cols.length);
  // Responsibilities of the sampled keys.
  const R = new Float64Array(cols.length * c);
  for (let b = 0; b < cols.length; b++) {
    const o = b * c;
    let best = 0, bestDist = Infinity;
    const dist = new Float64Array(c);
    for (let r = 0; r < c; r++) {
      dist[r] = ysq[b] + csq[r] - 2 * w[o + r];
      if (dist[r] < bestDist) { bestDist = dist[r]; best = r; }
    }
    if (assignment === 'hard') { R[o + best] = 1; continue; }
    let total = 0;
    for (let r = 0; r < c; r++) { const e = Math.exp(-(dist[r] - bestDist) / (2 * temperature)); R[o + r] = e; total += e; }
    for (let r = 0; r < c; r++) R[o + r] /= total;
  }
  const eu = u.map(Math.exp);
  let sum = 0;
  for (const p of pairs) {
    let est = 0;
    const po = p.a * c, ro = p.b * c;
    for (let r = 0; r < c; r++) est += R[ro + r] * eu[po + r];
    const err = est - Math.exp(p.dot);
    sum += err * err;
  }
  return sum / pairs.length;
}
