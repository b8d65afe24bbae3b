// The network's pieces outside attention and the dense layers, in plain JS: heads split and
// merged, rotary positions, layer norm, GELU, log-softmax, the sampler's seeded generator, and
// OPRF's rho from a layer's q and k.

const tensor = (data, dims) => ({ data, dims });

// [L, H * hd] rows -> [H, L, hd] heads, taking columns [offset, offset + H hd) of a [L, stride] matrix.
export function splitHeads(x, L, stride, offset, H, hd) {
  const out = new Float32Array(H * L * hd);
  for (let i = 0; i < L; i++)
    for (let h = 0; h < H; h++) out.set(x.subarray(i * stride + offset + h * hd, i * stride + offset + (h + 1) * hd), (h * L + i) * hd);
  return tensor(out, [H, L, hd]);
}

// [H, L, hd] -> [L, H hd]
export function mergeHeads(y, L, H, hd) {
  const out = new Float32Array(L * H * hd);
  for (let h = 0; h < H; h++)
    for (let i = 0; i < L; i++) out.set(y.subarray((h * L + i) * hd, (h * L + i + 1) * hd), i * H * hd + h * hd);
  return out;
}

// Rotary positions (train/model.py's `rotary`): the halves (x1, x2) of each head vector become
// (x1 cos - x2 sin, x1 sin + x2 cos) at angles p base^(-2i/d); angles, cos and sin in double.
export class RotaryTable {
  constructor(dim, base) {
    this.half = dim >> 1;
    this.inv = Float64Array.from({ length: this.half }, (_, i) => base ** (-2 * i / dim));
    this.cos = new Float32Array(0);
    this.sin = new Float32Array(0);
  }

  // cos and sin for positions [0, end)
  reach(end) {
    const have = this.cos.length / this.half;
    if (end <= have) return;
    const size = Math.max(end, 2 * have, 1024), half = this.half;
    const cos = new Float32Array(size * half), sin = new Float32Array(size * half);
    cos.set(this.cos), sin.set(this.sin);
    for (let p = have; p < size; p++) {
      for (let i = 0; i < half; i++) {
        const a = p * this.inv[i];
        cos[p * half + i] = Math.cos(a);
        sin[p * half + i] = Math.sin(a);
      }
    }
    this.cos = cos, this.sin = sin;
  }

  // x [H, L, d] in place, row i at position position0 + i
  rotate(x, position0) { return this.turn(x, position0, 1); }

  // The inverse: rotate's x back from it (what a rotary model's q and k were before the rotation).
  unrotate(x, position0) { return this.turn(x, position0, -1); }

  turn(x, position0, sign) {
    const [H, L, d] = x.dims, half = this.half, data = x.data;
    this.reach(position0 + L);
    for (let h = 0; h < H; h++) {
      for (let i = 0; i < L; i++) {
        const row = (h * L + i) * d, t = (position0 + i) * half;
        for (let c = 0; c < half; c++) {
          const x1 = data[row + c], x2 = data[row + half + c], cs = this.cos[t + c], sn = sign * this.sin[t + c];
          data[row + c] = x1 * cs - x2 * sn;
          data[row + half + c] = x1 * sn + x2 * cs;
        }
      }
    }
    return x;
  }
}

export function layerNorm(x, rows, width, weight, bias, eps) {
  const out = new Float32Array(x.length);
  for (let i = 0; i < rows; i++) {
    let mean = 0;
    for (let c = 0; c < width; c++) mean += x[i * width + c];
    mean /= width;
    let variance = 0;
    for (let c = 0; c < width; c++) variance += (x[i * width + c] - mean) ** 2;
    const inv = 1 / Math.sqrt(variance / width + eps);
    for (let c = 0; c < width; c++) out[i * width + c] = (x[i * width + c] - mean) * inv * weight[c] + bias[c];
  }
  return out;
}

// GELU, tanh form: 0.5 v (1 + tanh u) written as v sigmoid(2u), which needs one Math.exp where
// Math.tanh took half as long again, and keeps its digits where tanh u is near -1.
export function geluTanh(x) {
  const k = 2 * Math.sqrt(2 / Math.PI);
  for (let i = 0; i < x.length; i++) {
    const v = x[i];
    x[i] = v / (1 + Math.exp(-k * (v + 0.044715 * v * v * v)));
  }
  return x;
}

/** log-softmax of one row of logits, in double. */
export function logSoftmax(row) {
  let top = -Infinity;
  for (const x of row) top = Math.max(top, x);
  let sum = 0;
  for (const x of row) sum += Math.exp(x - top);
  const lse = top + Math.log(sum);
  return Float64Array.from(row, (x) => x - lse);
}

/** mulberry32: the seeded generator of sampling. */
export function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// The spread of the keys each query sees, per head of k [H, L, d]: the mean over rows i of the
// mean of ‖k̃ⱼ − k̄ᵢ‖² over the keys j <= i (k̄ᵢ their mean), k̃ = k·scale^½ (scale = 1/√d: k̃ =
// k/d^¼, as q̃ and k̃ of FAVOR+). Random features misjudge the ratio of two keys' weights in a row
// by a factor whose logarithm has variance ‖k̃ⱼ − k̃ₗ‖², so this is what their error follows
// (docs/models.md).
export function causalKeySpread(k, scale = 1 / Math.sqrt(k.dims.at(-1))) {
  const [H, L] = k.dims, rows = causalKeySpreadRows(k, scale), out = new Float64Array(H);
  for (let h = 0; h < H; h++) {
    let sum = 0;
    for (let i = 0; i < L; i++) sum += rows[h * L + i];
    out[h] = sum / L;
  }
  return out;
}

// The same per row [H, L]: row i's mean ‖k̃ⱼ − k̄ᵢ‖² over j <= i.
export function causalKeySpreadRows(k, scale = 1 / Math.sqrt(k.dims.at(-1))) {
  const [H, L, d] = k.dims;
  const out = new Float64Array(H * L), sum = new Float64Array(d);
  for (let h = 0; h < H; h++) {
    sum.fill(0);
    let squares = 0;
    for (let i = 0; i < L; i++) {
      let centre = 0;
      for (let c = 0; c < d; c++) {
        const x = k.data[(h * L + i) * d + c];
        sum[c] += x;
        squares += x * x;
        centre += (sum[c] / (i + 1)) ** 2;
      }
      out[h * L + i] = scale * (squares / (i + 1) - centre);
    }
  }
  return out;
}

/** OPRF's rho = mean over (i, j) of |q~_i + k~_j|^2 (x~ = x scale^1/2), averaged over heads; q, k [H, n, d]. */
export function oprfRho(q, k, scale = 1 / Math.sqrt(q.dims.at(-1))) {
  const [H, n, d] = [q.dims[0], q.dims[1], q.dims[2]], S = k.dims[1];
  let rho = 0;
  for (let h = 0; h < H; h++) {
    const mq = new Float64Array(d), mk = new Float64Array(d);
    let sq = 0, sk = 0;
    for (let i = 0; i < n; i++) for (let c = 0; c < d; c++) { const x = q.data[(h * n + i) * d + c]; sq += x * x; mq[c] += x / n; }
    for (let j = 0; j < S; j++) for (let c = 0; c < d; c++) { const x = k.data[(h * S + j) * d + c]; sk += x * x; mk[c] += x / S; }
    let dot = 0;
    for (let c = 0; c < d; c++) dot += mq[c] * mk[c];
    rho += scale * (sq / n + sk / S + 2 * dot);
  }
  return rho / H;
}
