// The decoders bench/decode.mjs times side by side: one new position per step (q, k, v of
// H heads), after a prefill of C positions. Each decoder:
//   id, label, kind ('exact' | 'favor' | 'codebook'), notes
//   limit(C)          a reason not to run it at context C, or null
//   prefill(chunks)   appends the context: chunks of [H, n, d] tensors (q = k = v); returns ms
//   step(x)           appends one position x ([H, 1, d], q = k = v), returns the output [H, dv]
//   stateBytes()      what it keeps between steps (null: not known)
//   dispose()
// The onnxruntime-web decoders run graphs from bench/onnx (generate.py): a user of onnxruntime
// feeds the key/value cache (or the FAVOR+ state) in and gets it back each step, so every step
// copies it into the wasm heap and out again; that is part of what is timed.
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { ortMessage } from './methods.mjs';

const onnxDir = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'onnx');

// createCausalState's options for a method: 'favor' takes the map, 'codebook' the codebook.
export const stateOptions = (method, { featureMap, codebook }) =>
  (method === 'favor' ? { method, featureMap } : method === 'codebook' ? { method, codebook } : { method });

// Our createCausalState (method 'exact': a key/value cache; 'favor': the prefix state; 'codebook').
export function oursDecoder(favor, { method, featureMap, codebook, H, d }) {
  let state = null;
  const threads = favor.info.threads;
  const name = { favor: 'FAVOR+ state', exact: 'exact (KV cache)', codebook: 'codebook state' }[method];
  return {
    id: `ours-${method}${threads > 1 ? `-${threads}t` : ''}`,
    label: `ours: ${name}${threads > 1 ? `, ${threads} threads` : ''}`,
    kind: method,
    notes: `createCausalState({ method: '${method}' })${method === 'favor' ? ', positive orthogonal W' : ''}${method === 'codebook' ? `, hard assignment, a [${codebook.dims}] codebook` : ''}; append(q, k, v) of [${H}, 1, ${d}]`,
    // An exact cache is filled through append, which is causal exact attention over the
    // prefix: O(C²) (~9 TFLOP at 128k, minutes here).
    limit: (C) => (method === 'exact' && C > 16384 ? 'its prefill through append is causal exact attention over the context, O(C²): not run beyond 16,384; per-token time predicted by a linear fit' : null),
    async prefill(chunks) {
      state?.dispose();
      state = favor.createCausalState(stateOptions(method, { featureMap, codebook }));
      const t0 = performance.now();
      for (const x of chunks) state.append(x, x, x);
      return performance.now() - t0;
    },
    async step(x) { return state.append(x, x, x).data; },
    stateBytes: () => state.stateBytes,
    dispose() { state?.dispose(); state = null; },
  };
}

async function session(ort, name) {
  return ort.InferenceSession.create(path.join(onnxDir, `${name}.onnx`), { executionProviders: ['wasm'], graphOptimizationLevel: 'all' });
}
const run = async (s, feeds) => {
  try { return await s.run(feeds); } catch (e) { throw new Error(ortMessage(e)); }
};

// Exact attention with past/present key and value: our graph (Concat, MatMul, Softmax, MatMul)
// or onnxruntime's fused MultiHeadAttention with past_key / past_value.
export async function ortExactDecoder(ort, { fused, H, d }) {
  const s = await session(ort, fused ? 'decode-mha' : 'decode-exact');
  const T = (data, dims) => new ort.Tensor('float32', data, dims);
  const xDims = fused ? [1, 1, H * d] : [1, H, 1, d];
  let pastK = null, pastV = null;
  return {
    id: fused ? 'ort-mha' : 'ort-exact',
    label: fused ? 'onnxruntime-web: MultiHeadAttention with past' : 'onnxruntime-web: exact graph with past',
    kind: 'exact',
    notes: fused
      ? 'com.microsoft.MultiHeadAttention, num_heads 8, past_key/past_value [1, 8, T, 64] in, present_* out (bench/onnx/decode-mha.onnx)'
      : 'Concat(past, new) → MatMul → Softmax → MatMul, past [1, 8, T, 64] in, present out (bench/onnx/decode-exact.onnx)',
    limit: () => null,
    // The cache holds keys and values only: it is built from the chunks directly (no attention).
    async prefill(chunks) {
      const C = chunks.reduce((n, x) => n + x.dims[1], 0);
      const past = new Float32Array(H * C * d);
      let at = 0;
      for (const x of chunks) {
        const n = x.dims[1];
        for (let h = 0; h < H; ++h) past.set(x.data.subarray(h * n * d, (h + 1) * n * d), (h * C + at) * d);
        at += n;
      }
      pastK = T(past, [1, H, C, d]);
      pastV = pastK;  // q = k = v in this benchmark; onnxruntime copies each input in
      return 0;
    },
    async step(x) {
      const r = await run(s, { q: T(x.data, xDims), k: T(x.data, xDims), v: T(x.data, xDims), past_k: pastK, past_v: pastV });
      pastK = r.present_k;
      pastV = r.present_v;
      return r.out.data;
    },
    stateBytes: () => (pastK ? pastK.data.byteLength + pastV.data.byteLength : null),
    dispose() { pastK = pastV = null; },
  };
}

// The FAVOR+ prefix state as graph inputs and outputs (s = Σφ(k)vᵀ, z = Σφ(k), the key shift c).
export async function ortFavorDecoder(ort, { W, H, d, m }) {
  const s = await session(ort, 'decode-favor');
  const T = (data, dims) => new ort.Tensor('float32', data, dims);
  const w = T(W, [m, d]);
  let state = null;
  const append = async (q, k) => {
    const n = k.dims[1];
    const r = await run(s, { q: T(q.data, [H, 1, d]), k: T(k.data, [H, n, d]), v: T(k.data, [H, n, d]), w, ...state });
    state = { s: r.s_out, z: r.z_out, c: r.c_out };
    return r.out.data;
  };
  return {
    id: 'ort-favor',
    label: 'onnxruntime-web: FAVOR+ state graph',
    kind: 'favor',
    notes: 'state s [8, 256, 64], z [8, 256, 1], key shift c [8, 1, 256] in and out; the same W (bench/onnx/decode-favor.onnx)',
    limit: () => null,
    async prefill(chunks) {
      state = { s: T(new Float32Array(H * m * d), [H, m, d]), z: T(new Float32Array(H * m), [H, m, 1]), c: T(new Float32Array(H * m).fill(-Infinity), [H, 1, m]) };
      const t0 = performance.now();
      for (const x of chunks) {
        // The graph answers one query; a prefill only needs the state (any H·d floats will do).
        await append({ data: x.data.subarray(0, H * d) }, x);
      }
      return performance.now() - t0;
    },
    async step(x) { return append(x, x); },
    stateBytes: () => (state ? state.s.data.byteLength + state.z.data.byteLength + state.c.data.byteLength : null),
    dispose() { state = null; },
  };
}
