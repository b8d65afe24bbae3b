/// <reference lib="esnext.disposable" />
// Type declarations for favor-attention (hand-written; they mirror web/api.js exactly, and
// tests/node/operations.test.mjs checks their calls, methods and getters against web/operations.js).

/**
 * A dense row-major float32 tensor: dims [L, d], [H, L, d] or [B, H, L, d] (any rank >= 2).
 * Attention takes q [..., Hq, L, d] and k, v [..., Hkv, S, ·] with equal leading dims, except that
 * Hq may be a multiple of Hkv (grouped-query heads: query head h reads key/value head ⌊h / (Hq / Hkv)⌋).
 */
export interface Tensor {
  data: Float32Array;
  dims: number[];
}

export type Kernel = 'positive' | 'hyperbolic' | 'trigonometric' | 'relu' | 'oprf' | 'sderf' | 'aderf';
export type Sampling = 'iid' | 'orthogonal' | 'orthogonal-fixed' | 'simplex' | 'structured';

export interface LoadOptions {
  /** Where the .wasm is: a URL (browser) or a path / file: URL (Node). */
  wasmUrl?: string | URL;
  /** The .wasm bytes themselves; nothing is fetched or read. */
  wasmBinary?: ArrayBuffer | Uint8Array;
  /**
   * Maps the module's file name ('favor-relaxed.wasm', 'favor-simd.wasm' or 'favor-scalar.wasm';
   * with threads, 'favor-relaxed-threads.wasm' or 'favor-simd-threads.wasm' and, in browsers,
   * the glue 'favor-simd-threads.js') to its location.
   */
  locateFile?: (fileName: string) => string | URL;
  /**
   * Which build:
   * - 'auto' (default): the relaxed-SIMD build (fused multiply-adds) where the engine validates
   *   relaxed SIMD (Chromium >= 114, Firefox >= 146, Node >= 22), else the SIMD build, else scalar.
   * - true: a SIMD build, relaxed where available; a RangeError without WebAssembly SIMD.
   * - 'relaxed': the relaxed-SIMD build, or a RangeError.
   * - 'fixed': the plain SIMD build even where relaxed SIMD exists: its results are the same
   *   bits on every machine (relaxed_madd is fused on some CPUs and not on others, so the
   *   relaxed build's results may differ between machines in the last bits).
   * - false: the scalar build.
   * With wasmUrl or wasmBinary, the value only picks the glue (the SIMD glue for every SIMD
   * build); `info.simd` and `info.relaxedSimd` report what the module given is.
   */
  simd?: 'auto' | 'relaxed' | 'fixed' | boolean;
  /**
   * Threads started, the caller's included: 'auto' (default) = one per CPU core (at most 64), of
   * which each call uses as many as its work is worth (a small call wakes none); or an integer
   * in [1, 64], the most any call uses. More than 1 loads a pthreads build
   * (favor-relaxed-threads.wasm or favor-simd-threads.*), which needs SIMD and, in browsers, a cross-origin isolated page
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
  /**
   * Rows of the GEMM's register tile (the products of FAVOR+ and codebook attention): 'auto'
   * (the default) takes 6 rows x 2 vectors in the relaxed-SIMD build on V8 >= 13.6 (Node >= 24,
   * Chromium >= 136), whose register allocator keeps its 12 accumulators in registers (FAVOR+ at
   * L = 4096: 0.93x the time of 4 rows); 4 rows x 2 vectors in the scalar build; else 2 rows x 4
   * vectors (0.93-0.97x the time of 4 rows). Results are the same bits whichever runs;
   * `info.tileRows` says which.
   */
  tileRows?: 'auto' | 2 | 4 | 6;
  /** false (the default): the synchronous API on this thread; true: see WorkerLoadOptions. */
  worker?: false;
}

/** loadFavor({ worker: true, ... }): the same options (but locateFile), in a worker. */
export interface WorkerLoadOptions extends Omit<LoadOptions, 'worker' | 'locateFile'> {
  /**
   * Runs the module in a dedicated worker (a module Web Worker in browsers, worker_threads in
   * Node): loadFavor then resolves to a FavorAsync whose calls return Promises and never block
   * the caller's thread. In browsers the worker is dist/favor-worker.js, one self-contained
   * module started with the literal `new Worker(new URL('../dist/favor-worker.js',
   * import.meta.url), { type: 'module' })`: bundlers that understand it (Vite, in either worker
   * format; webpack) emit it with the app, and it runs as is without a bundler. A page's
   * Content-Security-Policy must allow it as worker-src. A worker that cannot start rejects
   * loadFavor with an Error saying so. Not with locateFile (a function cannot cross to the worker).
   * A worker that stops answering while it loads (Firefox can block one for good as it starts
   * its threads) is ended and replaced after 10 s of silence; after three such workers in a row
   * loadFavor rejects with an Error whose `code` is 'FAVOR_WORKER_FROZEN'.
   */
  worker: true;
  /**
   * Move input tensors' buffers to the worker instead of copying them: an input whose typed
   * array spans its whole ArrayBuffer is transferred (the caller's array is detached, also when
   * the call fails; a buffer shared by several inputs moves once). A view into a larger buffer or
   * into a SharedArrayBuffer is copied (its own bytes only) either way. Default false: copies.
   */
  transfer?: boolean;
}
export interface FavorInfo {
  readonly version: string;
  /** Whether a SIMD build runs (false: the scalar build), read from the module loaded. */
  readonly simd: boolean;
  /** Whether the relaxed-SIMD build runs (vector multiply-adds as f32x4.relaxed_madd). */
  readonly relaxedSimd: boolean;
  /**
   * Threads the instance started, the caller's included (1 = the single-threaded build): the most
   * a call uses. Each call takes as many as its work is worth, about one per 2^19 multiply-adds
   * (a causal state's append: one per key/value head worth one), so small calls and decode steps
   * wake fewer; threadsUsed() tells how many a call took.
   */
  readonly threads: number;
  /** Why threads is 1, e.g. 'requested' or 'not cross-origin isolated (…)'. */
  readonly threadsReason?: string;
  /** Rows of the GEMM's register tile in use (see LoadOptions.tileRows). */
  readonly tileRows: 2 | 4 | 6;
}

/**
 * A key mask: 1 = attend, 0 = ignore, dims [..., S]. Its leading dims broadcast against k's
 * leading dims by numpy rules ([S], [B, 1, S] and [B, H, S] all work for k of dims [B, H, S, d]).
 * A masked key is absent; a query that sees no unmasked key gets a row of zeros.
 */
export interface KeyMask {
  data: Uint8Array;
  dims: number[];
}

/**
 * options.out of the calls that return a computed tensor: the output is written into this array
 * (its length must be the output's size) and returned as the result's data, so that repeated
 * calls allocate nothing. Written only when the call succeeds (a wrong length is a RangeError,
 * found once the output's dims are known); it may be an input's array. Through the worker the
 * result comes back as usual and is copied into it.
 */
export interface OutOption {
  out?: Float32Array;
}

export interface AttentionOptions extends OutOption {
  /**
   * Causal: with L queries and S >= L keys the queries are the last L positions, so query i sees
   * keys j <= i + S - L (bottom-right alignment; L === S is the usual mask). Default false.
   */
  causal?: boolean;
  /** Score scale; default 1/sqrt(d). Finite and > 0. */
  scale?: number;
  /** Keys to ignore (see KeyMask). */
  keyMask?: KeyMask;
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
   * The orthogonal modes and 'simplex' cost O(min(m, d) m d) in double: m = d = 2048 takes ~18 s
   * in wasm. 'structured' (SORF) builds W explicitly in O(m p log p), p the power of two >= d,
   * and the map projects rows by fast Walsh-Hadamard transforms: O(m/d p log p) a row, not O(m d).
   */
  sampling?: Sampling;
  /** Integer in [0, 2^53); default 0. The same seed gives the same W everywhere. */
  seed?: number;
  /** An explicit projection W, dims [m, d]: outputs are then the estimator for exactly this W. */
  projection?: Tensor;
  /** Added to relu features; default 1e-3. */
  epsilon?: number;
  /**
   * 'oprf' only: a fixed rho = mean |q~ + k~|² for every call instead of one computed from each
   * call's inputs. Needed for a causal state; lets grouped-query heads share key features.
   */
  rho?: number;
  /**
   * 'oprf', 'sderf' and 'aderf': fix the kernel's parameters from sample queries and keys
   * (dims [..., rows, d], every row used) at attention scale `scale` (default 1/sqrt(d)), for every
   * later call, instead of computing them from each call's q and k. 'oprf' then has the rho of
   * these samples. Needed for a causal state. Not with rho.
   */
  fit?: { q: Tensor; k: Tensor; scale?: number };
}

/** What a feature map was made with (sync or worker). */
export interface FeatureMapSettings {
  readonly dim: number;
  /** m, the number of random projections. */
  readonly features: number;
  /** M, the length of phi(x): m, or 2m for 'hyperbolic' and 'trigonometric'. */
  readonly numFeatures: number;
  readonly kernel: Kernel;
  readonly sampling: Sampling;
  readonly epsilon: number;
  /** The fixed rho of an 'oprf' map, or undefined (computed per call). */
  readonly rho: number | undefined;
  /**
   * True when each call computes the kernel's parameters from its q and k ('oprf' without rho or
   * fit, 'sderf' and 'aderf' without fit): such a map cannot carry a causal state.
   */
  readonly dataDependent: boolean;
  readonly disposed: boolean;
}

export interface FeatureMap extends FeatureMapSettings {
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

export type StateMethod = 'exact' | 'favor' | 'codebook';

export type CausalStateOptions =
  /** A key/value cache: grows by (d + dv) floats per position and key/value head (up to `window` positions). */
  | {
    method: 'exact';
    scale?: number;
    /**
     * Sliding-window attention: a positive integer w. The cache keeps at most w keys per
     * key/value head, and each new query attends to the w most recent unmasked keys at positions
     * up to its own. Once full, decode steps keep `stateBytes` constant. Default: no window.
     */
    window?: number;
  }
  /** The prefix state Σφ(k)vᵀ, Σφ(k) per key/value head: the same memory at every length. The map is copied. */
  | {
    method: 'favor';
    featureMap: FeatureMap;
    scale?: number;
    chunk?: number;
    /**
     * FAVOR+ over a sliding window: a multiple of 4, w. Positions fall in blocks of w / 4 (from
     * position 0), and each new query sees the keys of its own block up to itself and of the 3
     * blocks before it (between 3w/4 + 1 and w positions): one causal favorAttention per block
     * of queries over those keys, to rounding. The state keeps, per key/value head, a prefix
     * state of the window's keys and one of each block after the window's oldest (merged into the
     * window's as a block starts), and every append runs on two of them: 4 times the per-head
     * sums (constant once 3 blocks have passed) and less than twice the work of a step. Default:
     * no window.
     */
    window?: number;
  }
  /** Running per-code sums Rᵀv, Rᵀ1: codebook [c, d] shared, or [..., Hkv, c, d] one per key/value head (copied). */
  | { method: 'codebook'; codebook: Tensor; assignment?: Assignment; temperature?: number; scale?: number; chunk?: number };

/** Causal attention one piece at a time: prefill, then decode. */
export interface CausalState {
  readonly method: StateMethod;
  /** Positions appended so far (masked ones included). */
  readonly length: number;
  /** Bytes the state holds in wasm memory (its copy of the map or codebook included). */
  readonly stateBytes: number;
  readonly disposed: boolean;
  /**
   * q [..., Hq, n, d], k [..., Hkv, n, d], v [..., Hkv, n, dv], n >= 1 new positions; returns
   * [..., Hq, n, dv]: new query i sees every earlier position and the new ones up to itself.
   * The leading dims (and d, dv) are fixed by the first append. On any error the state is unchanged.
   */
  append(q: Tensor, k: Tensor, v: Tensor, options?: AppendOptions): Tensor;
  /** Forgets every position (and the dims fixed by the first append). */
  reset(): this;
  dispose(): void;
  [Symbol.dispose](): void;
}

export interface AppendOptions extends OutOption {
  /** New keys to ignore for good: [..., n] against k's leading dims. */
  keyMask?: KeyMask;
}

export interface MatmulOptions extends OutOption {
  /** b is [m, k] (a PyTorch Linear weight) instead of [k, m]. Default false. */
  transposeB?: boolean;
  /** Added to every row: dims [m]. */
  bias?: Tensor;
}

export interface PackMatrixOptions {
  /** b is [m, k] (a PyTorch Linear weight) instead of [k, m]. Default false. */
  transposeB?: boolean;
}

/** A matrix packed by favor.packMatrix, living in wasm memory until disposed (or collected). */
export interface PackedMatrix {
  /** b's dims as given: [k, m], or [m, k] with transposeB. */
  readonly dims: number[];
  readonly transposeB: boolean;
  /** Bytes it holds in wasm memory. */
  readonly bytes: number;
  readonly disposed: boolean;
  dispose(): void;
  [Symbol.dispose](): void;
}

/** A packed matrix living in the worker. */
export interface PackedMatrixAsync {
  readonly dims: number[];
  readonly transposeB: boolean;
  readonly bytes: Promise<number>;
  readonly disposed: boolean;
  /** Frees it in the worker; resolves once freed. */
  dispose(): Promise<void>;
  [Symbol.dispose](): void;
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
   * The most threads a call has been given since the previous threadsUsed() (or since loading),
   * between 1 (it ran on the calling thread alone) and info.threads (diagnostics).
   */
  threadsUsed(): number;
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
  /** A causal state for generation (see CausalState). */
  createCausalState(options: CausalStateOptions): CausalState;
  /** a [..., n, k] times b [k, m] (or [m, k] with transposeB), plus bias: dims [..., n, m]. */
  matmul(a: Tensor, b: Tensor, options?: MatmulOptions): Tensor;
  /** With b packed once by packMatrix (its layout fixed there: no transposeB here). */
  matmul(a: Tensor, b: PackedMatrix, options?: Omit<MatmulOptions, 'transposeB'>): Tensor;
  /**
   * b [k, m] (or [m, k] with transposeB) checked and packed once in wasm memory for many
   * matmul calls (a model's weights): each call then skips checking, copying and packing b.
   * The same bits as matmul with b itself.
   */
  packMatrix(b: Tensor, options?: PackMatrixOptions): PackedMatrix;
  /** Error measures between an exact and an approximate attention matrix of equal dims. */
  compare(exact: Tensor, approx: Tensor): MatrixErrors;
  /** |approx - exact|_F / |exact|_F over two tensors of equal dims. */
  outputRelativeError(exact: Tensor, approx: Tensor): number;
}

/**
 * A feature map living in the worker of a FavorAsync. Its settings are plain properties read
 * when it is made (still readable after dispose()); everything else is a call to the worker,
 * rejected with the synchronous API's TypeError once the map is disposed. Works only with the
 * instance that made it. Dropped without dispose(), it is freed in the worker once
 * garbage-collected.
 */
export interface FeatureMapAsync extends FeatureMapSettings {
  readonly projection: Promise<Tensor>;
  redraw(seed: number): Promise<this>;
  /** Frees it in the worker; resolves once freed. Idempotent. */
  dispose(): Promise<void>;
  [Symbol.dispose](): void;
}

/** A causal state living in the worker of a FavorAsync (freed like a FeatureMapAsync). */
export interface CausalStateAsync {
  readonly method: StateMethod;
  readonly length: Promise<number>;
  readonly stateBytes: Promise<number>;
  readonly disposed: boolean;
  append(q: Tensor, k: Tensor, v: Tensor, options?: AppendOptions): Promise<Tensor>;
  reset(): Promise<this>;
  dispose(): Promise<void>;
  [Symbol.dispose](): void;
}

type WithAsyncMap<T> = Omit<T, 'featureMap'> & { featureMap: FeatureMapAsync };
export type CausalStateAsyncOptions =
  | { method: 'exact'; scale?: number; window?: number }
  | { method: 'favor'; featureMap: FeatureMapAsync; scale?: number; chunk?: number; window?: number }
  | { method: 'codebook'; codebook: Tensor; assignment?: Assignment; temperature?: number; scale?: number; chunk?: number };

/**
 * The API of loadFavor({ worker: true }): every call runs in the worker and resolves to what the
 * synchronous call returns (the same bits), or rejects with the TypeError/RangeError and message
 * it throws; no call throws synchronously. Inputs are copied when the call is made (or moved:
 * see WorkerLoadOptions.transfer); outputs are fresh arrays. If the worker ends or fails, every
 * pending and later call rejects.
 */
export interface FavorAsync {
  readonly info: FavorInfo;
  /** The worker's wasm memory (as Favor.memory()). */
  memory(): Promise<FavorMemory>;
  /** As Favor.threadsUsed(), of the calls the worker ran. */
  threadsUsed(): Promise<number>;
  /**
   * Ends the worker and frees everything in it; resolves once it has ended. Pending calls reject
   * with an Error, later calls with a TypeError. An instance dropped without dispose() (and every
   * proxy it made) ends its worker once garbage-collected and its pending calls have settled.
   */
  dispose(): Promise<void>;
  exactAttention(q: Tensor, k: Tensor, v: Tensor, options?: AttentionOptions): Promise<Tensor>;
  attentionMatrix(q: Tensor, k: Tensor, options?: AttentionOptions): Promise<Tensor>;
  createFeatureMap(options: FeatureMapOptions): Promise<FeatureMapAsync>;
  favorAttention(q: Tensor, k: Tensor, v: Tensor, options: WithAsyncMap<FavorAttentionOptions>): Promise<Tensor>;
  favorAttentionMatrix(q: Tensor, k: Tensor, options: WithAsyncMap<FavorMatrixOptions>): Promise<Tensor>;
  codebookAttention(q: Tensor, k: Tensor, v: Tensor, options: CodebookAttentionOptions): Promise<Tensor>;
  codebookAttentionMatrix(q: Tensor, k: Tensor, options: CodebookOptions): Promise<Tensor>;
  kmeans(k: Tensor, options: KMeansOptions): Promise<Tensor>;
  randomCodebook(options: RandomCodebookOptions): Promise<Tensor>;
  codebookFromFeatureMap(featureMap: FeatureMapAsync, options?: { scale?: number }): Promise<Tensor>;
  createCausalState(options: CausalStateAsyncOptions): Promise<CausalStateAsync>;
  matmul(a: Tensor, b: Tensor, options?: MatmulOptions): Promise<Tensor>;
  matmul(a: Tensor, b: PackedMatrixAsync, options?: Omit<MatmulOptions, 'transposeB'>): Promise<Tensor>;
  packMatrix(b: Tensor, options?: PackMatrixOptions): Promise<PackedMatrixAsync>;
  compare(exact: Tensor, approx: Tensor): Promise<MatrixErrors>;
  outputRelativeError(exact: Tensor, approx: Tensor): Promise<number>;
}

export declare const version: string;
export declare function loadFavor(options: WorkerLoadOptions): Promise<FavorAsync>;
export declare function loadFavor(options?: LoadOptions): Promise<Favor>;
