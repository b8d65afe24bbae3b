// Typed use of the whole public API of favor-attention (web/index.d.ts), resolved through the
// package's exports map. Only type-checked (tests/package/types.test.mjs), never run.
// Every `// @ts-expect-error` line is misuse that the declarations must reject; the test also
// checks that each of them is an error once the directive is removed.
import { loadFavor, version } from 'favor-attention';
import type {
  AppendOptions,
  Assignment,
  AttentionOptions,
  CausalState,
  CausalStateAsync,
  CausalStateOptions,
  CodebookAttentionOptions,
  CodebookOptions,
  Favor,
  FavorAsync,
  FavorAttentionOptions,
  FavorInfo,
  FavorMatrixOptions,
  FavorMemory,
  FeatureMap,
  FeatureMapAsync,
  FeatureMapOptions,
  Kernel,
  KeyMask,
  MatmulOptions,
  KMeansOptions,
  LoadOptions,
  MatrixErrors,
  OutOption,
  PackedMatrix,
  PackedMatrixAsync,
  RandomCodebookOptions,
  Sampling,
  StateMethod,
  Tensor,
} from 'favor-attention';

// Compile-time equality of types.
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true : false;
function expectType<T extends true>(): T | void {}

const versionString: string = version;

// loadFavor with no options and with each option.
const favor: Favor = await loadFavor();
await loadFavor({});
await loadFavor({ simd: 'auto' });
await loadFavor({ simd: true });
await loadFavor({ simd: false });
await loadFavor({ simd: 'relaxed' });
await loadFavor({ simd: 'fixed' });
// @ts-expect-error: not a build
await loadFavor({ simd: 'fast' });
await loadFavor({ wasmUrl: 'https://example.com/favor-simd.wasm' });
await loadFavor({ wasmUrl: new URL('https://example.com/favor-simd.wasm') });
await loadFavor({ wasmBinary: new ArrayBuffer(8) });
await loadFavor({ wasmBinary: new Uint8Array(8) });
await loadFavor({ locateFile: (fileName: string) => `/assets/${fileName}` });
await loadFavor({ locateFile: (fileName) => new URL(fileName, 'https://example.com/assets/') });
const allLoadOptions: LoadOptions = {
  wasmUrl: '/favor-scalar.wasm',
  wasmBinary: new Uint8Array(0),
  locateFile: (fileName) => fileName,
  simd: false,
  threads: 2,
};
await loadFavor(allLoadOptions);
await loadFavor({ threads: 'auto' });
// @ts-expect-error threads is 'auto' or a number
await loadFavor({ threads: 'all' });
await loadFavor({ threads: 4, loadTimeout: 5000 });
// @ts-expect-error loadTimeout is a number of milliseconds
await loadFavor({ loadTimeout: '5s' });
expectType<Equal<ReturnType<typeof loadFavor>, Promise<Favor>>>();

// info
const info: FavorInfo = favor.info;
const infoVersion: string = info.version;
const infoSimd: boolean = info.simd;
const infoRelaxedSimd: boolean = info.relaxedSimd;
const infoThreads: number = info.threads;
const infoThreadsReason: string | undefined = info.threadsReason;
favor.dispose();

// memory diagnostics
const memory: FavorMemory = favor.memory();
const heapBytes: number = memory.heapBytes;
const usedBytes: number = memory.usedBytes;
// @ts-expect-error memory() takes no arguments
favor.memory(true);
const threadsUsed: number = favor.threadsUsed();
// @ts-expect-error threadsUsed() is a number
const threadsUsedText: string = favor.threadsUsed();

// Tensors of rank 2, 3 and 4.
const L = 8;
const d = 4;
const q: Tensor = { data: new Float32Array(L * d), dims: [L, d] };
const k: Tensor = { data: new Float32Array(L * d), dims: [L, d] };
const v: Tensor = { data: new Float32Array(L * d), dims: [L, d] };
const batched: Tensor = { data: new Float32Array(2 * 3 * L * d), dims: [2, 3, L, d] };
const data: Float32Array = q.data;
const dims: number[] = q.dims;

// Exact attention and its matrix, with each option.
const exact: Tensor = favor.exactAttention(q, k, v);
favor.exactAttention(q, k, v, {});
favor.exactAttention(batched, batched, batched, { causal: true });
favor.exactAttention(q, k, v, { scale: 0.5 });
const attentionOptions: AttentionOptions = { causal: false, scale: 1 / Math.sqrt(d) };
favor.exactAttention(q, k, v, attentionOptions);
const matrix: Tensor = favor.attentionMatrix(q, k);
favor.attentionMatrix(q, k, { causal: true, scale: 0.25 });

// Feature maps: each kernel, each sampling mode, each option.
const kernels: Kernel[] = ['positive', 'hyperbolic', 'trigonometric', 'relu', 'oprf', 'sderf', 'aderf'];
const samplings: Sampling[] = ['iid', 'orthogonal', 'orthogonal-fixed', 'simplex', 'structured'];
for (const kernel of kernels) {
  for (const sampling of samplings) {
    favor.createFeatureMap({ dim: d, features: 16, kernel, sampling, seed: 7 }).dispose();
  }
}
const mapOptions: FeatureMapOptions = {
  dim: d,
  features: 32,
  kernel: 'relu',
  sampling: 'orthogonal',
  seed: 42,
  epsilon: 1e-3,
};
const featureMap: FeatureMap = favor.createFeatureMap(mapOptions);
const explicit = favor.createFeatureMap({
  projection: { data: new Float32Array(16 * d), dims: [16, d] },
  kernel: 'positive',
});
favor.createFeatureMap({ projection: featureMap.projection, dim: d, features: 32, sampling: 'iid' });

// FeatureMap members.
const mapDim: number = featureMap.dim;
const mapFeatures: number = featureMap.features;
const mapNumFeatures: number = featureMap.numFeatures;
const mapKernel: Kernel = featureMap.kernel;
const mapSampling: Sampling = featureMap.sampling;
const mapEpsilon: number = featureMap.epsilon;
const mapDisposed: boolean = featureMap.disposed;
const projection: Tensor = featureMap.projection;
const redrawn: FeatureMap = featureMap.redraw(3).redraw(4);
expectType<Equal<ReturnType<FeatureMap['redraw']>, FeatureMap>>();
featureMap[Symbol.dispose]();
explicit.dispose();
{
  using scoped = favor.createFeatureMap({ dim: d, features: 8 });
  favor.favorAttention(q, k, v, { featureMap: scoped });
}

// FAVOR#'s parameters fitted once to sample queries and keys (at a given scale or the default).
const fitted = favor.createFeatureMap({ dim: d, features: 16, kernel: 'sderf', fit: { q, k, scale: 0.25 } });
const dependent: boolean = fitted.dataDependent;
favor.createFeatureMap({ dim: d, features: 16, kernel: 'aderf', fit: { q, k } }).dispose();
fitted.dispose();

// Random-feature attention and its matrix, with each option.
const map = favor.createFeatureMap({ dim: d, features: 64, kernel: 'oprf', seed: 1 });
const approx: Tensor = favor.favorAttention(q, k, v, { featureMap: map });
favor.favorAttention(q, k, v, { featureMap: map, causal: true, scale: 0.5, chunk: 4 });
const favorOptions: FavorAttentionOptions = { featureMap: map, causal: false, chunk: 128 };
favor.favorAttention(batched, batched, batched, favorOptions);
const approxMatrix: Tensor = favor.favorAttentionMatrix(q, k, { featureMap: map });
const matrixOptions: FavorMatrixOptions = { featureMap: map, causal: true, scale: 1 };
favor.favorAttentionMatrix(q, k, matrixOptions);

// Codebook attention (Transformer-VQ): codebooks from k-means, at random or from a feature map.
const codebook: Tensor = favor.kmeans(k, { clusters: 4 });
const kmeansOptions: KMeansOptions = { clusters: 2, iterations: 10, seed: 3 };
const perHead: Tensor = favor.kmeans(batched, kmeansOptions);
const random: Tensor = favor.randomCodebook({ clusters: 4, dim: d });
const randomOptions: RandomCodebookOptions = { clusters: 4, dim: d, seed: 1, sigma: 0.5 };
favor.randomCodebook(randomOptions);
const fromMap: Tensor = favor.codebookFromFeatureMap(map);
favor.codebookFromFeatureMap(map, { scale: 0.5 });
const assignments: Assignment[] = ['hard', 'soft', 'gaussian'];
for (const assignment of assignments) {
  const out: Tensor = favor.codebookAttention(q, k, v, { codebook, assignment });
}
favor.codebookAttention(batched, batched, batched, { codebook: perHead });
const codebookOptions: CodebookAttentionOptions = {
  codebook: random,
  assignment: 'soft',
  temperature: 0.5,
  causal: true,
  scale: 0.5,
  chunk: 4,
};
favor.codebookAttention(q, k, v, codebookOptions);
const codebookMatrix: Tensor = favor.codebookAttentionMatrix(q, k, { codebook: fromMap });
const codebookMatrixOptions: CodebookOptions = { codebook, assignment: 'gaussian', temperature: 2, causal: false, scale: 1 };
favor.codebookAttentionMatrix(q, k, codebookMatrixOptions);

// Error measures.
const errors: MatrixErrors = favor.compare(matrix, approxMatrix);
const measures: number[] = [errors.mse, errors.relFrobenius, errors.maxAbs, errors.meanRowKL];
const relative: number = favor.outputRelativeError(exact, approx);
favor.compare(matrix, codebookMatrix);
map.dispose();

// Misuse the declarations reject.
// @ts-expect-error 'softmax' is not a Kernel
favor.createFeatureMap({ dim: d, features: 8, kernel: 'softmax' });
// @ts-expect-error fit needs its keys
favor.createFeatureMap({ dim: d, features: 8, kernel: 'sderf', fit: { q } });
// @ts-expect-error dataDependent is read-only
fitted.dataDependent = dependent;
// @ts-expect-error 'sobol' is not a Sampling
favor.createFeatureMap({ dim: d, features: 8, sampling: 'sobol' });
// @ts-expect-error favorAttention needs a featureMap
favor.favorAttention(q, k, v, { causal: true });
// @ts-expect-error favorAttention needs options (with featureMap)
favor.favorAttention(q, k, v);
// @ts-expect-error favorAttentionMatrix needs a featureMap
favor.favorAttentionMatrix(q, k, {});
// @ts-expect-error data must be a Float32Array, not number[]
favor.exactAttention({ data: [1, 2, 3, 4], dims: [2, 2] }, k, v);
// @ts-expect-error data must be a Float32Array, not a Float64Array
const wide: Tensor = { data: new Float64Array(4), dims: [2, 2] };
// @ts-expect-error exactAttention takes v
favor.exactAttention(q, k);
// @ts-expect-error unknown option
favor.exactAttention(q, k, v, { causual: true });
// @ts-expect-error causal is a boolean
favor.exactAttention(q, k, v, { causal: 'yes' });
// @ts-expect-error simd is 'auto' or a boolean
await loadFavor({ simd: 'always' });
// @ts-expect-error wasmBinary is bytes, not a number[]
await loadFavor({ wasmBinary: [0, 97, 115, 109] });
// @ts-expect-error info is read-only
favor.info.simd = false;
// @ts-expect-error features is read-only
featureMap.features = 3;
// @ts-expect-error createFeatureMap needs options
favor.createFeatureMap();
// @ts-expect-error redraw takes a seed
featureMap.redraw();
// @ts-expect-error codebookAttention needs a codebook
favor.codebookAttention(q, k, v, { assignment: 'hard' });
// @ts-expect-error 'nearest' is not an Assignment
favor.codebookAttentionMatrix(q, k, { codebook, assignment: 'nearest' });
// @ts-expect-error kmeans needs clusters
favor.kmeans(k, { iterations: 3 });
// @ts-expect-error randomCodebook needs dim
favor.randomCodebook({ clusters: 4 });

// Key masks, grouped-query heads, causal states and matmul.
const keyMask: KeyMask = { data: new Uint8Array([1, 1, 0, 1]), dims: [4] };
const maskedOut: Tensor = favor.exactAttention(q, k, v, { causal: true, keyMask });
const maskedMatrix: Tensor = favor.favorAttentionMatrix(q, k, { featureMap, keyMask });
const stateOptions: CausalStateOptions = { method: 'favor', featureMap, chunk: 16 };
const decoder: CausalState = favor.createCausalState(stateOptions);
const exactState = favor.createCausalState({ method: 'exact', scale: 0.125 });
const windowedState: CausalState = favor.createCausalState({ method: 'exact', window: 256 });
const windowedFavor: CausalState = favor.createCausalState({ method: 'favor', featureMap, window: 1024 });
const codebookState = favor.createCausalState({ method: 'codebook', codebook, assignment: 'soft', temperature: 0.5 });
const stepOut: Tensor = decoder.append(q, k, v, { keyMask });
const stateLength: number = decoder.length;
const stateBytes: number = exactState.stateBytes;
const stateMethod: StateMethod = codebookState.method;
const resetState: CausalState = decoder.reset();
decoder.dispose();
exactState[Symbol.dispose]();
const mmOptions: MatmulOptions = { transposeB: true, bias: { data: new Float32Array(2), dims: [2] } };
const product: Tensor = favor.matmul(q, k, mmOptions);
// options.out: the output written into the caller's array.
const outBuffer = new Float32Array(16);
const intoOut: Tensor = favor.exactAttention(q, k, v, { out: outBuffer });
favor.favorAttention(q, k, v, { featureMap, out: outBuffer });
favor.matmul(q, k, { transposeB: true, out: outBuffer });
const appendOptions: AppendOptions = { keyMask, out: outBuffer };
decoder.append(q, k, v, appendOptions);
const outOption: OutOption = { out: outBuffer };
// @ts-expect-error out is a Float32Array
favor.exactAttention(q, k, v, { out: new Float64Array(16) });
// @ts-expect-error out is an array, not a tensor
favor.attentionMatrix(q, k, { out: { data: outBuffer, dims: [4, 4] } });
// Packed matrices: b checked and packed once.
const packed: PackedMatrix = favor.packMatrix(k, { transposeB: true });
const packedProduct: Tensor = favor.matmul(q, packed, { bias: { data: new Float32Array(2), dims: [2] }, out: outBuffer });
const packedDims: number[] = packed.dims;
const packedBytes: number = packed.bytes;
packed.dispose();
// @ts-expect-error a packed b keeps its layout: no transposeB
favor.matmul(q, packed, { transposeB: true });
const oprfMap = favor.createFeatureMap({ dim: 4, features: 8, kernel: 'oprf', rho: 2 });
const rho: number | undefined = oprfMap.rho;
// The worker API: the same calls, as Promises.
const asyncFavor: FavorAsync = await loadFavor({ worker: true, transfer: false });
const asyncMap: FeatureMapAsync = await asyncFavor.createFeatureMap({ dim: 4, features: 8 });
const asyncOut: Tensor = await asyncFavor.favorAttention(q, k, v, { featureMap: asyncMap, causal: true });
const asyncIntoOut: Tensor = await asyncFavor.exactAttention(q, k, v, { out: outBuffer });
const asyncPacked: PackedMatrixAsync = await asyncFavor.packMatrix(k);
const asyncPackedProduct: Tensor = await asyncFavor.matmul(q, asyncPacked);
const asyncPackedBytes: number = await asyncPacked.bytes;
// @ts-expect-error the synchronous API takes its own packed matrices
favor.matmul(q, asyncPacked);
const asyncState: CausalStateAsync = await asyncFavor.createCausalState({ method: 'favor', featureMap: asyncMap });
const asyncWindowed: CausalStateAsync = await asyncFavor.createCausalState({ method: 'exact', window: 64 });
const asyncWindowedFavor: CausalStateAsync = await asyncFavor.createCausalState({ method: 'favor', featureMap: asyncMap, window: 64 });
const asyncLength: number = await asyncState.length;
const asyncProjection: Tensor = await asyncMap.projection;
const asyncMemory: FavorMemory = await asyncFavor.memory();
const asyncThreadsUsed: number = await asyncFavor.threadsUsed();
const mapFreed: Promise<void> = asyncMap.dispose();
const workerEnded: Promise<void> = asyncFavor.dispose();
// @ts-expect-error the worker API takes its own feature maps, not a synchronous one
asyncFavor.favorAttention(q, k, v, { featureMap });
// @ts-expect-error a function cannot cross to the worker
await loadFavor({ worker: true, locateFile: (file: string) => file });
// @ts-expect-error a worker API call returns a Promise, not a Tensor
const notSync: Tensor = asyncFavor.exactAttention(q, k, v);
// @ts-expect-error the synchronous API takes a synchronous FeatureMap
favor.favorAttention(q, k, v, { featureMap: asyncMap });
// @ts-expect-error a key mask holds bytes
favor.exactAttention(q, k, v, { keyMask: { data: new Float32Array(4), dims: [4] } });
// @ts-expect-error a favor state needs a feature map
favor.createCausalState({ method: 'favor' });
// @ts-expect-error a codebook state takes no window
favor.createCausalState({ method: 'codebook', codebook, window: 8 });
// @ts-expect-error a window is a number
favor.createCausalState({ method: 'exact', window: '8' });
// @ts-expect-error an exact state takes no codebook
favor.createCausalState({ method: 'exact', codebook });
// @ts-expect-error 'linear' is not a StateMethod
favor.createCausalState({ method: 'linear' });
// @ts-expect-error length is read-only
decoder.length = 3;
// @ts-expect-error append takes no causal option
decoder.append(q, k, v, { causal: true });
// @ts-expect-error transposeB is a boolean
favor.matmul(q, k, { transposeB: 1 });

export {
  intoOut, outOption, asyncIntoOut, packedProduct, packedDims, packedBytes, asyncPackedProduct, asyncPackedBytes,
  asyncOut, asyncLength, asyncProjection, asyncMemory, mapFreed, workerEnded, notSync,
  maskedOut, maskedMatrix, stepOut, stateLength, stateBytes, stateMethod, resetState, product, rho,
  versionString, infoVersion, infoSimd, infoRelaxedSimd, infoThreads, infoThreadsReason, heapBytes, usedBytes, data, dims, mapDim, mapFeatures, mapNumFeatures,
  mapKernel, mapSampling, mapEpsilon, mapDisposed, projection, redrawn, measures, relative, wide,
};
