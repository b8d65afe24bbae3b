// The 2-D view of the keys for the codebook modes: their top two principal components (power
// iteration on the d×d covariance, in float64), the keys and the codewords projected on them,
// and each key's nearest codeword. Plain math, used by the compute worker.

// Top-2 principal axes of the rows of x (n×d). Returns { mean, axes: [Float64Array d, ...],
// variances: [λ1, λ2], total } with total = trace of the covariance.
export function principalAxes(x, n, d) {
  const mean = new Float64Array(d);
  for (let i = 0; i < n; i++) for (let t = 0; t < d; t++) mean[t] += x[i * d + t];
  for (let t = 0; t < d; t++) mean[t] /= n;
  const cov = new Float64Array(d * d);
  const row = new Float64Array(d);
  for (let i = 0; i < n; i++) {
    for (let t = 0; t < d; t++) row[t] = x[i * d + t] - mean[t];
    for (let a = 0; a < d; a++) {
      const ra = row[a];
      if (ra === 0) continue;
      const o = a * d;
      for (let b = a; b < d; b++) cov[o + b] += ra * row[b];
    }
  }
  for (let a = 0; a < d; a++) for (let b = a; b < d; b++) { cov[a * d + b] /= n; cov[b * d + a] = cov[a * d + b]; }
  let total = 0;
  for (let a = 0; a < d; a++) total += cov[a * d + a];

  const axes = [], variances = [];
  const w = new Float64Array(d);
  for (let k = 0; k < Math.min(2, d); k++) {
    // A fixed, generic start vector: the picture is the same on every redraw.
    let v = Float64Array.from({ length: d }, (_, t) => 1 + 0.37 * Math.sin(1.7 * t + k));
    let lambda = 0;
    for (let it = 0; it < 300; it++) {
      for (const u of axes) {  // stay orthogonal to the axes found so far
        let p = 0;
        for (let t = 0; t < d; t++) p += u[t] * v[t];
        for (let t = 0; t < d; t++) v[t] -= p * u[t];
      }
      let norm = 0;
      for (let a = 0; a < d; a++) {
        let s = 0;
        const o = a * d;
        for (let b = 0; b < d; b++) s += cov[o + b] * v[b];
        w[a] = s;
      }
      for (const u of axes) {
        let p = 0;
        for (let t = 0; t < d; t++) p += u[t] * w[t];
        for (let t = 0; t < d; t++) w[t] -= p * u[t];
      }
      for (let t = 0; t < d; t++) norm += w[t] * w[t];
      norm = Math.sqrt(norm);
      if (!(norm > 0)) break;  // no variance left (e.g. d = 1 or identical keys)
      let change = 0;
      for (let t = 0; t < d; t++) { const nv = w[t] / norm; change += (nv - v[t]) ** 2; v[t] = nv; }
      lambda = norm;
      if (change < 1e-12) break;  // converged to ~1e-6: plenty for a picture
    }
    // Sign: the largest component positive, so the view does not flip between redraws.
    let big = 0;
    for (let t = 0; t < d; t++) if (Math.abs(v[t]) > Math.abs(v[big])) big = t;
    if (v[big] < 0) for (let t = 0; t < d; t++) v[t] = -v[t];
    let vn = 0;
    for (let t = 0; t < d; t++) vn += v[t] * v[t];
    vn = Math.sqrt(vn) || 1;
    for (let t = 0; t < d; t++) v[t] /= vn;
    axes.push(v);
    variances.push(lambda);
  }
  while (axes.length < 2) { axes.push(new Float64Array(d)); variances.push(0); }
  return { mean, axes, variances, total };
}

// Rows of x (n×d), times `factor`, minus `factor`·mean, on the two axes: Float32Array n×2.
export function project(x, n, d, pca, factor = 1) {
  const out = new Float32Array(2 * n);
  const [u, w] = pca.axes;
  for (let i = 0; i < n; i++) {
    let a = 0, b = 0;
    for (let t = 0; t < d; t++) {
      const c = factor * (x[i * d + t] - pca.mean[t]);
      a += c * u[t];
      b += c * w[t];
    }
    out[2 * i] = a;
    out[2 * i + 1] = b;
  }
  return out;
}

// Index of the nearest codeword for every key (argmin ‖k − c‖²: the hard assignment, and the
// argmax of the soft and Gaussian responsibilities), and how many keys each codeword has.
// Large cases go through the wasm module when `favor` is given: argmin ‖k − c‖² is the argmax of
// [k, 1]·[c, −‖c‖²/2], i.e. of row k of favor.attentionMatrix([K 1], [C −‖C‖²/2], scale 1).
export function nearestCodewords(keys, n, codebook, c, d, favor = null) {
  if (favor && n * c * d >= 1 << 20) return nearestByAttention(favor, keys, n, codebook, c, d);
  const csq = new Float64Array(c);
  for (let y = 0; y < c; y++) { let s = 0; for (let t = 0; t < d; t++) s += codebook[y * d + t] ** 2; csq[y] = s; }
  const assign = new Uint16Array(n);
  const counts = new Uint32Array(c);
  for (let i = 0; i < n; i++) {
    let best = 0, bestScore = Infinity;
    const o = i * d;
    for (let y = 0; y < c; y++) {
      let dot = 0;
      const p = y * d;
      for (let t = 0; t < d; t++) dot += keys[o + t] * codebook[p + t];
      const score = csq[y] - 2 * dot;  // ‖k − c‖² − ‖k‖²
      if (score < bestScore) { bestScore = score; best = y; }
    }
    assign[i] = best;
    counts[best]++;
  }
  return { assign, counts };
}

// n keys as rows [k, 1] and c codewords as rows [c, −‖c‖²/2] (d + 1 wide): their dot products are
// k·c − ‖c‖²/2 = (‖k‖² − ‖k − c‖²)/2, so attention of the keys on the codewords at scale s weighs
// each codeword by e^{−s‖k − c‖²/2}, and its largest weight is the nearest codeword.
export function distanceRows(keys, n, codebook, c, d) {
  const e = d + 1;
  const k1 = new Float32Array(n * e), c1 = new Float32Array(c * e);
  for (let i = 0; i < n; i++) { k1.set(keys.subarray(i * d, i * d + d), i * e); k1[i * e + d] = 1; }
  for (let y = 0; y < c; y++) {
    let s = 0;
    for (let t = 0; t < d; t++) { const x = codebook[y * d + t]; c1[y * e + t] = x; s += x * x; }
    c1[y * e + d] = -s / 2;
  }
  return { k1, c1 };
}

function nearestByAttention(favor, keys, n, codebook, c, d) {
  const { k1, c1 } = distanceRows(keys, n, codebook, c, d);
  const P = favor.attentionMatrix({ data: k1, dims: [n, d + 1] }, { data: c1, dims: [c, d + 1] }, { scale: 1 }).data;
  const assign = new Uint16Array(n);
  const counts = new Uint32Array(c);
  for (let i = 0; i < n; i++) {
    let best = 0, bestP = -1;
    const o = i * c;
    for (let y = 0; y < c; y++) if (P[o + y] > bestP) { bestP = P[o + y]; best = y; }
    assign[i] = best;
    counts[best]++;
  }
  return { assign, counts };
}
