// A character-level transformer run in JS on favor-attention's public API: dense layers through
// favor.matmul (the library's wasm SIMD GEMM), attention only through exactAttention /
// favorAttention / codebookAttention (whole texts) and createCausalState (generation). The model
// format is train/models/manifest.json (one record per model) with its float16 weights file;
// train/model.py is the same network in PyTorch. Types: model/runner.d.ts. The weights file's
// checks are weights.js, the network's plain-JS pieces (layer norm, GELU, rotary positions…)
// layers.js.
//
// Positions: learned embeddings that end at `context` (texts longer than it run in windows), or
// rotary positions (architecture.rotary: q and k of every head rotated by their absolute position
// before attention, train/model.py's `rotary`), which do not end: any length runs in one pass and
// generation goes on past the training context.
//
// Attention choices (one object for every layer):
//   { method: 'exact' }
//   { method: 'exact', window: W }                             (each position sees the last W: a
//                                                              sliding window, the cache kept at W)
//   { method: 'favor', featureMaps: [FeatureMap per layer] }   (a Performer's exported W, or fresh draws)
//   { method: 'favor', featureMap }                            (one map for every layer)
//   { method: 'favor', featureMaps, window: W }                (FAVOR+ over a sliding window: blocks
//                                                              of W / 4 positions, each position
//                                                              seeing its block up to itself and the
//                                                              3 blocks before it)
//   { method: 'codebook', clusters, assignment?, temperature?, seed? }
//                                                              (k-means codebooks per head, fitted on
//                                                              each layer's keys of the text itself)

import { RotaryTable, geluTanh, layerNorm, logSoftmax, mergeHeads, oprfRho, rng, splitHeads } from './layers.js';
import { halfToFloat, modelSizeError } from './weights.js';

export { halfToFloat, modelSizeError, verifyModelFile } from './weights.js';
export { causalKeySpread, causalKeySpreadRows, logSoftmax, oprfRho } from './layers.js';

const tensor = (data, dims) => ({ data, dims });

const mapOf = (spec, layer) => {
  const map = spec.featureMaps ? spec.featureMaps[layer] : spec.featureMap;
  if (!map) throw new RangeError(`attention: method 'favor' needs featureMaps (one per layer) or featureMap`);
  return map;
};

const checkWindow = (window) => {
  if (!(Number.isInteger(window) && window >= 4 && window % 4 === 0))
    throw new RangeError(`attention.window: FAVOR+'s window is in blocks of window / 4 positions, expected a multiple of 4 >= 4, got ${window}`);
};

export class CharModel {
  /** record: a manifest record; bytes: its weights file (Uint8Array of float16). */
  constructor(favor, record, bytes) {
    this.favor = favor;
    this.record = record;
    this.config = record.architecture;
    this.vocab = record.vocab;
    this.chars = [...record.vocab];  // token id -> character (code points)
    this.index = new Map(this.chars.map((c, i) => [c, i]));
    const u8 = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
    // The weights must lie inside the file (verifyModelFile checks it whole; a model built from
    // bytes that skipped it still fails here, naming the file, not in forward()).
    const end = Math.max(0, ...record.tensors.map((t) => t.offset + 2 * t.dims.reduce((a, b) => a * b, 1)));
    if (u8.byteLength < end) throw modelSizeError(record, u8.byteLength);
    this.w = {};
    for (const t of record.tensors) {
      const n = t.dims.reduce((a, b) => a * b, 1);
      this.w[t.name] = tensor(halfToFloat(u8.subarray(t.offset, t.offset + 2 * n)), t.dims);
    }
    this.projections = (record.projections ?? []).map((p) => tensor(Float32Array.from(p.data), p.dims));
    this.packed = new Map();  // weight name -> PackedMatrix, made by linear()
    const rotary = this.config.rotary;
    this.rotary = rotary ? new RotaryTable(this.config.width / this.config.heads, rotary.base) : null;
  }

  get layers() { return this.config.layers; }
  get heads() { return this.config.heads; }
  /** The training context: where learned positions end (rotary positions go on past it). */
  get context() { return this.config.context; }
  /** Whether positions end at `context` (learned embeddings) or not (rotary). */
  get positionsEnd() { return !this.rotary; }

  /** Characters to token ids; characters outside the vocabulary are a RangeError. */
  encode(text) {
    return Array.from(text, (c) => {
      const id = this.index.get(c);
      if (id === undefined) throw new RangeError(`text: the character ${JSON.stringify(c)} is not in the model's vocabulary`);
      return id;
    });
  }

  /** Feature maps of the Performer's exported W, one per layer (dispose them when done). */
  exportedFeatureMaps() {
    return this.projections.map((p) => this.favor.createFeatureMap({ projection: p, kernel: 'positive' }));
  }

  // Each weight is packed into wasm memory on its first use (favor.packMatrix): a generation step
  // would otherwise check, copy and pack every weight again (~40% of its time, measured in Node).
  linear(x, rows, name) {
    let packed = this.packed.get(name);
    if (!packed) {
      packed = this.favor.packMatrix(this.w[`${name}.weight`], { transposeB: true });
      this.packed.set(name, packed);
    }
    return this.favor.matmul(tensor(x, [rows, this.w[`${name}.weight`].dims[1]]), packed, { bias: this.w[`${name}.bias`] }).data;
  }

  /** Frees the weights packed in wasm memory now (collected models free them eventually). */
  dispose() {
    for (const packed of this.packed.values()) packed.dispose();
    this.packed.clear();
  }

  embed(ids, position0) {
    const C = this.config.width, x = new Float32Array(ids.length * C);
    const tok = this.w.tok.data, pos = this.w.pos?.data;
    ids.forEach((id, i) => {
      for (let c = 0; c < C; c++) x[i * C + c] = tok[id * C + c] + (pos ? pos[(position0 + i) * C + c] : 0);
    });
    return x;
  }

  // One block with attention done by attend(layer, q, k, v) -> [H, L, hd]; rows at positions
  // position0, position0 + 1, ... (rotary models rotate q and k by them; captured q, k are rotated).
  block(x, L, layer, attend, capture, position0 = 0) {
    const { width: C, heads: H, layerNormEps: eps } = this.config, hd = C / H, p = `blocks.${layer}`;
    const h = layerNorm(x, L, C, this.w[`${p}.ln1.weight`].data, this.w[`${p}.ln1.bias`].data, eps);
    const qkv = this.linear(h, L, `${p}.qkv`);
    const q = splitHeads(qkv, L, 3 * C, 0, H, hd), k = splitHeads(qkv, L, 3 * C, C, H, hd), v = splitHeads(qkv, L, 3 * C, 2 * C, H, hd);
    if (this.rotary) this.rotary.rotate(q, position0), this.rotary.rotate(k, position0);
    if (capture) capture.push({ q, k, v });
    const y = mergeHeads(attend(layer, q, k, v).data, L, H, hd);
    const a = this.linear(y, L, `${p}.proj`);
    for (let i = 0; i < x.length; i++) x[i] += a[i];
    const h2 = layerNorm(x, L, C, this.w[`${p}.ln2.weight`].data, this.w[`${p}.ln2.bias`].data, eps);
    const m = this.linear(geluTanh(this.linear(h2, L, `${p}.fc1`)), L, `${p}.fc2`);
    for (let i = 0; i < x.length; i++) x[i] += m[i];
    return x;
  }

  head(x, L) {
    const { width: C, layerNormEps: eps } = this.config;
    return this.linear(layerNorm(x, L, C, this.w['ln_f.weight'].data, this.w['ln_f.bias'].data, eps), L, 'head');
  }

  attention(spec) {
    const f = this.favor;
    if (spec.window !== undefined && (spec.method === 'exact' || spec.method === 'favor')) {
      // a sliding window: the generation's state, the whole text in one append
      return (layer, q, k, v) => {
        const owned = [], state = this.causalState(spec, layer, q, k, owned);
        try { return state.append(q, k, v); } finally { state.dispose(); owned.forEach((m) => m.dispose()); }
      };
    }
    switch (spec.method) {
      case 'exact': return (layer, q, k, v) => f.exactAttention(q, k, v, { causal: true });
      case 'favor': return (layer, q, k, v) => f.favorAttention(q, k, v, { featureMap: mapOf(spec, layer), causal: true });
      case 'codebook': return (layer, q, k, v) => {
        const codebook = f.kmeans(k, { clusters: Math.min(spec.clusters, k.dims[1]), seed: spec.seed ?? 0 });
        return f.codebookAttention(q, k, v, { codebook, assignment: spec.assignment ?? 'hard', temperature: spec.temperature, causal: true });
      };
      default: throw new RangeError(`attention.method: expected 'exact', 'favor' or 'codebook', got ${spec.method}`);
    }
  }

  /** A text (string) or token ids, as token ids. */
  ids(input) {
    return typeof input === 'string' ? this.encode(input) : Array.from(input);
  }

  /**
   * Logits [L, vocab] of a text or token ids (row i predicts position i + 1), and with
   * { capture: true } each layer's q, k and v ([H, L, hd]). A rotary model runs any length in one
   * pass. With learned positions, texts longer than `context` run in windows of `context`
   * positions with stride context / 2 (the last one ends at the text's end): the first window
   * gives rows [0, context), each later one only the rows no earlier window gave, so every row
   * after the first window sees at least context / 2 earlier characters (capture is then not
   * available).
   */
  forward(input, spec = { method: 'exact' }, { capture = false } = {}) {
    const ids = this.ids(input), L = ids.length, N = this.context, V = this.chars.length;
    if (L < 1) throw new RangeError('text: expected at least 1 character');
    if (L <= N || this.rotary) return this.forwardWindow(ids, spec, capture);
    if (capture) throw new RangeError(`forward: capture needs a text of at most ${N} characters, got ${L}`);
    const out = new Float32Array(L * V), half = N >> 1;
    for (let covered = 0, a = 0; covered < L; a = Math.min(a + half, L - N)) {
      const b = a + N, w = this.forwardWindow(ids.slice(a, b), spec, false).logits.data;
      out.set(w.subarray((covered - a) * V), covered * V);
      covered = b;
    }
    return { logits: tensor(out, [L, V]), qk: null };
  }

  forwardWindow(ids, spec, capture) {
    const L = ids.length;
    if (L < 1 || (L > this.context && !this.rotary)) throw new RangeError(`text: expected 1 to ${this.context} characters, got ${L}`);
    const attend = this.attention(spec), captured = capture ? [] : null;
    let x = this.embed(ids, 0);
    for (let layer = 0; layer < this.layers; layer++) x = this.block(x, L, layer, attend, captured);
    return { logits: tensor(this.head(x, L), [L, this.chars.length]), qk: captured };
  }

  /**
   * Mean bits per character of predicting text[1..] from its prefixes, in non-overlapping windows of
   * `context` + 1 characters (stride `context`; the first character of each window is not
   * predicted): the split train/train.py's held-out figures use. Returns { bitsPerChar, characters }.
   */
  bitsPerChar(text, spec) {
    const ids = this.encode(text);
    let bits = 0, count = 0;
    for (let a = 0; a + 1 < ids.length; a += this.context) {
      const w = ids.slice(a, a + this.context + 1);
      const { logits } = this.forward(w.slice(0, -1), spec);
      const V = this.chars.length;
      for (let i = 0; i + 1 < w.length; i++) {
        bits -= logSoftmax(logits.data.subarray(i * V, (i + 1) * V))[w[i + 1]] / Math.LN2;
        count++;
      }
    }
    return { bitsPerChar: bits / count, characters: count };
  }

  /**
   * Bits of each character of text[1..] predicted from all of the text before it, in one pass
   * (rotary models; a learned-position model runs texts longer than `context` in windows, as
   * forward()): a Float64Array of text.length - 1 entries, entry i for character i + 1.
   */
  positionBits(text, spec) {
    const ids = this.encode(text), V = this.chars.length;
    if (ids.length < 2) throw new RangeError('text: expected at least 2 characters');
    const { logits } = this.forward(ids.slice(0, -1), spec);
    return Float64Array.from({ length: ids.length - 1 }, (_, i) => -logSoftmax(logits.data.subarray(i * V, (i + 1) * V))[ids[i + 1]] / Math.LN2);
  }

  /** The k most likely next characters after row i of logits: [{ char, p }]. */
  top(logits, i, k = 5) {
    const V = this.chars.length, lp = logSoftmax(logits.data.subarray(i * V, (i + 1) * V));
    return Array.from(lp, (x, id) => ({ char: this.chars[id], p: Math.exp(x) })).sort((a, b) => b.p - a.p).slice(0, k);
  }

  /** top() under its other name. */
  topK(logits, i, k = 5) { return this.top(logits, i, k); }

  /**
   * The causal state of one layer for generation, made at the prefill (q, k: [H, n, hd]).
   * Codebook states use codebooks fitted on the prefill's keys. An 'oprf' map whose rho comes from
   * each call's inputs cannot run in a state (its parameters would depend on keys not seen yet):
   * the state gets the same W with rho fixed from the prefill (mean over heads of
   * mean |q~_i + k~_j|^2, as a whole-text call computes per head). An 'sderf' or 'aderf' map
   * without a fit likewise gets the same W fitted to the prefill's q and k, every head's rows
   * pooled (one state serves all heads). Maps made here go to `owned`. A window (exact or FAVOR+)
   * is the state's.
   */
  causalState(spec, layer, q, k, owned) {
    const f = this.favor;
    const window = spec.window !== undefined && { window: spec.window };
    if (spec.method === 'exact') return f.createCausalState({ method: 'exact', ...window });
    if (spec.method === 'codebook') {
      return f.createCausalState({ method: 'codebook', codebook: f.kmeans(k, { clusters: Math.min(spec.clusters, k.dims[1]), seed: spec.seed ?? 0 }),
        assignment: spec.assignment ?? 'hard', temperature: spec.temperature });
    }
    if (spec.method !== 'favor') throw new RangeError(`attention.method: expected 'exact', 'favor' or 'codebook', got ${spec.method}`);
    if (spec.window !== undefined) checkWindow(spec.window);
    let featureMap = mapOf(spec, layer);
    if (featureMap.kernel === 'oprf' && featureMap.rho === undefined) {
      featureMap = f.createFeatureMap({ projection: featureMap.projection, kernel: 'oprf', rho: oprfRho(q, k) });
      owned.push(featureMap);
    } else if ((featureMap.kernel === 'sderf' || featureMap.kernel === 'aderf') && featureMap.dataDependent) {
      featureMap = f.createFeatureMap({ projection: featureMap.projection, kernel: featureMap.kernel, fit: { q, k } });
      owned.push(featureMap);
    }
    return f.createCausalState({ method: 'favor', featureMap, ...window });
  }

  /**
   * A generation in progress after `prefix` (see Generation): the prefix's prefill through one
   * causal state per layer, then one character per next(). spec as forward(); states as
   * causalState(); { seed, temperature } for sampling.
   */
  startGeneration(prefix, spec = { method: 'exact' }, options = {}) {
    return new Generation(this, this.ids(prefix), spec, options);
  }

  /**
   * Continues `prefix` by n characters through causal states (one per layer): the prefix in one
   * append, then one position per append. A rotary model goes on as long as asked. Learned
   * positions end at `context`: the prefix is cut to its last (context - n) characters and
   * generation stops at `context` in all. spec as forward(); states as causalState(). Sampling:
   * seed (mulberry32) and temperature; the same seed gives the same draws for every attention.
   * Returns { text, charsPerSecond } (characters per second including the prefill), and with
   * { logits: true } the logits each character was drawn from (`logits[t]`, a Float32Array of
   * vocab entries, for character t).
   */
  generate(prefix, n, spec = { method: 'exact' }, { seed = 0, temperature = 1, logits: keep = false } = {}) {
    let ids = this.encode(prefix);
    if (!this.rotary) {
      n = Math.max(0, Math.min(n, this.context - 1));
      ids = ids.slice(-(this.context - n));
    }
    const t0 = performance.now();
    const run = new Generation(this, ids, spec, { seed, temperature });
    try {
      const out = [], rows = [];
      for (let t = 0; t < n; t++) {
        const { char, logits } = run.next();
        out.push(char);
        if (keep) rows.push(Float32Array.from(logits));
      }
      const seconds = (performance.now() - t0) / 1000;
      return { text: out.join(''), charsPerSecond: n / seconds, ...(keep && { logits: rows }) };
    } finally {
      run.dispose();
    }
  }
}

/**
 * Generation one character at a time through causal states (one per layer). The constructor runs
 * the prefill (an empty prefix starts from a space); each next() draws a character from the
 * current logits and appends the previous draw first, so n characters cost n - 1 appends.
 * `length` counts the positions in the states; `stateBytes` sums the states' bytes over layers.
 */
export class Generation {
  constructor(model, ids, spec, { seed = 0, temperature = 1 } = {}) {
    if (ids.length === 0) ids = [model.index.get(' ') ?? 0];
    if (!model.rotary && ids.length > model.context) {
      throw new RangeError(`prefix: a model with learned positions takes at most ${model.context} characters, got ${ids.length}`);
    }
    this.model = model;
    this.spec = spec;
    this.temperature = temperature;
    this.random = rng(seed);
    this.states = [];
    this.owned = [];
    this.position = 0;     // positions appended to the states
    this.pending = null;   // a drawn id not appended yet
    try {
      this.logits = this.step(ids);
    } catch (e) {
      this.dispose();
      throw e;
    }
  }

  get length() { return this.position; }
  get stateBytes() { return this.states.reduce((sum, s) => sum + s.stateBytes, 0); }

  // Appends tokens at the next positions; returns the last row of logits.
  step(tokens) {
    const model = this.model, V = model.chars.length, position0 = this.position;
    if (!model.rotary && position0 + tokens.length > model.context) {
      throw new RangeError(`generation: a model with learned positions stops at ${model.context} positions`);
    }
    const attend = (layer, q, k, v) => {
      if (!this.states[layer]) this.states[layer] = model.causalState(this.spec, layer, q, k, this.owned);
      return this.states[layer].append(q, k, v);
    };
    let x = model.embed(tokens, position0);
    for (let layer = 0; layer < model.layers; layer++) x = model.block(x, tokens.length, layer, attend, null, position0);
    this.position += tokens.length;
    return model.head(x, tokens.length).subarray((tokens.length - 1) * V);
  }

  /** The next character: { id, char, logits } (logits: the row it was drawn from, valid until the next call). */
  next() {
    if (this.pending !== null) {
      this.logits = this.step([this.pending]);
      this.pending = null;
    }
    const lp = logSoftmax(this.logits), r = this.random(), V = lp.length;
    const probs = Array.from(lp, (x) => Math.exp(x / this.temperature));
    const total = probs.reduce((a, b) => a + b, 0);
    let id = 0, acc = 0;
    for (; id < V - 1; id++) if ((acc += probs[id] / total) > r) break;
    this.pending = id;
    return { id, char: this.model.chars[id], logits: this.logits };
  }

  /** Frees the states and the maps made for them. */
  dispose() {
    for (const s of this.states) s?.dispose();
    for (const o of this.owned) o.dispose();
    this.states = [];
    this.owned = [];
  }
}
