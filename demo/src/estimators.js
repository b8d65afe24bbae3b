// The unnormalized kernel estimate φ(q̃_i)·φ(k̃_j) of exp(q̃_i·k̃_j), recomputed in float64 from a
// feature map's projection W, and Lemma 2's MSE of it (Choromanski et al. 2021, docs/design.md §3).
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
  return { d, rows, cols, x, y, xsq, ysq, pairs, rho, root };
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
  const u = proj(x, nx), w = proj(y, ny);
  // Factor each estimate as Σ_r P[a, r] · R[b, r] (one or two banks of features).
  let banks;
  if (kernel === 'positive' || kernel === 'oprf') {
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
