// The calls of the thread bench (bench/threads.mjs) and their inputs, also read by
// bench/work-span.mjs, which measures the same calls' work and span natively.

// Deterministic inputs: a head's rows are smooth functions of (row, column), scaled so that
// FAVOR+'s weights stay in the range real heads have.
export function tensor(dims, seed) {
  const data = new Float32Array(dims.reduce((a, b) => a * b, 1));
  let s = seed >>> 0;
  for (let i = 0; i < data.length; ++i) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    data[i] = ((s >>> 8) / 16777216 - 0.5) * 1.2;
  }
  return { data, dims };
}

// Every call's shape: d = dv = 64, and FAVOR+'s m = 256 features.
export const D = 64, DV = 64, FEATURES = 256;

// A call's q, k and v for H heads of L rows, ours and onnxruntime-web's alike (bench/lib/ort-peer.mjs
// takes one head's).
export const qkv = (H, L) => [tensor([H, L, D], 1), tensor([H, L, D], 2), tensor([H, L, DV], 3)];

export const CASES = {
  favor8: { label: 'FAVOR+, 8 heads, L = 4096', method: 'favor', H: 8, L: 4096 },
  favor8causal: { label: 'FAVOR+ causal, 8 heads, L = 4096', method: 'favor', H: 8, L: 4096, causal: true },
  favor8long: { label: 'FAVOR+, 8 heads, L = 16384', method: 'favor', H: 8, L: 16384 },
  favor1: { label: 'FAVOR+, 1 head, L = 4096', method: 'favor', H: 1, L: 4096 },
  favorSmall: { label: 'FAVOR+, 1 head, L = 128', method: 'favor', H: 1, L: 128 },
  // Calls between the small and the standard one, where the threads a call takes (one per
  // kWorkPerThread of its work, at most one per block of rows) start to pay or not.
  favorMid: { label: 'FAVOR+, 1 head, L = 1024', method: 'favor', H: 1, L: 1024 },
  exactMid: { label: 'exact, 1 head, L = 512', method: 'exact', H: 1, L: 512 },
  favor1long: { label: 'FAVOR+, 1 head, L = 65536', method: 'favor', H: 1, L: 65536 },
  favor1longOut: { label: 'the same into out', method: 'favor', H: 1, L: 65536, out: true },
  exact8: { label: 'exact, 8 heads, L = 4096', method: 'exact', H: 8, L: 4096 },
  exact1: { label: 'exact, 1 head, L = 4096', method: 'exact', H: 1, L: 4096 },
  decode8: { label: 'FAVOR+ decode, 8 heads, tokens/s', method: 'decode', H: 8, L: 1024 },
  decodeExact1: { label: 'exact decode, 1 head, tokens/s', method: 'decode', state: 'exact', H: 1, L: 1024 },
  // Weak scaling: T heads on T threads, each head as much work as one head on one thread. Below
  // 1.0x, each thread works slower when all run (clocks, caches, memory, locks, or a host that
  // shares the cores), which no split of the work can win back.
  favorWeak: { label: 'FAVOR+, T heads on T threads, L = 4096', method: 'favor', H: 'T', L: 4096, weak: true },
  exactWeak: { label: 'exact, T heads on T threads, L = 2048', method: 'exact', H: 'T', L: 2048, weak: true },
};

// Case c's call, as the thread benches make it on our module `favor` (q, k, v for its H heads).
export function caseCall(favor, featureMap, c, [q, k, v], H) {
  if (c.method === 'exact') return () => favor.exactAttention(q, k, v, { causal: !!c.causal });
  const out = c.out ? new Float32Array(H * c.L * DV) : undefined;
  return () => favor.favorAttention(q, k, v, { featureMap, causal: !!c.causal, out });
}

// A decode case's causal state.
export const stateOptions = (c, featureMap) => (c.state === 'exact' ? { method: 'exact' } : { method: 'favor', featureMap });

// onnxruntime-web's inputs for a one-head case (`ort`: the onnxruntime-web module): its graphs
// (bench/onnx) take q, k, v without the head axis, and FAVOR+'s W as an input.
export function peerFeeds(ort, c) {
  const t = (x) => new ort.Tensor('float32', x.data, x.dims.slice(-2));
  const [q, k, v] = qkv(1, c.L);
  return { q: t(q), k: t(k), v: t(v), ...(c.method === 'favor' && { w: t(tensor([FEATURES, D], 5)) }) };
}
