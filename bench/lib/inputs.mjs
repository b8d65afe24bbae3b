// Deterministic benchmark inputs and the output comparison used before anything is timed.

// sigma * N(0, 1) float32 values from a seeded counter-free generator (mulberry32 + Box-Muller).
export function gaussian(count, seed, sigma = 1) {
  const out = new Float32Array(count);
  let a = (seed * 0x9e3779b1) >>> 0;
  const uniform = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (((t ^ (t >>> 14)) >>> 0) + 0.5) / 4294967296;
  };
  for (let i = 0; i < count; i += 2) {
    const r = sigma * Math.sqrt(-2 * Math.log(uniform()));
    const phi = 2 * Math.PI * uniform();
    out[i] = r * Math.cos(phi);
    if (i + 1 < count) out[i + 1] = r * Math.sin(phi);
  }
  return out;
}

// Relative Frobenius difference |a - b| / |b| and max |a - b| / max |b| (b the reference),
// in double; Infinity if the lengths differ or a value is not finite.
export function difference(a, b) {
  if (a.length !== b.length) return { rel: Infinity, maxRel: Infinity };
  let num = 0, den = 0, maxDiff = 0, maxRef = 0;
  for (let i = 0; i < a.length; ++i) {
    const diff = a[i] - b[i];
    if (!Number.isFinite(diff)) return { rel: Infinity, maxRel: Infinity };
    num += diff * diff;
    den += b[i] * b[i];
    maxDiff = Math.max(maxDiff, Math.abs(diff));
    maxRef = Math.max(maxRef, Math.abs(b[i]));
  }
  return { rel: Math.sqrt(num / den), maxRel: maxDiff / maxRef };
}

// softmax(q.k / sqrt(d)) v of one query over key and value rows (arrays of vectors), in float64.
export function softmaxRow(q, keys, values) {
  const d = q.length, dv = values[0].length;
  const scores = keys.map((k) => { let s = 0; for (let i = 0; i < d; ++i) s += q[i] * k[i]; return s / Math.sqrt(d); });
  const top = scores.reduce((a, b) => Math.max(a, b), -Infinity);
  let z = 0;
  const acc = new Float64Array(dv);
  values.forEach((v, j) => { const w = Math.exp(scores[j] - top); z += w; for (let i = 0; i < dv; ++i) acc[i] += w * v[i]; });
  return acc.map((x) => x / z);
}

export function median(xs) {
  const s = [...xs].sort((x, y) => x - y);
  const n = s.length;
  return n % 2 ? s[(n - 1) / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
}

// Floating-point operations counted for GFLOP/s (stated in BENCHMARKS.md):
//   exact: 4 L S d (Q K^T and A V), half of it when causal;
//   FAVOR+: 2 (L + S) m d (features) + 4 L m dv (K'^T V and the readout), causal or not.
export function flops(kind, causal, { L, d, dv, m }) {
  const S = L;
  if (kind === 'exact') return (causal ? 2 : 4) * L * S * d;
  return 2 * (L + S) * m * d + 4 * L * m * dv;
}
