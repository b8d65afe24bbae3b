// Error of codebook attention (hard VQ, soft VQ, both with k-means codebooks) against FAVOR+
// (positive, orthogonal) at an equal budget m (codebook size = number of random features), on
// clustered keys and on Gaussian keys. Prints a markdown table (mean ± sd over seeds).
//   node bench/codebook-error.mjs [--seeds 5]
import { loadFavor } from 'favor-attention';

const args = process.argv.slice(2);
const seeds = Number(args[args.indexOf('--seeds') + 1]) || 5;
const L = 512, d = 32, budgets = [16, 64, 256], clusters = 16;

function mulberry(seed) {
  let a = seed >>> 0;
  const u = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return () => Math.sqrt(-2 * Math.log(1 - u())) * Math.cos(2 * Math.PI * u());
}

function inputs(kind, seed) {
  const n = mulberry(seed);
  const tensor = (rows, f) => ({ data: Float32Array.from({ length: rows * d }, f), dims: [rows, d] });
  const q = tensor(L, () => n());
  const v = { data: Float32Array.from({ length: L * d }, () => n()), dims: [L, d] };
  if (kind === 'gaussian') return { q, k: tensor(L, () => n()), v };
  const centers = Array.from({ length: clusters * d }, () => 1.5 * n());
  const k = tensor(L, (_, i) => centers[(Math.floor(i / d) % clusters) * d + (i % d)] + 0.15 * n());
  return { q, k, v };
}

const favor = await loadFavor();
const stats = (xs) => {
  const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
  const sd = Math.sqrt(xs.reduce((a, b) => a + (b - mean) ** 2, 0) / Math.max(1, xs.length - 1));
  return `${mean.toFixed(3)} ± ${sd.toFixed(3)}`;
};

const methods = {
  'hard VQ (k-means)': (x, m, seed) => {
    const codebook = favor.kmeans(x.k, { clusters: m, seed });
    return [favor.codebookAttentionMatrix(x.q, x.k, { codebook }), favor.codebookAttention(x.q, x.k, x.v, { codebook })];
  },
  'soft VQ (k-means, T = 1)': (x, m, seed) => {
    const codebook = favor.kmeans(x.k, { clusters: m, seed });
    const o = { codebook, assignment: 'soft', temperature: 1 };
    return [favor.codebookAttentionMatrix(x.q, x.k, o), favor.codebookAttention(x.q, x.k, x.v, o)];
  },
  'FAVOR+ (positive, orthogonal)': (x, m, seed) => {
    const featureMap = favor.createFeatureMap({ dim: d, features: m, seed });
    const r = [favor.favorAttentionMatrix(x.q, x.k, { featureMap }), favor.favorAttention(x.q, x.k, x.v, { featureMap })];
    featureMap.dispose();
    return r;
  },
};

console.log(`L = ${L}, d = ${d}, queries and values N(0, 1), scale 1/sqrt(d); ${seeds} seeds.`);
console.log(`Clustered keys: ${clusters} centers N(0, 1.5²) plus N(0, 0.15²) noise. Gaussian keys: N(0, 1).\n`);
console.log('| keys | method | m | rel. Frobenius of A | output rel. error |');
console.log('|---|---|---|---|---|');
for (const kind of ['clustered', 'gaussian']) {
  for (const [name, run] of Object.entries(methods)) {
    for (const m of budgets) {
      const fro = [], out = [];
      for (let s = 0; s < seeds; s++) {
        const x = inputs(kind, 1000 + s);
        const exact = favor.attentionMatrix(x.q, x.k), exactOut = favor.exactAttention(x.q, x.k, x.v);
        const [approx, approxOut] = run(x, m, s);
        fro.push(favor.compare(exact, approx).relFrobenius);
        out.push(favor.outputRelativeError(exactOut, approxOut));
      }
      console.log(`| ${kind} | ${name} | ${m} | ${stats(fro)} | ${stats(out)} |`);
    }
  }
}
