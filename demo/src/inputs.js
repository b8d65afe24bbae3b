// Seeded synthetic inputs for the page and its studies (the same on the main thread and in
// workers). Q and K are multiplied by the input scale s; V is N(0, 1). The library then applies
// its default score scale 1/sqrt(d), i.e. the random-feature methods see x̃ = x · d^{-1/4}.

// mulberry32 over a 32-bit state mixed from (seed, stream): small, fast, reproducible.
export function rng(seed, stream = 0) {
  let s = (Math.imul((seed >>> 0) ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(stream + 1, 0xc2b2ae35)) >>> 0;
  const next = () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  let spare = null;
  next.normal = () => {
    if (spare !== null) { const v = spare; spare = null; return v; }
    let u = next();
    while (u <= 0) u = next();
    const r = Math.sqrt(-2 * Math.log(u)), a = 2 * Math.PI * next();
    spare = r * Math.sin(a);
    return r * Math.cos(a);
  };
  return next;
}

export const PATTERNS = {
  gaussian: 'Gaussian: every entry of Q and K is N(0, s²)',
  clustered: 'Clustered: keys (and queries) lie near 8 shared centres (L/2 below L = 16), in contiguous blocks, so attention is block-diagonal',
  banded: 'Local / banded: Q and K carry sinusoidal position codes, so query i attends to keys near j = i',
};

// A pattern as a sentence names it: Gaussian is a name.
export const patternWord = (pattern) => (pattern === 'gaussian' ? 'Gaussian' : pattern);

function gaussianMatrix(r, rows, cols) {
  const out = new Float32Array(rows * cols);
  for (let i = 0; i < out.length; i++) out[i] = r.normal();
  return out;
}

// How many centres clustered keys of length L lie near: two keys at least to each.
export const clusterCount = (L) => Math.max(1, Math.min(8, Math.floor(L / 2)));

// Returns { q, k, v } (Float32Array, row-major L×d each) for a pattern.
export function makeInputs({ L, d, pattern, scale, dataSeed }) {
  const r = rng(dataSeed, 1);
  let q, k;
  if (pattern === 'clustered') {
    const clusters = clusterCount(L);
    const noise = 0.35, norm = 1 / Math.sqrt(1 + noise * noise);
    const centres = gaussianMatrix(r, clusters, d);
    q = new Float32Array(L * d);
    k = new Float32Array(L * d);
    for (let i = 0; i < L; i++) {
      const c = Math.min(clusters - 1, Math.floor((i * clusters) / L));
      for (let t = 0; t < d; t++) {
        q[i * d + t] = (centres[c * d + t] + noise * r.normal()) * norm;
        k[i * d + t] = (centres[c * d + t] + noise * r.normal()) * norm;
      }
    }
  } else if (pattern === 'banded') {
    // Position codes p_i = √2 [cos(ω_f i + φ_f), sin(ω_f i + φ_f)] with ω_f ~ N(0, 1/w²):
    // p_i · p_j / d ≈ exp(-(i-j)² / (2 w²)), a band of half-width ~w around the diagonal.
    const half = Math.max(1, d >> 1);
    const width = Math.max(1.5, L / 48);
    const omega = new Float64Array(half), phase = new Float64Array(half);
    for (let f = 0; f < half; f++) { omega[f] = r.normal() / width; phase[f] = 2 * Math.PI * r(); }
    const noise = 0.3, keep = Math.sqrt(1 - noise * noise);
    const code = (i, t) => {
      if (t >= 2 * half) return r.normal();  // odd d: one plain Gaussian coordinate
      const f = t >> 1, a = omega[f] * i + phase[f];
      return Math.SQRT2 * (t & 1 ? Math.sin(a) : Math.cos(a));
    };
    q = new Float32Array(L * d);
    k = new Float32Array(L * d);
    for (let i = 0; i < L; i++) {
      for (let t = 0; t < d; t++) {
        const p = code(i, t);
        q[i * d + t] = keep * p + noise * r.normal();
        k[i * d + t] = keep * p + noise * r.normal();
      }
    }
  } else {
    q = gaussianMatrix(r, L, d);
    k = gaussianMatrix(r, L, d);
  }
  for (let i = 0; i < q.length; i++) { q[i] *= scale; k[i] *= scale; }
  const v = gaussianMatrix(rng(dataSeed, 2), L, d);
  return { q, k, v };
}
