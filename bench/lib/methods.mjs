// The implementations that `npm run bench` times side by side. Each method:
//   id, label, short, version, notes
//   limit({ kind, causal, L })  a reason not to run that kernel at that size, or null
//   prepare(cell)           places one size's inputs (not timed); cell = { L, d, dv, m, q, k, v, w, featureMap, file }
//   output(kind, causal)    one call, returns the output Float32Array (L x dv), used for the equality check
//   time(kind, causal)      one call, returns its wall time in ms
//   release()               frees the size's inputs
// and optionally:
//   differs(kind)           why this method's kernel is not the same computation as ours (then
//                           its output is compared with exact attention and reported, not gated)
//   growth(kind)            the exponent of L in its time (default: 2 exact, 1 FAVOR+), for the
//                           predicted-time limit
//   ceiling, threads        which ceiling (bench/lib/ceiling.mjs: 'wasm', 'sse', ...) its GFLOP/s
//                           are read against, times threads (our builds only)
// kind is 'exact' or 'favor' (FAVOR+, positive features, the cell's W).
import { existsSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { nativeCeiling } from './ceiling.mjs';
import { NativeProcess } from './native.mjs';

// A method's time(kind, causal): the wall time of one call (awaited when it returns a promise).
export function timed(call) {
  return async (kind, causal) => {
    const t0 = performance.now();
    const result = call(kind, causal);
    if (result instanceof Promise) await result;
    return performance.now() - t0;
  };
}

const require = createRequire(import.meta.url);
const here = path.dirname(fileURLToPath(import.meta.url));
export const CHUNK = 128;  // the chunk of the causal FAVOR+ peer graphs (bench/onnx/generate.py)

// The installed version of a package (read from its folder: not every package exports ./package.json).
function packageVersion(name) {
  let dir = path.dirname(require.resolve(name));
  while (!existsSync(path.join(dir, 'package.json')) || JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')).name !== name) {
    const up = path.dirname(dir);
    if (up === dir) return 'unknown';
    dir = up;
  }
  return JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')).version;
}

// favor-attention's wasm build through its public JS API (copies inputs into the heap and the
// output out on every call, like any user call).
export async function oursWasm(favor, { id = 'ours', label = 'favor-attention (wasm)', short = 'ours wasm', ceiling = 'wasm', threads = 1, crossover = false } = {}) {
  let cell = null;
  const call = (kind, causal) => {
    const { q, k, v } = cell;
    return kind === 'exact'
      ? favor.exactAttention(q, k, v, { causal })
      : favor.favorAttention(q, k, v, { featureMap: cell.featureMap, causal });
  };
  return {
    id, label, short, ours: true, ceiling, threads, crossover, favor,
    version: favor.info.version,
    notes: `SIMD ${favor.info.simd}${favor.info.relaxedSimd ? ' (relaxed SIMD: f32x4.relaxed_madd)' : ''}, threads ${favor.info.threads}`,
    async prepare(c) {
      cell = { ...c, q: { data: c.q, dims: [c.L, c.d] }, k: { data: c.k, dims: [c.L, c.d] }, v: { data: c.v, dims: [c.L, c.dv] } };
      // A feature map belongs to one instance: another one gets its own with the same W.
      if (id !== 'ours') cell.featureMap = favor.createFeatureMap({ projection: { data: c.w, dims: [c.m, c.d] } });
    },
    async output(kind, causal) { return call(kind, causal).data; },
    time: timed(call),
    async release() {
      if (id !== 'ours') cell?.featureMap.dispose();
      cell = null;
    },
    close() { favor.dispose(); },
  };
}

// The native build of the same core (bench/native), as a long-lived process.
export async function native({ id, label, short, binary, ceiling = null }) {
  const proc = new NativeProcess(binary);
  const info = await proc.info();
  let cell = null;
  return {
    id, label, short, ours: true, ceiling, threads: 1,
    version: 'same sources',
    notes: info,
    async prepare(c) {
      cell = c;
      await proc.load(c.file, { L: c.L, S: c.L, d: c.d, dv: c.dv, m: c.m });
    },
    async output(kind, causal) {
      const out = `${cell.file}.${id}.out`;
      await proc.dump(kind, causal, out);
      const bytes = await readFile(out);
      return new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
    },
    async time(kind, causal) { return (await proc.run(kind, causal, 1))[0]; },
    measureCeiling: () => nativeCeiling(proc),
    async release() { cell = null; },
    close() { proc.close(); },
  };
}

async function loadOrt() {
  const ort = await import('onnxruntime-web');
  ort.env.wasm.numThreads = 1;
  ort.env.logLevel = 'error';
  return ort;
}

// onnxruntime's errors carry its build machine's source path: keep the file name and the message.
export const ortMessage = (e) => `${e?.message ?? e}`.replace(/\/\S*\/([\w.-]+:\d+)/g, '$1');

// onnxruntime-web, wasm backend, one thread, graphs from bench/onnx (generate.py).
export async function onnxruntime() {
  const ort = await loadOrt();
  const sessions = {};
  for (const name of ['exact-bidirectional', 'exact-causal', 'favor-bidirectional', 'favor-causal']) {
    sessions[name] = await ort.InferenceSession.create(path.join(here, '..', 'onnx', `${name}.onnx`),
      { executionProviders: ['wasm'], graphOptimizationLevel: 'all' });
  }
  let feeds = null;  // { exact: { q, k, v }, favor: { q, k, v, w } }
  const call = async (kind, causal) => (await sessions[`${kind}-${causal ? 'causal' : 'bidirectional'}`].run(feeds[kind])).out.data;
  return {
    id: 'ort',
    label: 'onnxruntime-web (wasm, 1 thread)',
    short: 'onnxruntime-web',
    version: packageVersion('onnxruntime-web'),
    notes: `ort.env.wasm.numThreads = 1, SIMD build (ort-wasm-simd-threaded.wasm), graphOptimizationLevel 'all'`,
    limit(c) {
      if (c.kind === 'favor' && c.causal && c.L % CHUNK) return `L not a multiple of ${CHUNK}`;
      return null;
    },
    async prepare(c) {
      const t = (data, dims) => new ort.Tensor('float32', data, dims);
      const exact = { q: t(c.q, [c.L, c.d]), k: t(c.k, [c.L, c.d]), v: t(c.v, [c.L, c.dv]) };
      feeds = { exact, favor: { ...exact, w: t(c.w, [c.m, c.d]) } };
    },
    output: call,
    time: timed(call),
    async release() { feeds = null; },
  };
}

// onnxruntime-web's fused attention op, com.microsoft.MultiHeadAttention (bench/onnx/mha-*.onnx):
// what a user who exports a model with onnxruntime's transformer optimizer runs. Exact only.
export async function onnxruntimeMha() {
  const ort = await loadOrt();
  const sessions = {};
  for (const causal of [false, true]) {
    sessions[causal] = await ort.InferenceSession.create(path.join(here, '..', 'onnx', `mha-${causal ? 'causal' : 'bidirectional'}.onnx`),
      { executionProviders: ['wasm'], graphOptimizationLevel: 'all' });
  }
  let feeds = null;
  const call = async (kind, causal) => {
    try {
      return (await sessions[causal].run(feeds)).out.data;
    } catch (e) {
      throw new Error(ortMessage(e));
    }
  };
  return {
    id: 'ortmha',
    label: 'onnxruntime-web, fused MultiHeadAttention op (wasm, 1 thread)',
    short: 'ort MultiHeadAttention',
    version: packageVersion('onnxruntime-web'),
    notes: 'com.microsoft.MultiHeadAttention (contrib op, CPU kernel), num_heads 1, inputs (1, L, 64); causal: unidirectional = 1; numThreads 1',
    limit(c) { return c.kind === 'favor' ? 'no FAVOR+ op' : null; },
    async prepare(c) {
      const t = (data, dims) => new ort.Tensor('float32', data, dims);
      feeds = { q: t(c.q, [1, c.L, c.d]), k: t(c.k, [1, c.L, c.d]), v: t(c.v, [1, c.L, c.dv]) };
    },
    output: call,
    time: timed(call),
    async release() { feeds = null; },
  };
}

// TensorFlow.js with the wasm backend (SIMD, one thread); the same formulas as the ONNX graphs.
export async function tfjs() {
  const tf = await import('@tensorflow/tfjs-core');
  const wasm = await import('@tensorflow/tfjs-backend-wasm');
  wasm.setWasmPaths(path.dirname(require.resolve('@tensorflow/tfjs-backend-wasm/package.json')) + '/dist/');
  tf.env().set('WASM_HAS_MULTITHREAD_SUPPORT', false);
  wasm.setThreadsCount(1);
  if (!(await tf.setBackend('wasm'))) throw new Error('tfjs: the wasm backend did not initialize');
  await tf.ready();
  const simd = tf.env().getBool('WASM_HAS_SIMD_SUPPORT');
  let c = null, tensors = [];
  let q, k, v, w, mask, tril;
  const keep = (t) => { tensors.push(t); return t; };

  function exact(causal) {
    const maskTensor = causal ? causalMask() : null;  // outside tidy: it must outlive the call
    return tf.tidy(() => {
      let s = tf.matMul(tf.mul(q, 1 / Math.sqrt(c.d)), k, false, true);
      if (causal) s = tf.add(s, maskTensor);
      return tf.matMul(tf.softmax(s), v);
    });
  }
  // The causal exact mask (-inf above the diagonal) is built once per L, at the first (untimed,
  // checked) call, and kept on the backend like a model constant.
  function causalMask() {
    if (!mask) {
      const m = new Float32Array(c.L * c.L);
      for (let i = 0; i < c.L; ++i) m.fill(-Infinity, i * c.L + i + 1, (i + 1) * c.L);
      mask = keep(tf.tensor2d(m, [c.L, c.L]));
    }
    return mask;
  }
  function favor(causal) {
    return tf.tidy(() => {
      const root = c.d ** -0.25;
      const qs = tf.mul(q, root), ks = tf.mul(k, root);
      const klog = tf.sub(tf.matMul(ks, w, false, true), tf.mul(tf.sum(tf.square(ks), 1, true), 0.5));
      const shift = tf.max(klog, 0, true);  // [1, m] per-feature key max
      const kf = tf.exp(tf.sub(klog, shift));
      const qw = tf.add(tf.matMul(qs, w, false, true), shift);
      const qf = tf.exp(tf.sub(qw, tf.max(qw, 1, true)));
      if (!causal) {
        const num = tf.matMul(qf, tf.matMul(kf, v, true, false));
        const den = tf.matMul(qf, tf.sum(kf, 0, true), false, true);
        return tf.div(num, den);
      }
      const n = c.L / CHUNK;
      const qc = tf.reshape(qf, [n, CHUNK, c.m]), kc = tf.reshape(kf, [n, CHUNK, c.m]);
      const vc = tf.reshape(v, [n, CHUNK, c.dv]);
      const block = tf.mul(tf.matMul(qc, kc, false, true), tril);
      const state = tf.cumsum(tf.matMul(kc, vc, true, false), 0, true);  // exclusive prefix
      const zsum = tf.cumsum(tf.sum(kc, 1, true), 0, true);              // [n, 1, m]
      const num = tf.add(tf.matMul(block, vc), tf.matMul(qc, state));
      const den = tf.add(tf.sum(block, 2, true), tf.matMul(qc, zsum, false, true));
      return tf.reshape(tf.div(num, den), [c.L, c.dv]);
    });
  }
  const call = (kind, causal) => {
    const out = kind === 'exact' ? exact(causal) : favor(causal);
    const data = out.dataSync();
    out.dispose();
    return data;
  };
  return {
    id: 'tfjs',
    label: 'TensorFlow.js wasm backend (SIMD, 1 thread)',
    short: 'tfjs-wasm',
    version: `tfjs-core ${tf.version_core}, tfjs-backend-wasm ${packageVersion('@tensorflow/tfjs-backend-wasm')}`,
    notes: `WASM_HAS_SIMD_SUPPORT ${simd}, WASM_HAS_MULTITHREAD_SUPPORT false, threads ${wasm.getThreadsCount()}`,
    limit(cell) {
      if (cell.kind === 'favor' && cell.causal && cell.L % CHUNK) return `L not a multiple of ${CHUNK}`;
      return null;
    },
    async prepare(cell) {
      c = cell;
      q = keep(tf.tensor2d(c.q, [c.L, c.d]));
      k = keep(tf.tensor2d(c.k, [c.L, c.d]));
      v = keep(tf.tensor2d(c.v, [c.L, c.dv]));
      w = keep(tf.tensor2d(c.w, [c.m, c.d]));
      const t = new Float32Array(CHUNK * CHUNK);
      for (let i = 0; i < CHUNK; ++i) t.fill(1, i * CHUNK, i * CHUNK + i + 1);
      tril = keep(tf.tensor2d(t, [CHUNK, CHUNK]));
    },
    async output(kind, causal) { return call(kind, causal); },
    time: timed(call),
    async release() {
      for (const t of tensors) t.dispose();
      tensors = [];
      mask = null;
    },
  };
}
