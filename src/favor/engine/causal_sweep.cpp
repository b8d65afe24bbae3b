#include "favor/engine/causal_sweep.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <utility>

#include "favor/kernels/gemm.hpp"
#include "favor/parallel.hpp"
#include "favor/threads/thread_plan.hpp"
#include "favor/kernels/vector_math.hpp"

namespace favor {

namespace {

// What a causal sweep needs of its segment's keys, computed before the sweep (in parallel with
// the other segments of its wave): its key chunks, and, folded in order, the segment's own key
// state before each chunk, the chunk's features at the fold's running shift, and the state of
// all its keys. Computing these once, rather than once for the prefixes and again in the sweep,
// is what lets causal attention use several threads without doing more work.
//
// The chunks' states, features and column max lie in a few blocks per segment, not a few per
// chunk: a wave's folds on many threads would otherwise allocate ~5 blocks a chunk at once (and
// the caller free them all after the sweeps), in wasm through an allocator that serves every
// thread under one lock.
struct SegmentKeys {
  Index rows = 0, chunk = 0, features = 0, dv = 0;
  // The first key chunk whole (logs and values: the sweep's per-row path reads them there), the
  // others empty, or only their values where made before the fold (keep_made).
  std::vector<KeyChunk> chunks;
  bool made = false;   // the key chunks were made before the fold (keep_made)
  Matrix column_max;   // row c: chunk c's column max
  // Chunk c's rows of the segment: its features at the fold's running shift (its logs until the
  // fold, where made before it).
  Matrix kept;
  Matrix before_kv;    // rows [c M, (c + 1) M): kv of the segment's own keys before chunk c
  Matrix before_sums;  // rows 2c, 2c + 1: that state's k_sum and shift
  PrefixState total;

  SegmentKeys(Index rows, Index chunk, Index features, Index dv)
      : rows(rows), chunk(chunk), features(features), dv(dv), chunks(static_cast<std::size_t>(count())) {}
  Index count() const { return (rows + chunk - 1) / chunk; }
  Index rows_of(Index c) const { return std::min(chunk, rows - c * chunk); }
  // Sized on the thread that fills them first (the fold's), or before a fold by feature blocks.
  void allocate() {
    const Index C = count();
    column_max.resize(C, features), kept.resize(rows, features);
    before_kv.resize(C * features, dv), before_sums.resize(2 * C, features);
  }
  // Features [r0, r0 + state's) of the state before chunk c.
  void keep_before(Index c, const PrefixState& state, Index r0) {
    const Index F = state.shift.size();
    before_kv.middleRows(c * features + r0, F) = state.kv;
    before_sums.row(2 * c).segment(r0, F) = state.k_sum.transpose();
    before_sums.row(2 * c + 1).segment(r0, F) = state.shift.transpose();
  }
  // Chunk c's keys made before the fold, in parallel across chunks (a wave of fewer segments than
  // threads), kept where the fold takes them: their logs in the chunk's rows of `kept`, their
  // column max in `column_max`, so that the fold's threads do not each allocate (and the caller
  // free) a block a chunk; their values in chunks[c]; chunk 0 whole besides.
  void keep_made(Index c, KeyChunk k) {
    kept.middleRows(c * chunk, k.log.rows()) = k.log;
    column_max.row(c) = k.column_max.transpose();
    if (c == 0) chunks[0] = std::move(k);
    else chunks[static_cast<std::size_t>(c)].value = std::move(k.value);
  }
  // Features [r0, r0 + F) of chunk c's keys made before the fold (key_columns of the whole chunk).
  KeyChunk made_columns(Index c, Index r0, Index F) const {
    KeyChunk k;
    k.log = kept.block(c * chunk, r0, rows_of(c), F);
    const Matrix& value = chunks[static_cast<std::size_t>(c)].value;
    if (value.size()) k.value = value.middleCols(r0, F);
    k.column_max = column_max.row(c).segment(r0, F).transpose();
    return k;
  }
  PrefixView before(Index c) const {
    return {&before_kv(c * features, 0), &before_sums(2 * c, 0), &before_sums(2 * c + 1, 0), features, dv};
  }
  const KeyChunk* whole(Index c) const {
    const KeyChunk& k = chunks[static_cast<std::size_t>(c)];
    return k.log.size() ? &k : nullptr;
  }
};

// Folds the keys of a segment that starts at row `begin` in order, keeping what the sweep needs;
// makes each key chunk as it goes unless it was made already. The sweep reads a chunk's logs only
// where its per-row path runs: in the call's first chunk (nothing carried before it), or where
// keys jump far above those before them. So the first chunk of a segment keeps them and the
// others only their column max (the logs were a third of what a segment kept); the rare chunk
// that needs more makes them again (ChunkKeys). With `v_top`, the max |v| of the rows it makes
// chunks of goes there (causal_factored_attention).
void fold_segment(SegmentKeys& segment, const FactorBlock& keys, ConstMatrixRef v, Index begin, float* v_top) {
  if (!segment.made) segment.allocate();
  PrefixState state = empty_prefix_state(segment.features, v.cols());
  for (Index c = 0; c < segment.count(); ++c) {
    const Index j0 = begin + c * segment.chunk, n = segment.rows_of(c);
    KeyChunk k = segment.made ? segment.made_columns(c, 0, segment.features) : key_chunk(keys, segment.features, j0, n);
    if (v_top && !segment.made) *v_top = std::max(*v_top, max_abs_rows(v, j0, j0 + n));
    segment.keep_before(c, state, 0);
    if (!segment.made) segment.column_max.row(c) = k.column_max.transpose();
    const bool first = c == 0 && !segment.made;  // its logs kept whole: a copy of them folded
    segment.kept.middleRows(c * segment.chunk, n) =
        fold_chunk(state, first ? Matrix(k.log) : std::move(k.log), k, v.middleRows(j0, n));
    if (first) segment.chunks[0] = std::move(k);
  }
  segment.total = std::move(state);
}

// fold_segment by feature blocks (kFeatureQuantum), with more threads than segments: what a
// block folds goes to its rows of the segment's states and its columns of the chunks' features
// (the total sized for every feature first), each block's features replacing its logs there.
// The key chunks are made already (keep_made).
void fold_segment_block(SegmentKeys& segment, Index r0, Index F, ConstMatrixRef v, Index begin) {
  PrefixState state = empty_prefix_state(F, v.cols());
  for (Index c = 0; c < segment.count(); ++c) {
    const Index j0 = begin + c * segment.chunk, n = segment.rows_of(c);
    KeyChunk k = segment.made_columns(c, r0, F);
    segment.keep_before(c, state, r0);
    segment.kept.block(c * segment.chunk, r0, n, F) = fold_chunk(state, std::move(k.log), k, v.middleRows(j0, n));
  }
  set_feature_rows(segment.total, state, r0);
}

// What the sweep of one chunk needs besides its queries: the chunk's keys (their column max, and
// their logs and values where kept: else `source` makes them again, the same bits, in the rare
// chunk that needs them), their features at the fold's running shift (`kept`), the state of the
// segment's own keys before the chunk (`own`) and that of every key before the segment (`prefix`).
struct ChunkKeys {
  const KeyChunk* whole;
  Eigen::Ref<const Vector> column_max;
  ConstMatrixRef kept;
  PrefixView own;
  const PrefixState& prefix;
  const FactorBlock& source;
};

// A sweep's scratch, reused from chunk to chunk.
struct SweepScratch {
  PrefixState state;
  Matrix numerator, local;
  Vector denominator;
  FloatBuffer gemm;
  SweepScratch(Index chunk, Index dv) : numerator(chunk, dv), local(chunk, chunk), denominator(chunk) {}
};

// What a segment keeps for its sweeps (SegmentKeys): each chunk's state before it, features and
// column max.
double segment_bytes(Index chunks, Index chunk, Index features, Index dv) {
  return 4.0 * static_cast<double>(chunks) * static_cast<double>(features * (dv + 3) + chunk * features);
}

// The chunk's own keys j <= i: numerator += (masked qf kf^T) vs, denominator += its row sums.
// local is the n x n (or larger) scratch of the masked block.
void add_in_chunk(const Matrix& qf, ConstMatrixRef kf, Index n, ConstMatrixRef vs, Matrix& local, FloatBuffer& scratch,
                  Matrix& numerator, Vector& denominator) {
  auto block = local.topLeftCorner(n, n);
  gemm::gemm_nt_lower(n, n, qf.cols(), qf.data(), qf.outerStride(), kf.data(), kf.outerStride(), block.data(),
                      block.outerStride(), scratch);
  block.triangularView<Eigen::StrictlyUpper>().setZero();
  // numerator += block vs, each row tile summing only up to its last row (the rest are zeros)
  gemm::gemm_lower(n, vs.cols(), n, block.data(), block.outerStride(), 1, vs.data(), vs.outerStride(),
                   numerator.data(), numerator.outerStride(), true);
  for (Index i = 0; i < n; ++i) denominator(i) += vec::sum(&block(i, 0), n);
}

// Decode: L <= chunk new rows continuing a carried state, in one pass at one shift, on the state
// in place (see StateStep). The usual case of the causal sweep below (the keys at most e^20 above
// the state's shift, no denominator underflow); returns false otherwise, with the state as it was
// and no output written that the general path does not rewrite.
bool carried_chunk(const std::vector<QueryHead>& heads, const FactorBlock& keys, Index features, ConstMatrixRef v,
                   StateStep& step) {
  constexpr float kNear = 20.0f, kUnderflow = 1e-30f;
  const Index n = v.rows(), dv = v.cols();
  const Vector& shift = step.carried_shift();
  const Index M = shift.size();
  if (!(vec::max(shift.data(), M) > -std::numeric_limits<float>::infinity())) return false;  // nothing carried yet
  KeyChunk k = key_chunk(keys, features, 0, n);
  if (vec::max_difference(k.column_max.data(), shift.data(), M) > kNear) return false;
  step.rescale_in_place(joined_shift(shift, k.column_max));  // (shift now refers to the new one)
  Matrix kf = shifted_keys(std::move(k.log), shift, k.value);
  Matrix numerator(n, dv), local(n, n);
  Vector denominator(n);
  FloatBuffer scratch;
  for (const QueryHead& head : heads) {
    FactoredFeatures f = prepared(head.factors(0, n), "q");
    Vector row_scale;
    const Matrix qf = shifted_queries(std::move(f.exponent), f.value, n, shift, row_scale);
    step.readout(qf, numerator, denominator.data());
    add_in_chunk(qf, kf, n, v, local, scratch, numerator, denominator);
    if (!(denominator.array().abs() >= kUnderflow).all()) {
      step.rollback();
      return false;
    }
    write_rows(head.out, 0, numerator, denominator, n);
  }
  step.accumulate_at_commit(std::move(kf), v);
  return true;
}

// Causal rows [i0, i0 + n), one chunk of a segment, from its keys (see ChunkKeys). Nothing
// carries from one chunk to the next but the scratch: any cut of a segment gives the same bits.
bool sweep_chunk(const FactorBlock& queries, const ChunkKeys& keys, Index features, ConstMatrixRef v, MatrixRef out,
                 Index i0, Index n, SweepScratch& s) {
  // Usual case: the chunk's keys are at most e^kNear above the carried state's per-feature
  // shift. Then the state is rescaled to the combined shift (by factors
  // >= e^-kNear) and every row is computed at one shift: each row sees, through the state, the
  // key that set the old shift, so its dominant visible term is >= e^-2kNear of its scale and
  // float keeps it. Otherwise (the first chunk, a chunk whose keys jump far above the earlier
  // ones, or a denominator that underflowed anyway) the rows see the carried state at its own
  // shift and the chunk's keys j <= i at the chunk's shift, combined per row in log space; rows
  // whose visible in-chunk terms sit far below the chunk's shift are redone exactly in double.
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  constexpr float kMaxGap = 40.0f;     // dominant terms >= e^-40 keep full float precision
  constexpr float kNear = kMaxGap / 2;
  constexpr float kUnderflow = 1e-30f;  // a denominator below this has lost its digits
  const auto vs = v.middleRows(i0, n);
  KeyChunk made;
  const auto whole_keys = [&]() -> const KeyChunk& {
    if (keys.whole) return *keys.whole;
    if (!made.log.size()) made = key_chunk(keys.source, features, i0, n);
    return made;
  };
  const Vector chunk_shift = keys.column_max;
  const PrefixView& own = keys.own;
  const PrefixState& prefix = keys.prefix;
  PrefixState& state = s.state;
  Matrix& numerator = s.numerator;
  Vector& denominator = s.denominator;
  // numerator/denominator rows = the chunk's keys j <= i through `block` plus the state through qf.
  auto in_chunk = [&](const Matrix& qf, ConstMatrixRef kf, Index n, ConstMatrixRef vs) {
    add_in_chunk(qf, kf, n, vs, s.local, s.gemm, numerator, denominator);
  };
  const FactoredFeatures qfac = prepared(queries(i0, n), "q");
  // The state of every key before i0: prefix + the segment's own keys before the chunk.
  // (its shift is -inf only before the first chunk: masked logs are the lowest float)
  const Vector carried_shift = joined_shift(prefix.shift, own.shift);
  const Index M = carried_shift.size();
  const bool carries = vec::max(carried_shift.data(), M) > kNegInf;
  const bool near = carries && vec::max_difference(chunk_shift.data(), carried_shift.data(), M) <= kNear;
  // The chunk's key features at `shift`: the fold's (at fold_shift) as they are, or rescaled
  // by exp(fold_shift - shift) <= 1 per column, or, below fold_shift, from their logs.
  const Vector fold_shift = joined_shift(own.shift, chunk_shift);
  Matrix recomputed;
  auto key_features = [&](const Vector& shift) -> ConstMatrixRef {
    const ConstMatrixRef& kept = keys.kept;
    if (shift == fold_shift) return kept;
    if ((shift.array() < fold_shift.array()).any()) {
      const KeyChunk& k = whole_keys();
      return recomputed = shifted_keys(k.log, shift, k.value);
    }
    Vector factor(shift.size());
    vec::rescale_factors(factor.data(), fold_shift.data(), shift.data(), shift.size());
    recomputed.resize(kept.rows(), kept.cols());
    for (Index i = 0; i < kept.rows(); ++i)
      vec::multiply(&recomputed(i, 0), kept.row(i).data(), factor.data(), kept.cols());
    return recomputed;
  };
  if (near) {
    // The carried state straight at the combined shift (one rescale).
    merge_into(prefix, own, state, &chunk_shift);
    const Vector& shift = state.shift;
    const ConstMatrixRef kf = key_features(shift);
    Vector row_scale;
    const Matrix qf = shifted_queries(qfac.exponent, qfac.value, n, shift, row_scale);
    readout(qf, state, numerator, denominator.data());
    in_chunk(qf, kf, n, vs);
    if ((denominator.head(n).array().abs() >= kUnderflow).all()) {
      return write_rows(out, i0, numerator, denominator, n);
    }
  }
  merge_into(prefix, own, state);  // the carried state at its own shift
  const ConstMatrixRef kf = key_features(chunk_shift);
  // In-chunk part.
  Vector intra_scale;
  const Matrix qf = shifted_queries(qfac.exponent, qfac.value, n, chunk_shift, intra_scale);
  numerator.topRows(n).setZero();
  denominator.head(n).setZero();
  in_chunk(qf, kf, n, vs);
  Matrix intra_num = numerator.topRows(n);
  Vector intra_den = denominator.head(n);
  // Rows whose visible keys are far below the chunk shift (or whose denominator underflowed):
  // exact, in double.
  // The query's log magnitudes, masked where its value is 0 (only kernels with values need a copy).
  Matrix masked;
  if (qfac.value.size() || !qfac.exponent.size())
    masked = log_magnitude(qfac.exponent, Vector::Zero(n), qfac.value, features);
  const Matrix& query_log = masked.size() ? masked : qfac.exponent;
  const KeyChunk& whole = whole_keys();
  const Matrix &key_log = whole.log, &key_value = whole.value;
  Vector prefix_max = Vector::Constant(features, kNegInf);
  VectorD weights;
  for (Index i = 0; i < n; ++i) {
    prefix_max = prefix_max.cwiseMax(key_log.row(i).transpose());
    // over the query's weighted features: query_log is masked where its value is 0
    const float visible_scale = (query_log.row(i).transpose() + prefix_max).maxCoeff();
    // Also redone when the float denominator underflowed anyway (as in the matrix form): at
    // log magnitudes ~1e13 float cannot resolve the gap above.
    if (intra_scale(i) - visible_scale <= kMaxGap && std::abs(intra_den(i)) >= kUnderflow) continue;
    // The row's own scale, in double: its largest weight is ~1, so the denominator cannot round to 0.
    const double top = exact_weights(query_log, qfac.value, i, key_log, key_value, i + 1, weights);
    const VectorD num = vs.topRows(i + 1).cast<double>().transpose() * weights;
    const double den = weights.sum();
    // Stored relative to the float scale used to combine with the carried state. Where float
    // cannot hold the scale to within e^+-69 (|top| beyond ~1e9, where float32 logs carry no
    // digits below that anyway) the correction is dropped rather than overflow.
    const float scale = static_cast<float>(top);
    double adjust = std::isfinite(top) ? std::exp(top - static_cast<double>(scale)) : 1.0;
    if (!(adjust >= 1e-30 && adjust <= 1e30)) adjust = 1.0;
    intra_num.row(i) = (adjust * num).transpose().cast<float>();
    intra_den(i) = static_cast<float>(adjust * den);
    intra_scale(i) = scale;
  }
  // Carried-state part (when anything is carried), then the combination.
  if (carries) {
    Vector inter_scale;
    const Matrix qs = shifted_queries(qfac.exponent, qfac.value, n, state.shift, inter_scale);
    readout(qs, state, numerator, denominator.data());
    for (Index i = 0; i < n; ++i) {
      const float top = std::max(inter_scale(i), intra_scale(i));
      const float a = std::exp(inter_scale(i) - top), b = std::exp(intra_scale(i) - top);
      numerator.row(i) = a * numerator.row(i) + b * intra_num.row(i);
      denominator(i) = a * denominator(i) + b * intra_den(i);
    }
  } else {
    numerator.topRows(n) = intra_num;
    denominator.head(n) = intra_den;
  }
  return write_rows(out, i0, numerator, denominator, n);
}

// Rows [begin, end) of causal attention (whole chunks of the segment that starts at
// segment_begin), chunk by chunk, from the keys the segment's fold kept. Returns whether every
// value written is finite.
bool causal_sweep(const FactorBlock& queries, const SegmentKeys& keys, const FactorBlock& source, Index features,
                  ConstMatrixRef v, MatrixRef out, Index chunk, Index segment_begin, Index begin, Index end,
                  const PrefixState& prefix) {
  SweepScratch scratch(chunk, v.cols());
  bool finite = true;
  for (Index i0 = begin; i0 < end; i0 += chunk) {
    const Index c = (i0 - segment_begin) / chunk, n = std::min(chunk, end - i0);
    finite = sweep_chunk(queries,
                         {keys.whole(c), keys.column_max.row(c).transpose(), keys.kept.middleRows(c * chunk, n),
                          keys.before(c), prefix, source},
                         features, v, out, i0, n, scratch) &&
             finite;
  }
  return finite;
}

}  // namespace

bool causal_factored_attention(const std::vector<QueryHead>& heads, const FactorBlock& keys, Index features,
                               ConstMatrixRef v, Index chunk, Index segment, StateStep* step, float* v_top) {
  const Index H = static_cast<Index>(heads.size());
  const Index L = heads[0].out.rows(), S = v.rows();
  // A v far from 1 in the rows read so far: the call stops (see the header).
  const auto far = [v_top] { return v_top && far_binary_exponent(*v_top) != 0; };
  // The first S - L keys are seen by every query: they join the prefix state as in the
  // bidirectional fold. The last L keys are aligned with the queries.
  const Index offset = causal_offset(L, S);
  if (step && offset == 0 && L <= chunk && carried_chunk(heads, keys, features, v, *step)) return false;
  PrefixState prefix = step ? step->carried() : empty_prefix_state(features, v.cols());
  fold_range(keys, features, v, chunk, segment, 0, offset, prefix, v_top);
  if (far()) return false;
  const FactorBlock aligned = offset ? FactorBlock([&](Index j0, Index n) { return keys(j0 + offset, n); }) : keys;
  const auto va = v.bottomRows(L);
  const int threads = available_threads();
  const RegionShape region = enclosing_region();
  if (threads == 1 && (region.threads == 1 || indices_share_out(region))) {
    // Each segment starts from the state of every key before it (the prefix). One thread, where
    // no other thread could help, or where the region's heads (this one among them) share out
    // among its threads without it (indices_share_out): each segment's keys folded and swept in
    // one pass, chunk by chunk, so that nothing is kept per chunk (SegmentKeys, and its trips
    // through memory: the waves below cost up to 15% more work). The same operations on the
    // same values: the same bits.
    SweepScratch scratch(chunk, v.cols());
    bool finite = true;
    for (Index begin = 0; begin < L; begin += segment) {
      const Index end = std::min(L, begin + segment);
      PrefixState own = empty_prefix_state(features, v.cols());
      for (Index j0 = begin; j0 < end; j0 += chunk) {
        const Index n = std::min(chunk, end - j0);
        const KeyChunk k = key_chunk(aligned, features, j0, n);
        if (v_top) *v_top = std::max(*v_top, max_abs_rows(va, j0, j0 + n));
        if (far()) return false;
        Vector shift;
        const Matrix kf = fold_features(own, k.log, k, shift);  // a copy of the log
        for (const QueryHead& head : heads)
          finite = sweep_chunk(head.factors, {&k, k.column_max, kf, own, prefix, aligned}, features, va, head.out, j0,
                               n, scratch) &&
                   finite;
        fold_into(own, kf, shift, va.middleRows(j0, n));
      }
      merge(prefix, own);
    }
    if (step) step->replace_with(std::move(prefix));
    return finite;
  }
  // Several threads, or one among a region's few heads: segments in waves, first the keys of the
  // wave's segments in parallel (each keeping its chunks' states; by feature blocks when the wave
  // has fewer segments than threads), then the prefixes in segment order, then the sweeps in
  // parallel (over heads and pieces). On one thread, these regions are published for the
  // region's other threads to help with once they have no head left. Same bits for any thread
  // count or wave size, and as the one pass.
  const Index segments = (L + segment - 1) / segment;
  std::atomic<bool> finite{true};
  const Index wave = wave_segments(threads, region, segment_bytes(segment / chunk, chunk, features, v.cols()));
  for (Index w0 = 0; w0 < segments; w0 += wave) {
    const Index count = std::min(wave, segments - w0);
    const auto rows = [&](Index s) { return std::pair{(w0 + s) * segment, std::min(L, (w0 + s + 1) * segment)}; };
    // (segment, first row) every `step` rows of each segment of the wave
    const auto starts = [&](Index step) {
      std::vector<std::pair<Index, Index>> at;
      for (Index s = 0; s < count; ++s)
        for (Index b = rows(s).first; b < rows(s).second; b += step) at.emplace_back(s, b);
      return at;
    };
    std::vector<SegmentKeys> ks;
    for (Index s = 0; s < count; ++s) ks.emplace_back(rows(s).second - rows(s).first, chunk, features, v.cols());
    if (count < threads) {
      // Fewer segments than threads (short inputs, a long input's last wave): the key chunks
      // first, in parallel across chunks. Otherwise each fold makes its chunks as it goes, while
      // they are in cache.
      for (SegmentKeys& k : ks) k.allocate(), k.made = true;
      const auto key_chunks = starts(chunk);
      std::vector<float> chunk_tops(v_top ? key_chunks.size() : 0, 0.0f);
      parallel_for(static_cast<Index>(key_chunks.size()), [&](Index i) {
        const auto [s, j0] = key_chunks[static_cast<std::size_t>(i)];
        const auto [begin, end] = rows(s);
        const Index n = std::min(chunk, end - j0);
        ks[static_cast<std::size_t>(s)].keep_made((j0 - begin) / chunk, key_chunk(aligned, features, j0, n));
        if (v_top) chunk_tops[static_cast<std::size_t>(i)] = max_abs_rows(va, j0, j0 + n);
      });
      for (const float top : chunk_tops) *v_top = std::max(*v_top, top);
    }
    const FeatureBlocks plan = plan_feature_blocks(count, features, count < threads ? threads : 1, kFeatureQuantum);
    if (const Index blocks = plan.count(); blocks > 1) {
      for (SegmentKeys& k : ks) k.total = empty_prefix_state(features, v.cols());
      parallel_for(count * blocks, [&](Index t) {
        const Index b = t % blocks;
        fold_segment_block(ks[static_cast<std::size_t>(t / blocks)], plan.starts[static_cast<std::size_t>(b)], plan.width(b),
                           va, rows(t / blocks).first);
      });
    } else {
      std::vector<float> tops(static_cast<std::size_t>(count), 0.0f);
      parallel_for(count, [&](Index s) {
        fold_segment(ks[static_cast<std::size_t>(s)], aligned, va, rows(s).first,
                     v_top ? &tops[static_cast<std::size_t>(s)] : nullptr);
      });
      if (v_top)
        for (const float top : tops) *v_top = std::max(*v_top, top);
    }
    if (far()) return false;
    std::vector<PrefixState> prefixes;
    for (const SegmentKeys& k : ks) {
      prefixes.push_back(prefix);
      merge(prefix, k.total);
    }
    // Then the sweeps, in parallel, in pieces of whole chunks: segments are cut when the wave has
    // fewer than 4 per thread (short inputs, the last wave), so that every thread has work. The
    // cuts are of the rows there are: a short input's one segment is shorter than `segment`.
    // (Not kLeastRounds' 8: a piece's sweep starts from the states carried to it, and pieces of
    // a chunk or two cost 3-9% more work, which the pool model with a slow thread did not win back.)
    const Index cuts = (4 * threads + count * H - 1) / (count * H);
    const Index longest = (rows(0).second - rows(0).first + chunk - 1) / chunk;  // chunks of the wave's first segment
    const Index piece = chunk * std::max<Index>(1, (longest + cuts - 1) / cuts);
    const auto pieces = starts(piece);
    const Index P = static_cast<Index>(pieces.size());
    parallel_for(H * P, [&](Index hp) {
      const QueryHead& head = heads[static_cast<std::size_t>(hp / P)];
      const auto [s, b] = pieces[static_cast<std::size_t>(hp % P)];
      const auto [begin, end] = rows(s);
      if (!causal_sweep(head.factors, ks[static_cast<std::size_t>(s)], aligned, features, va, head.out, chunk, begin, b,
                        std::min(end, b + piece), prefixes[static_cast<std::size_t>(s)]))
        finite.store(false, std::memory_order_relaxed);
    });
  }
  if (step) step->replace_with(std::move(prefix));
  return finite;
}

}  // namespace favor
