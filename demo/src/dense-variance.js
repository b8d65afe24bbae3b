// What FAVOR#'s errors follow, per head of a model.
//
// SDERF, to second order (docs/design.md §3): for dense-exponential features
// of iid w, one row's relative errors εⱼ = Ŝⱼ/Sⱼ − 1 (Ŝⱼ the estimate of Sⱼ = e^{q̃ᵢ·k̃ⱼ}) have
//   m·Cov(εⱼ, εₗ) = Πₖ Gₖ hⱼₖ hₗₖ e^{−cₖ(yⱼₖ − yₗₖ)²/2} − 1,
// with, per direction k of the map (its coefficient aₖ ≤ 0, u = T q̃ and y = T k̃ the mapped rows):
//   cₖ = (1 − 4aₖ)/(1 − 8aₖ), Gₖ = (1 − 4aₖ)/√(1 − 8aₖ) · e^{(2cₖ − 1)uₖ²},
//   hⱼₖ = e^{(2cₖ − 1)(uₖ yⱼₖ + yⱼₖ²/2)},
// and KL(Aᵢ‖Âᵢ) ≈ Var_{Aᵢ}(ε)/2 over the row's exact weights. With a = 0 this is FAVOR+'s, whose
// heavy tail makes it far too large at any m a page uses; SDERF's fitted aₖ tame it.
//
// ADERF: OPRF's features of the rebalanced rows Ψq̃ and Ψ⁻ᵀk̃, one A for every direction, so a
// feature misjudges the ratio of two keys' weights by a factor of log-variance ‖Ψ⁻ᵀ(k̃ⱼ − k̃ₗ)‖²,
// as OPRF's does with ‖k̃ⱼ − k̃ₗ‖² (docs/design.md §3): its measure is the rebalanced keys' spread.
import { causalKeySpread } from '../../model/layers.js';
import { denseExponentialParameters, scaledMoments } from './estimators.js';

// Per head of causal q, k ([H, L, d]): the predicted mean row KL(A‖Â) of `kernel` ('sderf') with
// `features` features, taken as the geometric mean over up to `rows` rows (ending at the last;
// a row with one key has none), at scale 1/√d.
export function predictedKL(q, k, { kernel, features, rows = 8 }) {
  const L = k.dims[1], step = Math.max(1, Math.floor(L / rows)), picked = [];
  for (let i = L - 1; i >= 1 && picked.length < rows; i -= step) picked.push(i);
  return perHead(q, k, kernel, (qh, kh, { a, query, key }, d, root) => {
    const u = mapped(query, qh, L, d, root), y = mapped(key, kh, L, d, root);
    const c = Array.from(a, (x) => (1 - 4 * x) / (1 - 8 * x));
    let logG0 = 0;
    for (let t = 0; t < d; t++) logG0 += Math.log((1 - 4 * a[t]) / Math.sqrt(1 - 8 * a[t]));
    let total = 0;
    for (const i of picked) total += rowLogVariance(i, qh, kh, u, y, c, logG0, d, 1 / Math.sqrt(d));
    return picked.length ? Math.exp(total / picked.length) / (2 * features) : NaN;
  });
}

// Per head of causal q, k ([H, L, d]): σ²ₖ of ADERF's rebalanced keys Ψ⁻ᵀk̃ (Ψ from the head's
// q̃ and k̃, as the library fits it to a call's), at scale 1/√d.
export function rebalancedSpread(q, k) {
  const L = k.dims[1];
  return perHead(q, k, 'aderf', (qh, kh, { key }, d, root) =>
    causalKeySpread({ data: mapped(key, kh, L, d, root), dims: [1, L, d] }, 1)[0]);
}

// fn(qh, kh, parameters, d, root) for each head of q, k ([H, L, d]): its rows, and FAVOR#'s
// parameters for `kernel` from their moments (x̃ = x·root, root = d^-¼, the scale 1/√d).
function perHead(q, k, kernel, fn) {
  const [H, L, d] = k.dims, root = Math.sqrt(1 / Math.sqrt(d)), out = new Float64Array(H);
  for (let h = 0; h < H; h++) {
    const qh = q.data.subarray(h * L * d, (h + 1) * L * d), kh = k.data.subarray(h * L * d, (h + 1) * L * d);
    out[h] = fn(qh, kh, denseExponentialParameters(kernel, scaledMoments(qh, kh, L, L, d, root), d), d, root);
  }
  return out;
}

// T x̃ for each row of src (L×d), x̃ = x·root; T row-major d×d.
function mapped(T, src, L, d, root) {
  const out = new Float64Array(L * d);
  for (let i = 0; i < L; i++)
    for (let a = 0; a < d; a++) {
      let x = 0;
      for (let b = 0; b < d; b++) x += T[a * d + b] * src[i * d + b];
      out[i * d + a] = x * root;
    }
  return out;
}

// log of m·Var_{Aᵢ}(ε) for row i, which sees keys 0..i.
function rowLogVariance(i, q, k, u, y, c, logG0, d, scale) {
  const n = i + 1, w = new Float64Array(n), lh = new Float64Array(n);
  let top = -Infinity, sum = 0;
  for (let j = 0; j < n; j++) {
    let s = 0;
    for (let t = 0; t < d; t++) s += q[i * d + t] * k[j * d + t];
    w[j] = s * scale;
    top = Math.max(top, w[j]);
  }
  for (let j = 0; j < n; j++) sum += (w[j] = Math.exp(w[j] - top));
  let logG = logG0, hTop = -Infinity;
  for (let t = 0; t < d; t++) logG += (2 * c[t] - 1) * u[i * d + t] ** 2;
  for (let j = 0; j < n; j++) {
    w[j] /= sum;
    let s = 0;
    for (let t = 0; t < d; t++) s += (2 * c[t] - 1) * (u[i * d + t] * y[j * d + t] + y[j * d + t] ** 2 / 2);
    hTop = Math.max(hTop, (lh[j] = s));
  }
  // Σⱼ Aⱼ Πₖ Gₖ hⱼₖ² − Σⱼₗ AⱼAₗ Πₖ Gₖ hⱼₖ hₗₖ e^{−cₖΔₖ²/2}, over e^{logG + 2 hTop}: with
  // zⱼ = log hⱼ − hTop − Σₖ cₖyⱼₖ²/2 a pair's term is e^{zⱼ + zₗ + Σₖ cₖyⱼₖyₗₖ}, symmetric in j, l.
  // Weights under 1e-12 of the row add nothing a float64 sum keeps.
  const kept = [];
  for (let j = 0; j < n; j++) if (w[j] >= 1e-12) kept.push(j);
  const z = new Float64Array(n);
  let own = 0, cross = 0;
  for (const j of kept) {
    let s = 0;
    for (let t = 0; t < d; t++) s += c[t] * y[j * d + t] ** 2;
    z[j] = lh[j] - hTop - s / 2;
    const diagonal = w[j] * Math.exp(2 * (lh[j] - hTop));  // the pair (j, j)
    own += diagonal;
    cross += w[j] * diagonal;
  }
  for (let a = 0; a < kept.length; a++) {
    const j = kept[a], yj = j * d;
    for (let b = a + 1; b < kept.length; b++) {
      const l = kept[b], yl = l * d;
      let e = 0;
      for (let t = 0; t < d; t++) e += c[t] * y[yj + t] * y[yl + t];
      cross += 2 * w[j] * w[l] * Math.exp(z[j] + z[l] + e);
    }
  }
  return logG + 2 * hTop + Math.log(Math.max(own - cross, own * 1e-15));
}
