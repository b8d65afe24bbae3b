// Independent float64 reference for the favor-attention Node tests, written directly from the
// formulas of docs/design.md §1–§5 and §10. Nothing here calls the package: tests take a
// projection W from the package (or make their own), evaluate every formula here in plain
// double precision, without any stabilization tricks beyond the max-subtraction of a softmax,
// and compare. Inputs in the tests are kept small enough that plain double arithmetic is exact
// to ~1e-14 relative.
//
// Tensors are { data, dims } with row-major data of any numeric array type and dims
// [..., rows, cols]; every function returns Float64Array-backed tensors.

// ---------------------------------------------------------------------------------------------
// Tensor plumbing

/** Number of heads (product of leading dims), rows and cols of a [..., rows, cols] tensor. */
export function shape(tensor) {
  const dims = tensor.dims;
  const rows = dims[dims.length - 2];
  const cols = dims[dims.length - 1];
  let heads = 1;
  for (let i = 0; i < dims.length - 2; i++) heads *= dims[i];
  return { heads, rows, cols, leading: dims.slice(0, -2) };
}

/** Head h of a tensor as an array of Float64Array rows. */
export function headRows(tensor, h) {
  const { rows, cols } = shape(tensor);
  const out = [];
  const base = h * rows * cols;
  for (let i = 0; i < rows; i++) {
    const row = new Float64Array(cols);
    for (let j = 0; j < cols; j++) row[j] = tensor.data[base + i * cols + j];
    out.push(row);
  }
  return out;
}

function dot(a, b) {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * b[i];
  return s;
}

function sqNorm(a) {
  return dot(a, a);
}

function scaled(rows, factor) {
  return rows.map((r) => r.map((x) => x * factor));
}

/** Runs perHead(h) => array of Float64Array rows for every head and stacks the results. */
function stack(leading, rows, cols, perHead) {
  let heads = 1;
  for (const d of leading) heads *= d;
  const data = new Float64Array(heads * rows * cols);
  for (let h = 0; h < heads; h++) {
    const out = perHead(h);
    for (let i = 0; i < rows; i++) data.set(out[i], (h * rows + i) * cols);
  }
  return { data, dims: [...leading, rows, cols] };
}

function matmul(a, b) {
  // a: n x p rows, b: p x q rows
  const q = b[0].length;
  return a.map((row) => {
    const out = new Float64Array(q);
    for (let t = 0; t < row.length; t++) {
      const x = row[t];
      if (x === 0) continue;
      const bt = b[t];
      for (let j = 0; j < q; j++) out[j] += x * bt[j];
    }
    return out;
  });
}

export function defaultScale(d) {
  return 1 / Math.sqrt(d);
}

// ---------------------------------------------------------------------------------------------
// Exact softmax attention, brute force (docs/design.md §1)

/**
 * Whether query i of L sees key j of S: causal is bottom-right (j <= i + S - L, docs/design.md
 * §9); mask (S bytes, 0 = absent) removes keys.
 */
export function sees(i, j, L, S, causal, mask) {
  return (!causal || j <= i + S - L) && (!mask || mask[j] !== 0);
}

/**
 * A = softmax(scale q k^T) row-wise for one head (rows of Float64Array) over the keys each query
 * sees (see `sees`); zeros elsewhere, and a row of zeros where a query sees no key.
 */
export function softmaxMatrixHead(q, k, scale, causal, mask) {
  return q.map((qi, i) => {
    const row = new Float64Array(k.length);
    const on = (j) => sees(i, j, q.length, k.length, causal, mask);
    let mx = -Infinity;
    for (let j = 0; j < k.length; j++) {
      if (!on(j)) continue;
      row[j] = scale * dot(qi, k[j]);
      if (row[j] > mx) mx = row[j];
    }
    if (mx === -Infinity) return row;
    let sum = 0;
    for (let j = 0; j < k.length; j++) if (on(j)) sum += (row[j] = Math.exp(row[j] - mx));
    for (let j = 0; j < k.length; j++) row[j] /= sum;
    return row;
  });
}

/** The [..., L, S] probability matrix; maskOf(h): head h's key mask (S bytes) or undefined. */
export function attentionMatrix(q, k, { causal = false, scale, maskOf = () => undefined } = {}) {
  const sq = shape(q), sk = shape(k);
  const s = scale ?? defaultScale(sq.cols);
  return stack(sq.leading, sq.rows, sk.rows, (h) => softmaxMatrixHead(headRows(q, h), headRows(k, h), s, causal, maskOf(h)));
}

/** softmax(scale q k^T) v: [..., L, dv]. */
export function exactAttention(q, k, v, { causal = false, scale, maskOf = () => undefined } = {}) {
  const sq = shape(q), sv = shape(v);
  const s = scale ?? defaultScale(sq.cols);
  return stack(sq.leading, sq.rows, sv.cols, (h) =>
    matmul(softmaxMatrixHead(headRows(q, h), headRows(k, h), s, causal, maskOf(h)), headRows(v, h)));
}

/**
 * Sliding-window causal attention, what a causal state with a window computes (docs/design.md
 * §8): query i of q [..., Hq, L, d] sees, of its key/value head (k, v [..., Hkv, L, ·]; Hq / Hkv
 * query heads per key/value head), the unmasked keys j <= i, only the `window` last of them; a
 * query that sees none gets zeros. maskOf(kvHead): that head's L mask bytes, or undefined.
 */
export function slidingWindowAttention(q, k, v, window, { scale, maskOf = () => undefined } = {}) {
  const sq = shape(q), sv = shape(v);
  const s = scale ?? defaultScale(sq.cols);
  const inner = (t) => (t.dims.length > 2 ? t.dims[t.dims.length - 3] : 1);
  const Hq = inner(q), Hkv = inner(k);
  return stack(sq.leading, sq.rows, sv.cols, (h) => {
    const kv = Math.floor(h / Hq) * Hkv + Math.floor((h % Hq) / (Hq / Hkv));
    const ks = headRows(k, kv), vs = headRows(v, kv), mask = maskOf(kv);
    return headRows(q, h).map((qi, i) => {
      const seen = [];  // the keys query i attends to, newest first
      for (let j = i; j >= 0 && seen.length < window; j--) if (!mask || mask[j] !== 0) seen.push(j);
      const out = new Float64Array(sv.cols);
      if (seen.length === 0) return out;
      const scores = seen.map((j) => s * dot(qi, ks[j]));
      const mx = Math.max(...scores);
      const weights = scores.map((x) => Math.exp(x - mx));
      const sum = weights.reduce((a, b) => a + b, 0);
      seen.forEach((j, t) => {
        for (let c = 0; c < sv.cols; c++) out[c] += (weights[t] / sum) * vs[j][c];
      });
      return out;
    });
  });
}

// ---------------------------------------------------------------------------------------------
// Feature maps phi (docs/design.md §3); x already scaled (x~ = x sqrt(scale)); W is m x d rows.

export function numFeatures(kernel, m) {
  return kernel === 'hyperbolic' || kernel === 'trigonometric' ? 2 * m : m;
}

/** rho = mean over all pairs (i, j) of |x_i + y_j|^2, by brute force. */
export function oprfRho(x, y) {
  let sum = 0;
  for (const xi of x) {
    for (const yj of y) {
      let s = 0;
      for (let t = 0; t < xi.length; t++) s += (xi[t] + yj[t]) ** 2;
      sum += s;
    }
  }
  return sum / (x.length * y.length);
}

/** OPRF (FAVOR++) coefficients: phi = rho/d, A*, B = sqrt(1 - 4A), D = (1 - 4A)^(d/4). */
export function oprfCoefficients(rho, d) {
  const p = rho / d;
  const a = (1 - 2 * p - Math.sqrt((2 * p + 1) ** 2 + 8 * p)) / 16;
  return { a, b: Math.sqrt(1 - 4 * a), D: Math.pow(1 - 4 * a, d / 4) };
}

/** phi(x) for each row of x: the docs/design.md §3 table, in double. */
export function phi(kernel, w, x, { epsilon = 1e-3, oprf } = {}) {
  const m = w.length;
  return x.map((xi) => {
    const sq = sqNorm(xi);
    const out = new Float64Array(numFeatures(kernel, m));
    for (let r = 0; r < m; r++) {
      const t = dot(w[r], xi);
      switch (kernel) {
        case 'positive':
          out[r] = Math.exp(t - sq / 2) / Math.sqrt(m);
          break;
        case 'hyperbolic': {
          const c = Math.exp(-sq / 2) / Math.sqrt(2 * m);
          out[r] = c * Math.exp(t);
          out[m + r] = c * Math.exp(-t);
          break;
        }
        case 'trigonometric': {
          const c = Math.exp(sq / 2) / Math.sqrt(m);
          out[r] = c * Math.cos(t);
          out[m + r] = c * Math.sin(t);
          break;
        }
        case 'relu':
          out[r] = Math.max(t, 0) + epsilon;
          break;
        case 'oprf':
          out[r] = (oprf.D * Math.exp(oprf.a * sqNorm(w[r]) + oprf.b * t - sq / 2)) / Math.sqrt(m);
          break;
        default:
          throw new Error(`reference: unknown kernel ${kernel}`);
      }
    }
    return out;
  });
}

/** phi(x~).phi(y~) for every pair (L x S) of one head, x~, y~ already scaled. */
export function kernelEstimateHead(kernel, w, xs, ys, { epsilon = 1e-3 } = {}) {
  const oprf = kernel === 'oprf' ? oprfCoefficients(oprfRho(xs, ys), xs[0].length) : undefined;
  const px = phi(kernel, w, xs, { epsilon, oprf });
  const py = phi(kernel, w, ys, { epsilon, oprf });
  return px.map((a) => Float64Array.from(py, (b) => dot(a, b)));
}

/** Rows of a W tensor [m, d] (any numeric data) as Float64Array rows. */
export function projectionRows(projection) {
  return headRows(projection, 0);
}

/** One head of A^ = diag(Q'K'^T 1)^-1 Q'K'^T, masked (j <= i) when causal, x~ = x sqrt(scale). */
export function favorMatrixHead(kernel, w, q, k, scale, causal, epsilon = 1e-3, mask = undefined) {
  const root = Math.sqrt(scale);
  const a = kernelEstimateHead(kernel, w, scaled(q, root), scaled(k, root), { epsilon });
  for (let i = 0; i < a.length; i++) {
    const row = a[i];
    for (let j = 0; j < row.length; j++) if (!sees(i, j, a.length, row.length, causal, mask)) row[j] = 0;
    let sum = 0;
    for (let j = 0; j < row.length; j++) sum += row[j];
    if (sum !== 0) for (let j = 0; j < row.length; j++) row[j] /= sum;
  }
  return a;
}

/** [..., L, S] approximate matrix for the projection W (a [m, d] tensor). */
export function favorAttentionMatrix(kernel, projection, q, k, { causal = false, scale, epsilon = 1e-3, maskOf = () => undefined } = {}) {
  const w = projectionRows(projection);
  const sq = shape(q), sk = shape(k);
  const s = scale ?? defaultScale(sq.cols);
  return stack(sq.leading, sq.rows, sk.rows, (h) =>
    favorMatrixHead(kernel, w, headRows(q, h), headRows(k, h), s, causal, epsilon, maskOf(h)));
}

/** D^-1 (Q'K'^T) V (masked when causal): [..., L, dv]. */
export function favorAttention(kernel, projection, q, k, v, { causal = false, scale, epsilon = 1e-3, maskOf = () => undefined } = {}) {
  const w = projectionRows(projection);
  const sq = shape(q), sv = shape(v);
  const s = scale ?? defaultScale(sq.cols);
  return stack(sq.leading, sq.rows, sv.cols, (h) =>
    matmul(favorMatrixHead(kernel, w, headRows(q, h), headRows(k, h), s, causal, epsilon, maskOf(h)), headRows(v, h)));
}

/**
 * FAVOR+ over a sliding window, what a FAVOR+ causal state with a window computes (docs/design.md
 * §8): positions in blocks of window / 4 from position 0; query i of q [..., Hq, L, d] sees, of
 * its key/value head (Hq / Hkv query heads per key/value head), the unmasked keys from the start
 * of the block 3 blocks before its own up to itself, weighted phi(q~_i).phi(k~_j); a query that
 * sees none gets zeros. maskOf(kvHead): that head's L mask bytes, or undefined.
 */
export function windowedFavorAttention(kernel, projection, q, k, v, window, { scale, maskOf = () => undefined } = {}) {
  const w = projectionRows(projection), sq = shape(q), sv = shape(v), block = window / 4;
  const root = Math.sqrt(scale ?? defaultScale(sq.cols));
  const inner = (t) => (t.dims.length > 2 ? t.dims[t.dims.length - 3] : 1);
  const Hq = inner(q), Hkv = inner(k);
  return stack(sq.leading, sq.rows, sv.cols, (h) => {
    const kv = Math.floor(h / Hq) * Hkv + Math.floor((h % Hq) / (Hq / Hkv));
    const kf = phi(kernel, w, scaled(headRows(k, kv), root)), vs = headRows(v, kv), mask = maskOf(kv);
    return phi(kernel, w, scaled(headRows(q, h), root)).map((qf, i) => {
      const out = new Float64Array(sv.cols);
      let sum = 0;
      for (let j = Math.max(0, (Math.floor(i / block) - 3) * block); j <= i; j++) {
        if (mask && mask[j] === 0) continue;
        const weight = dot(qf, kf[j]);
        sum += weight;
        for (let c = 0; c < sv.cols; c++) out[c] += weight * vs[j][c];
      }
      if (sum !== 0) for (let c = 0; c < sv.cols; c++) out[c] /= sum;
      return out;
    });
  });
}

// ---------------------------------------------------------------------------------------------
// Codebook attention (docs/design.md §7)

/** w_ij = sum_y exp(s q_i.c_y) R_jy, normalized per row (masked when causal), s = 1/√d; one head [L, d]. */
export function codebookMatrix(codebook, q, k, { assignment = 'hard', temperature = 1, causal = false } = {}) {
  const [c, d] = codebook.dims, L = q.dims[0], S = k.dims[0];
  const s = 1 / Math.sqrt(d);
  const row = (t, i) => Array.from(t.data.subarray(i * d, (i + 1) * d));
  const dot = (a, b) => a.reduce((acc, x, t) => acc + x * b[t], 0);
  const cs = Array.from({ length: c }, (_, y) => row(codebook, y));
  const R = Array.from({ length: S }, (_, j) => {
    const kj = row(k, j);
    const d2 = cs.map((cy) => s * cy.reduce((acc, x, t) => acc + (kj[t] - x) ** 2, 0));
    const min = Math.min(...d2);
    if (assignment === 'hard') return d2.map((x) => (x === min && d2.indexOf(x) === d2.indexOf(min) ? 1 : 0));
    if (assignment === 'gaussian') return d2.map((x) => Math.exp(-x / 2));
    const e = d2.map((x) => Math.exp(-(x - min) / (2 * temperature)));
    const total = e.reduce((a, b) => a + b, 0);
    return e.map((x) => x / total);
  });
  const out = new Float64Array(L * S);
  for (let i = 0; i < L; i++) {
    const qi = row(q, i);
    const e = cs.map((cy) => s * dot(qi, cy));
    const top = Math.max(...e);
    const w = e.map((x) => Math.exp(x - top));
    let total = 0;
    for (let j = 0; j < S; j++) {
      const v = causal && j > i ? 0 : R[j].reduce((acc, r, y) => acc + r * w[y], 0);
      out[i * S + j] = v;
      total += v;
    }
    for (let j = 0; j < S; j++) out[i * S + j] /= total;
  }
  return { data: out, dims: [L, S] };
}

// ---------------------------------------------------------------------------------------------
// Error measures (docs/design.md §10, conventions of index.d.ts): rows are the last dim.

export const KL_FLOOR = 1e-12;

export function compare(exact, approx) {
  const cols = exact.dims[exact.dims.length - 1];
  const n = exact.data.length;
  const rows = n / cols;
  let diffSq = 0, refSq = 0, maxAbs = 0, klSum = 0;
  for (let i = 0; i < rows; i++) {
    const qRow = new Float64Array(cols);
    let total = 0;
    for (let j = 0; j < cols; j++) {
      const a = exact.data[i * cols + j], b = approx.data[i * cols + j];
      diffSq += (a - b) ** 2;
      refSq += a * a;
      maxAbs = Math.max(maxAbs, Math.abs(a - b));
      // entries of A^ that are <= 0 (or not finite) become 1e-12; the row is renormalized
      qRow[j] = Number.isFinite(b) && b > 0 ? b : KL_FLOOR;
      total += qRow[j];
    }
    // the exact row is normalized to sum 1 too (float rows do not sum to exactly 1)
    let pTotal = 0;
    for (let j = 0; j < cols; j++) pTotal += Math.max(exact.data[i * cols + j], 0);
    let kl = 0;
    for (let j = 0; j < cols; j++) {
      const p = exact.data[i * cols + j] / pTotal;
      if (p > 0) kl += p * Math.log(p / (qRow[j] / total));
    }
    klSum += kl;
  }
  return { mse: diffSq / n, relFrobenius: Math.sqrt(diffSq / refSq), maxAbs, meanRowKL: klSum / rows };
}

export function outputRelativeError(exact, approx) {
  let diffSq = 0, refSq = 0;
  for (let i = 0; i < exact.data.length; i++) {
    diffSq += (exact.data[i] - approx.data[i]) ** 2;
    refSq += exact.data[i] ** 2;
  }
  return Math.sqrt(diffSq / refSq);
}

// ---------------------------------------------------------------------------------------------
// Comparisons used by the tests. Both return Infinity when `got` has a non-finite entry or the
// sizes differ, so a NaN can never pass a `<= tolerance` assertion.

/** max_i |got_i - ref_i| / max_i |ref_i| (every entry measured against the largest reference entry). */
export function maxRelError(got, ref) {
  const g = got.data ?? got, r = ref.data ?? ref;
  if (g.length !== r.length) return Infinity;
  let diff = 0, top = 0;
  for (let i = 0; i < r.length; i++) {
    if (!Number.isFinite(g[i])) return Infinity;
    diff = Math.max(diff, Math.abs(g[i] - r[i]));
    top = Math.max(top, Math.abs(r[i]));
  }
  return top > 0 ? diff / top : diff;
}

/** |got - ref|_F / |ref|_F */
export function relFrobenius(got, ref) {
  const g = got.data ?? got, r = ref.data ?? ref;
  if (g.length !== r.length) return Infinity;
  let d = 0, n = 0;
  for (let i = 0; i < r.length; i++) {
    if (!Number.isFinite(g[i])) return Infinity;
    d += (g[i] - r[i]) ** 2;
    n += r[i] ** 2;
  }
  return n > 0 ? Math.sqrt(d / n) : Math.sqrt(d);
}

// favor.matmul in float64: a [..., n, k] times b [k, m] (or [m, k] when transposeB) plus bias [m] (flat rows).
export function linearProduct(a, b, transposeB = false, bias = undefined) {
  const k = a.dims.at(-1), rows = a.data.length / k, m = transposeB ? b.dims[0] : b.dims[1];
  const out = new Float64Array(rows * m);
  for (let r = 0; r < rows; r++)
    for (let j = 0; j < m; j++) {
      let s = bias ? bias.data[j] : 0;
      for (let t = 0; t < k; t++) s += a.data[r * k + t] * (transposeB ? b.data[j * k + t] : b.data[t * m + j]);
      out[r * m + j] = s;
    }
  return out;
}
