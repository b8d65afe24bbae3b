// Types of model/runner.js: a character-level transformer (train/models) run on favor-attention's
// public API.
import type { Favor, FeatureMap, Tensor } from '../web/index.js';

/** One record of train/models/manifest.json. */
export interface ModelRecord {
  name: string;
  title: string;
  /** What the model was trained with: 'softmax' or 'favor' (causal FAVOR+ with `projections`). */
  attention: 'softmax' | 'favor';
  file: string;
  bytes: number;
  sha256: string;
  architecture: {
    vocab: number; width: number; layers: number; heads: number; context: number; mlp: number;
    headDim: number; layerNormEps: number;
    /** Positions: learned embeddings ('pos', ending at context) or rotary (no 'pos' tensor). */
    positions?: 'learned' | 'rotary';
    /** Rotary positions on q and k: angle p base^(-2i/d) for the pair (x[i], x[i + d/2]). */
    rotary?: { base: number; [key: string]: unknown };
    [key: string]: unknown;
  };
  /** The vocabulary: character i is token i. */
  vocab: string;
  tensors: { name: string; dims: number[]; offset: number; dtype: 'float16' }[];
  training: Record<string, unknown>;
  heldOutBpc: number;
  heldOutWindows: number;
  /** Rotary models: bits/char of the first `chars` held-out characters, each from its whole prefix (torch, float64). */
  firstCharsBpc?: { chars: number; bpc: number };
  /** Training curves: mean training bits/char since the last point, held-out bits/char on fixed windows. */
  curve?: { every: number; heldOutWindows: number; points: { step: number; trainBpc: number; heldOutBpc: number }[] };
  evalSubset: { windows: number; window: number; stride: number; start: number };
  evalSubsetBpc: number;
  /** A Performer's W per layer, dims [m, headDim] (shared by the layer's heads): the last draw of training, a sample, not a trained parameter. */
  projections?: { layer: number; dims: [number, number]; dtype: 'float32'; data: number[] }[];
}

/** The attention of every layer. */
export type AttentionSpec =
  | { method: 'exact' }
  /** Each position sees the last `window` positions (itself included): a sliding window. */
  | { method: 'exact'; window: number }
  | { method: 'favor'; featureMaps: FeatureMap[] }
  | { method: 'favor'; featureMap: FeatureMap }
  /**
   * FAVOR+ over a sliding window (a multiple of 4): positions in blocks of window / 4, each
   * seeing its own block's keys up to itself and the 3 blocks' before; in forward() and in
   * generation alike (a FAVOR+ causal state with this window).
   */
  | { method: 'favor'; featureMaps: FeatureMap[]; window: number }
  | { method: 'codebook'; clusters: number; assignment?: 'hard' | 'soft' | 'gaussian'; temperature?: number; seed?: number };

export interface LayerQKV { q: Tensor; k: Tensor; v: Tensor }

export interface ForwardResult {
  /** [L, vocab]: row i predicts character i + 1. */
  logits: Tensor;
  /** With { capture: true }: each layer's q, k, v, dims [heads, L, headDim]. */
  qk: LayerQKV[] | null;
}

/** The RangeError for a weights file of `received` bytes where the manifest says record.bytes. */
export declare function modelSizeError(record: ModelRecord, received: number, file?: string | URL): RangeError;
/**
 * Checks a weights file against its manifest record (size, then SHA-256) before anything runs on
 * it; resolves to bytes, rejects with a RangeError naming the file. sha256 defaults to SubtleCrypto.
 */
export declare function verifyModelFile(record: ModelRecord, bytes: Uint8Array,
  options?: { file?: string | URL; sha256?: (bytes: Uint8Array) => string | Promise<string> }): Promise<Uint8Array>;
export declare function halfToFloat(bytes: Uint8Array): Float32Array;
export declare function logSoftmax(row: ArrayLike<number>): Float64Array;
export declare function oprfRho(q: Tensor, k: Tensor, scale?: number): number;
/** Per head of k [H, L, d]: the mean over rows i of the mean ‖k̃ⱼ − k̄ᵢ‖² over the keys j <= i (k̃ = k·scale^½). */
export declare function causalKeySpread(k: Tensor, scale?: number): Float64Array;
/** The same per row, [H, L] flattened: row i's mean ‖k̃ⱼ − k̄ᵢ‖² over the keys j <= i. */
export declare function causalKeySpreadRows(k: Tensor, scale?: number): Float64Array;

/** Generation one character at a time through one causal state per layer (CharModel.startGeneration). */
export declare class Generation {
  /** Positions in the states (the prefill's and every character appended). */
  readonly length: number;
  /** Bytes the states hold, summed over layers. */
  readonly stateBytes: number;
  /** Draws the next character (appending the previous one first); logits: the row it was drawn from. */
  next(): { id: number; char: string; logits: Float32Array };
  /** Frees the states and the maps made for them. */
  dispose(): void;
}

export declare class CharModel {
  constructor(favor: Favor, record: ModelRecord, bytes: Uint8Array | ArrayBuffer);
  readonly favor: Favor;
  readonly record: ModelRecord;
  readonly vocab: string;
  readonly chars: string[];
  readonly index: Map<string, number>;
  readonly projections: Tensor[];
  readonly layers: number;
  readonly heads: number;
  /** The training context: where learned positions end; rotary positions go on past it. */
  readonly context: number;
  /** true for learned positions (texts past `context` run in windows, generation stops there), false for rotary. */
  readonly positionsEnd: boolean;
  /** Frees the weights linear() packed into wasm memory (a collected model frees them eventually). */
  dispose(): void;
  /** Characters to token ids (a character outside the vocabulary is a RangeError). */
  encode(text: string): number[];
  /** FeatureMaps of the Performer's exported W, one per layer (dispose them). */
  exportedFeatureMaps(): FeatureMap[];
  /**
   * Rotary models run any length in one pass; with learned positions, texts longer than `context`
   * run in windows (stride context / 2) and capture needs L <= context.
   */
  forward(input: string | ArrayLike<number>, spec?: AttentionSpec, options?: { capture?: boolean }): ForwardResult;
  /** Non-overlapping windows of context + 1 characters, as train/train.py's held-out figures. */
  bitsPerChar(text: string, spec?: AttentionSpec): { bitsPerChar: number; characters: number };
  /** Bits of each character of text[1..] from everything before it: text.length - 1 entries. */
  positionBits(text: string, spec?: AttentionSpec): Float64Array;
  top(logits: Tensor, row: number, k?: number): { char: string; p: number }[];
  topK(logits: Tensor, row: number, k?: number): { char: string; p: number }[];
  /** A generation after prefix: the prefill now, then one character per next(). */
  startGeneration(prefix: string | ArrayLike<number>, spec?: AttentionSpec, options?: { seed?: number; temperature?: number }): Generation;
  /**
   * Continues prefix by n characters through one causal state per layer (prefill, then one
   * position per append). With learned positions it stops at `context` positions in all (the
   * prefix is cut to its last context - n characters); a rotary model goes on.
   */
  generate(prefix: string, n: number, spec?: AttentionSpec, options?: { seed?: number; temperature?: number; logits?: boolean }):
    { text: string; charsPerSecond: number; logits?: Float32Array[] };
}
