/// <reference lib="esnext.disposable" />
// Type declarations for favor-attention (hand-written; they mirror web/api.js exactly).

/** A dense row-major float32 tensor: dims [L, d], [H, L, d] or [B, H, L, d] (any rank >= 2). */
export interface Tensor {
  data: Float32Array;
  dims: number[];
}

export type Kernel = 'positive' | 'hyperbolic' | 'trigonometric' | 'relu' | 'oprf';
export type Sampling = 'iid' | 'orthogonal' | 'orthogonal-fixed';

export interface LoadOptions {
  /** Where the .wasm is: a URL (browser) or a path / file: URL (Node). */
  wasmUrl?: string | URL;
  /** The .wasm bytes themselves; nothing is fetched or read. */
  wasmBinary?: ArrayBuffer | Uint8Array;
  /**
   * Maps the module's file name ('favor-simd.wasm' or 'favor-scalar.wasm'; with threads,
   * 'favor-simd-threads.wasm' and, in browsers, its glue 'favor-simd-threads.js') to its location.
   */
  locateFile?: (fileName: string) => string | URL;
  /** 'auto' (default) uses SIMD where the engine validates it; true requires it; false never. */
  simd?: 'auto' | boolean;
  /**
   * Threads for each call, the caller's included: 'auto' (default) = the CPU cores, at most 8
   * in Node and 4 in browsers; an integer in [1, 64]. More than 1 loads the pthreads build
   * (favor-simd-threads.*), which needs SIMD and, in browsers, a cross-origin isolated page
   * (COOP/COEP; its workers start from a blob: URL, so a Content-Security-Policy must allow
   * `worker-src blob:`); elsewhere it falls back to 1 and says why in `info.threadsReason`.
   * With wasmUrl or wasmBinary, 'auto' means 1.
   */
  threads?: 'auto' | number;
  /**
   * With more than one thread: how long (ms, default 30000) to wait for the workers to load
   * before rejecting with an Error whose `code` is 'FAVOR_LOAD_TIMEOUT' (a worker that cannot
   * load, e.g. under a Content-Security-Policy without `worker-src blob:`, would otherwise leave
   * the promise pending forever). An integer in [1, 2^31 - 1].
   */
  loadTimeout?: number;
}

export interface FavorInfo {
  readonly version: string;
  readonly simd: boolean;
  /** Threads each call uses (1 = the single-threaded build). */
  readonly threads: number;
  /** Why threads is 1, e.g. 'requested' or 'not cross-origin isolated (…)'. */
  readonly threadsReason?: string;
}

export interface AttentionOptions {
  /** Query i sees keys j <= i; needs L === S. Default false. */
  causal?: boolean;
  /** Score scale; default 1/sqrt(d). Finite and > 0. */
  scale?: number;
}

export interface FeatureMapOptions {
  /** Head dimension d (required unless projection is given). */
  dim?: number;
  /** Number of random projections m >= 1 (required unless projection is given). */
  features?: number;
  /** Default 'positive' (FAVOR+). */
  kernel?: Kernel;
  /**
   * Default 'orthogonal'. Ignored for the initial W when projection is given; used by redraw().
   * The orthogonal modes cost O(min(m, d) m d) in double: m = d = 2048 takes ~18 s in wasm.
   */
  sampling?: Sampling;
  /** Integer in [0, 2^53); default 0. The same seed gives the same W everywhere. */
  seed?: number;
  /** An explicit projection W, dims [m, d]: outputs are then the estimator for exactly this W. */
  projection?: Tensor;
  /** Added to relu features; default 1e-3. */
  epsilon?: number;
}

export interface FeatureMap {
  readonly dim: number;
  /** m, the number of random projections. */
  readonly features: number;
  /** M, the length of phi(x): m, or 2m for 'hyperbolic' and 'trigonometric'. */
  readonly numFeatures: number;
  readonly kernel: Kernel;
  readonly sampling: Sampling;
  readonly epsilon: number;
  readonly disposed: boolean;
  /** A copy of W, dims [m, d]. */
  readonly projection: Tensor;
  /** Draws a new W from `seed` with the map's sampling mode. */
  redraw(seed: number): this;
  /** Frees the wasm memory now (a garbage-collected map is freed eventually anyway). */
  dispose(): void;
  [Symbol.dispose](): void;
}

export interface FavorAttentionOptions extends AttentionOptions {
  featureMap: FeatureMap;
  /** Rows per block of the causal scan and of the feature computation; default 128, or 32 when causal. */
  chunk?: number;
}

export interface FavorMatrixOptions extends AttentionOptions {
  featureMap: FeatureMap;
}

export type Assignment = 'hard' | 'soft' | 'gaussian';

export interface CodebookOptions extends AttentionOptions {
  /** Codewords in key space: [c, d] shared by all heads, or [..., c, d] per head. */
  codebook: Tensor;
  /** 'hard' (nearest codeword, default), 'soft' (softmax(-|k~-c~|²/2T)) or 'gaussian' (exp(-|k~-c~|²/2)). */
  assignment?: Assignment;
  /** T for 'soft'; default 1. Finite and > 0. */
  temperature?: number;
}

export interface CodebookAttentionOptions extends CodebookOptions {
  /** Rows per block; default 128, or 32 when causal. */
  chunk?: number;
}

export interface KMeansOptions {
  /** Codebook size c (1 <= c <= number of keys). */
  clusters: number;
  /** Lloyd iterations at most; default 25. */
  iterations?: number;
  /** Default 0. */
  seed?: number;
}

export interface RandomCodebookOptions {
  clusters: number;
  dim: number;
  /** Default 0. */
  seed?: number;
  /** Standard deviation of the entries; default 1. */
  sigma?: number;
}

/** Diagnostics of an instance's WebAssembly memory. */
export interface FavorMemory {
  /** Size of the wasm memory in bytes: it grows as needed (up to 4 GiB) and never shrinks. */
  heapBytes: number;
  /** Bytes malloc has in use: back to the same value after every call; feature maps hold W until disposed or collected. */
  usedBytes: number;
}

export interface MatrixErrors {
  mse: number;
  relFrobenius: number;
  maxAbs: number;
  /** Mean over rows of KL(A_i || Â_i); Â entries <= 0 become 1e-12 and the row is renormalized. */
  meanRowKL: number;
}

export interface Favor {
  readonly info: FavorInfo;
  /** Current wasm memory size and bytes in use (diagnostics, e.g. for leak checks). */
  memory(): FavorMemory;
  /**
   * Ends the worker threads now and frees what they hold; the instance keeps working on one
   * thread. Optional: the workers never keep Node alive, and a page's end ends them.
   */
  dispose(): void;
  /** softmax(scale q kᵀ) v without forming the L×S matrix: dims [..., L, dv]. */
  exactAttention(q: Tensor, k: Tensor, v: Tensor, options?: AttentionOptions): Tensor;
  /** The L×S probability matrix: dims [..., L, S]. */
  attentionMatrix(q: Tensor, k: Tensor, options?: AttentionOptions): Tensor;
  createFeatureMap(options: FeatureMapOptions): FeatureMap;
  /** Linear-time random-feature attention: dims [..., L, dv]. */
  favorAttention(q: Tensor, k: Tensor, v: Tensor, options: FavorAttentionOptions): Tensor;
  /** The approximate matrix diag(Q'K'ᵀ1)⁻¹ Q'K'ᵀ (masked when causal): dims [..., L, S]. */
  favorAttentionMatrix(q: Tensor, k: Tensor, options: FavorMatrixOptions): Tensor;
  /** Transformer-VQ style attention exp(scale Q Cᵀ)(Rᵀ V) in linear time: dims [..., L, dv]. */
  codebookAttention(q: Tensor, k: Tensor, v: Tensor, options: CodebookAttentionOptions): Tensor;
  /** Its normalized L×S weight matrix: dims [..., L, S]. */
  codebookAttentionMatrix(q: Tensor, k: Tensor, options: CodebookOptions): Tensor;
  /** k-means++ then Lloyd iterations per head: keys [..., S, d] -> codebook [..., clusters, d]. */
  kmeans(k: Tensor, options: KMeansOptions): Tensor;
  /** A [clusters, dim] codebook with N(0, sigma²) entries. */
  randomCodebook(options: RandomCodebookOptions): Tensor;
  /** W / sqrt(scale): with an orthogonal-fixed positive map, 'gaussian' codebook attention equals FAVOR+. */
  codebookFromFeatureMap(featureMap: FeatureMap, options?: { scale?: number }): Tensor;
  /** Error measures between an exact and an approximate attention matrix of equal dims. */
  compare(exactMatrix: Tensor, approxMatrix: Tensor): MatrixErrors;
  /** |approx - exact|_F / |exact|_F over two tensors of equal dims. */
  outputRelativeError(exact: Tensor, approx: Tensor): number;
}

export declare const version: string;
export declare function loadFavor(options?: LoadOptions): Promise<Favor>;
