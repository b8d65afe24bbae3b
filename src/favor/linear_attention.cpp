#include "linear_attention.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "exact_attention.hpp"
#include "gemm.hpp"
#include "parallel.hpp"
#include "validate.hpp"
#include "vector_math.hpp"

namespace favor {

namespace {

// A denominator is exactly 0 only when every weight of the row is 0 (relu features with
// epsilon 0, zero explicit features; the numerator is then 0 too and the row becomes 0) or, for
// the trigonometric kernel, by cancellation: keep its sign and move it off 0 so that no row
// becomes NaN. A small nonzero denominator is used as it is: bounding it away from 0 would
// rescale the row.
inline float guard(float den) {
  return den != 0.0f ? den : std::copysign(std::numeric_limits<float>::min(), den);
}

// The engine compares log magnitudes in float32: a factor whose log overflowed (a squared norm
// |x~|^2, a projection w.x~ or a codebook score beyond 3.4e38) or is NaN cannot be compared with
// the others, so the call reports it instead of returning a wrong row.
void check_factors(const FactoredFeatures& f, const char* side) {
  if (!detail::all_finite(f.row_log) || !detail::all_finite(f.exponent) || !detail::all_finite(f.value))
    throw_range(side, "not finite or too large for float32 features (a squared norm of a scaled row, a "
                      "projection w.x or a codebook score overflows 3.4e38); scale the inputs down");
}

// Value rows far from 1 (relu features of tiny inputs, tiny or huge explicit features) are
// scaled by a power of two (exact) to a maximum magnitude in [0.5, 1), and the factor moves into
// the row's log, where the shifts handle any range: products of values then neither underflow
// nor overflow. Rows already within [2^-21, 2^20] are left as they are.
void normalize_values(FactoredFeatures& f) {
  if (!f.value.size()) return;
  for (Index i = 0; i < f.value.rows(); ++i) {
    const int e = far_binary_exponent(f.value.row(i).cwiseAbs().maxCoeff());
    if (e == 0) continue;
    f.value.row(i) = f.value.row(i).unaryExpr([e](float x) { return std::ldexp(x, -e); });
    f.row_log(i) += static_cast<float>(e * 0.69314718055994530942);
  }
}

// Factors as the engine uses them: checked, then normalized.
FactoredFeatures prepared(FactoredFeatures&& f, const char* side) {
  check_factors(f, side);
  normalize_values(f);
  return std::move(f);
}


void check_map(const FeatureMap& map, ConstMatrixRef q) {
  if (q.cols() != map.dim())
    throw_range("q", "expected d = " + std::to_string(map.dim()) + " (the feature map's dim), got " +
                         std::to_string(q.cols()));
}

// The state's sums moved to a per-feature shift at or above its own (factors exp(old - new) <= 1).
void rescale_state(PrefixState& state, const Vector& shift) {
  if (shift == state.shift) return;
  Vector factor(shift.size());  // 0 while the state is empty
  vec::rescale_factors(factor.data(), state.shift.data(), shift.data(), shift.size());
  for (Index r = 0; r < shift.size(); ++r) {
    if (factor(r) == 1.0f) continue;
    state.kv.row(r) *= factor(r);
    state.k_sum(r) *= factor(r);
  }
  state.shift = shift;
}

// numerator = qf kv, denominator = qf k_sum: the readout of a state.
void readout(const Matrix& qf, const PrefixState& state, Matrix& numerator, float* denominator) {
  gemm::gemm(qf.rows(), state.kv.cols(), state.kv.rows(), qf.data(), qf.outerStride(), 1, state.kv.data(),
             state.kv.outerStride(), numerator.data(), numerator.outerStride(), false);
  for (Index i = 0; i < qf.rows(); ++i) denominator[i] = vec::dot(&qf(i, 0), state.k_sum.data(), qf.cols());
}

void accumulate(PrefixState& state, const Matrix& kf, ConstMatrixRef vs) {
  // kv += kf^T vs: A = kf^T read in place (row stride 1, column stride kf's), sums over the chunk's rows in order.
  gemm::gemm(kf.cols(), vs.cols(), kf.rows(), kf.data(), 1, kf.outerStride(), vs.data(), vs.outerStride(),
             state.kv.data(), state.kv.outerStride(), true);
  for (Index i = 0; i < kf.rows(); ++i) vec::add_into(state.k_sum.data(), &kf(i, 0), kf.cols());
}

// A chunk of keys as the fold takes it: log magnitudes (no shift yet), their column max, and
// the kernel's values. Chunks are independent of each other: they can be made in parallel.
struct KeyChunk {
  Matrix log, value;
  Vector column_max;
};

KeyChunk key_chunk(const FactorBlock& keys, Index features, Index j0, Index n) {
  FactoredFeatures f = prepared(keys(j0, n), "k");
  KeyChunk k;
  k.log = log_magnitude(std::move(f.exponent), f.row_log, f.value, features, k.column_max);
  k.value = std::move(f.value);
  return k;
}

// A chunk's key features at the fold's running shift: the state's shift joined with the chunk's
// column max (`shift`, set here). `log` is consumed.
Matrix fold_features(const PrefixState& state, Matrix log, const KeyChunk& k, Vector& shift) {
  shift = state.shift.cwiseMax(k.column_max);
  return shifted_keys(std::move(log), shift, k.value);
}

// Adds a chunk's features (from fold_features, at `shift`) to the state.
void fold_into(PrefixState& state, const Matrix& kf, const Vector& shift, ConstMatrixRef vs) {
  rescale_state(state, shift);
  accumulate(state, kf, vs);
}

// Adds a chunk of keys (log magnitudes `log`, consumed) to the state at its running shift;
// returns the chunk's features at the state's new shift.
Matrix fold_chunk(PrefixState& state, Matrix log, const KeyChunk& k, ConstMatrixRef vs) {
  Vector shift;
  Matrix kf = fold_features(state, std::move(log), k, shift);
  fold_into(state, kf, shift, vs);
  return kf;
}

// The state of keys [begin, end), chunk by chunk at running shifts.
PrefixState fold_keys(const FactorBlock& keys, Index features, ConstMatrixRef v, Index chunk, Index begin, Index end) {
  PrefixState state = empty_prefix_state(features, v.cols());
  for (Index j0 = begin; j0 < end; j0 += chunk) {
    const Index n = std::min(chunk, end - j0);
    KeyChunk k = key_chunk(keys, features, j0, n);
    fold_chunk(state, std::move(k.log), k, v.middleRows(j0, n));
  }
  return state;
}

// What a causal sweep needs of its segment's keys, computed before the sweep (in parallel with
// the other segments of its wave): its key chunks, and, folded in order, the segment's own key
// state before each chunk, the chunk's features at the fold's running shift, and the state of
// all its keys. Computing these once, rather than once for the prefixes and again in the sweep,
// is what lets causal attention use several threads without doing more work.
struct SegmentKeys {
  std::vector<KeyChunk> chunks;
  std::vector<Matrix> features;  // at the fold's running shift: the sweep's usual shift in the first segment
  std::vector<PrefixState> before;
  PrefixState total;
};

// Folds the keys [begin, end) of a segment in order (segment.chunks sized to its chunks),
// keeping what the sweep needs; makes each key chunk as it goes unless it was made already.
void fold_segment(SegmentKeys& segment, const FactorBlock& keys, Index features, ConstMatrixRef v, Index chunk,
                  Index begin, Index end) {
  PrefixState state = empty_prefix_state(features, v.cols());
  for (std::size_t c = 0; c < segment.chunks.size(); ++c) {
    const Index j0 = begin + static_cast<Index>(c) * chunk, n = std::min(chunk, end - j0);
    KeyChunk& k = segment.chunks[c];
    if (!k.column_max.size()) k = key_chunk(keys, features, j0, n);
    segment.before.push_back(state);
    segment.features.push_back(fold_chunk(state, k.log, k, v.middleRows(j0, n)));  // a copy of the log
  }
  segment.total = std::move(state);
}

// out = a + b, at the larger of the two shifts per feature and `floor` (out may be a).
void merge_into(const PrefixState& a, const PrefixState& b, PrefixState& out, const Vector* floor = nullptr) {
  const Index features = a.shift.size(), dv = a.kv.cols();
  Vector shift = a.shift.cwiseMax(b.shift);
  if (floor) shift = shift.cwiseMax(*floor);
  Vector fa(features), fb(features);
  vec::rescale_factors(fa.data(), a.shift.data(), shift.data(), features);
  vec::rescale_factors(fb.data(), b.shift.data(), shift.data(), features);
  out.kv.resize(features, dv);
  out.k_sum.resize(features);
  for (Index r = 0; r < features; ++r) {
    vec::axpby(&out.kv(r, 0), fa(r), &a.kv(r, 0), fb(r), &b.kv(r, 0), dv);
    out.k_sum(r) = fa(r) * a.k_sum(r) + fb(r) * b.k_sum(r);
  }
  out.shift = std::move(shift);
}

void merge(PrefixState& into, const PrefixState& from) { merge_into(into, from, into); }

void write_rows(MatrixRef out, Index i0, const Matrix& numerator, const Vector& denominator, Index n) {
  for (Index i = 0; i < n; ++i) out.row(i0 + i) = numerator.row(i) / guard(denominator(i));
}

// Rows of work per segment (rounded to whole chunks): threads fold the keys of whole segments,
// and partial states are merged in segment order, so the thread count never changes the result.
constexpr Index kSegmentRows = 2048;

// What the sweep of one chunk needs besides its queries: the chunk's keys, their features at the
// fold's running shift (`kept`), the state of the segment's own keys before the chunk (`own`)
// and that of every key before the segment (`prefix`).
struct ChunkKeys {
  const KeyChunk& keys;
  const Matrix& kept;
  const PrefixState& own;
  const PrefixState& prefix;
};

// A sweep's scratch, reused from chunk to chunk.
struct SweepScratch {
  PrefixState state;
  Matrix numerator, local;
  Vector denominator;
  FloatBuffer gemm;
  SweepScratch(Index chunk, Index dv) : numerator(chunk, dv), local(chunk, chunk), denominator(chunk) {}
};

void sweep_chunk(const FactorBlock& queries, const ChunkKeys& keys, Index features, ConstMatrixRef v, MatrixRef out,
                 Index i0, Index n, SweepScratch& s);
void causal_sweep(const FactorBlock& queries, const SegmentKeys& keys, Index features, ConstMatrixRef v,
                  MatrixRef out, Index chunk, Index segment_begin, Index begin, Index end, const PrefixState& prefix);

// Causal segments per wave, with several threads (one thread folds and sweeps a segment at a
// time): up to four per thread, so that a thread slowed down (by another process on its core)
// does not hold up the wave's end: +4-11% on 2 threads at L = 16384-65536 over one per thread.
// Bounded by what their stored keys take (SegmentKeys: ~8 MiB each at m = 256, dv = 64), never
// fewer than one per thread.
Index causal_wave(int threads, Index chunks, Index chunk, Index features, Index dv) {
  constexpr double kBudgetBytes = 128.0 * (1 << 20);
  const double segment_bytes = 4.0 * chunks * (features * (dv + 2.0) + 3.0 * chunk * features);
  const Index fit = static_cast<Index>(kBudgetBytes / segment_bytes);
  return std::clamp<Index>(fit, threads, 4 * static_cast<Index>(threads));
}

}  // namespace

Index resolve_chunk(Index chunk, bool causal) {
  if (chunk < 0) throw_range("chunk", "expected an integer >= 1 (or 0 for the default), got " + std::to_string(chunk));
  return chunk ? chunk : causal ? 32 : 128;
}

PrefixState empty_prefix_state(Index features, Index dv) {
  return {Matrix::Zero(features, dv), Vector::Zero(features),
          Vector::Constant(features, -std::numeric_limits<float>::infinity())};
}

void mask_key_factors(FactoredFeatures& f, const std::uint8_t* mask, Index row0, Index features) {
  const Index n = f.row_log.size();
  bool any = false;
  for (Index j = 0; j < n && !any; ++j) any = !mask[row0 + j];
  if (!any) return;
  if (!f.value.size()) f.value = Matrix::Ones(n, features);
  for (Index j = 0; j < n; ++j)
    if (!mask[row0 + j]) f.value.row(j).setZero();
}

FactorBlock masked_keys(FactorBlock keys, const std::uint8_t* mask, Index features) {
  if (!mask) return keys;
  return [keys = std::move(keys), mask, features](Index j0, Index n) {
    FactoredFeatures f = keys(j0, n);
    mask_key_factors(f, mask, j0, features);
    return f;
  };
}

namespace {

// The state of keys [begin, end): segments folded in parallel, merged in order into `into`.
void fold_range(const FactorBlock& keys, Index features, ConstMatrixRef v, Index chunk, Index segment,
                Index begin, Index end, PrefixState& into) {
  if (end <= begin) return;
  std::vector<PrefixState> parts(static_cast<std::size_t>((end - begin + segment - 1) / segment));
  parallel_for(static_cast<Index>(parts.size()), [&](Index s) {
    const Index b = begin + s * segment;
    parts[static_cast<std::size_t>(s)] = fold_keys(keys, features, v, chunk, b, std::min(end, b + segment));
  });
  for (const PrefixState& part : parts) merge(into, part);
}

// The chunk's own keys j <= i: numerator += (masked qf kf^T) vs, denominator += its row sums.
// local is the n x n (or larger) scratch of the masked block.
void add_in_chunk(const Matrix& qf, const Matrix& kf, Index n, ConstMatrixRef vs, Matrix& local, FloatBuffer& scratch,
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

// Decode: L <= chunk new rows continuing a carried state, in one pass at one shift, written into
// `next` (old is only read). The usual case of the causal sweep below (the keys at most e^20 above
// the state's shift, no denominator underflow); returns false otherwise, having written no output
// that the general path does not rewrite.
bool carried_chunk(const std::vector<QueryHead>& heads, const FactorBlock& keys, Index features, ConstMatrixRef v,
                   const PrefixState& old, PrefixState& next) {
  constexpr float kNear = 20.0f, kUnderflow = 1e-30f;
  const Index n = v.rows(), dv = v.cols();
  if (!(old.shift.maxCoeff() > -std::numeric_limits<float>::infinity())) return false;  // nothing carried yet
  KeyChunk k = key_chunk(keys, features, 0, n);
  if ((k.column_max - old.shift).maxCoeff() > kNear) return false;
  next.shift = old.shift.cwiseMax(k.column_max);
  Vector factor(features);
  vec::rescale_factors(factor.data(), old.shift.data(), next.shift.data(), features);
  next.kv.resize(features, dv);
  next.k_sum.resize(features);
  for (Index r = 0; r < features; ++r) {
    vec::scale_into(&next.kv(r, 0), factor(r), &old.kv(r, 0), dv);
    next.k_sum(r) = factor(r) * old.k_sum(r);
  }
  const Matrix kf = shifted_keys(std::move(k.log), next.shift, k.value);
  Matrix numerator(n, dv), local(n, n);
  Vector denominator(n);
  FloatBuffer scratch;
  for (const QueryHead& head : heads) {
    const FactoredFeatures f = prepared(head.factors(0, n), "q");
    Vector row_scale;
    const Matrix qf = shifted_queries(f.exponent, f.value, n, next.shift, row_scale);
    readout(qf, next, numerator, denominator.data());
    add_in_chunk(qf, kf, n, v, local, scratch, numerator, denominator);
    if (!(denominator.array().abs() >= kUnderflow).all()) return false;
    write_rows(head.out, 0, numerator, denominator, n);
  }
  accumulate(next, kf, v);
  return true;
}

}  // namespace

void factored_attention(const std::vector<QueryHead>& heads, const FactorBlock& keys, Index features,
                        ConstMatrixRef v, bool causal, Index chunk, const PrefixState* carried, PrefixState* next) {
  chunk = resolve_chunk(chunk, causal);
  // v far from 1 (max |v| beyond 2^+-20) is scaled by a power of two (exact) and the output scaled
  // back, so that weights times v neither underflow nor overflow: the output is linear in v.
  // (Not with a carried state: its sums hold v at the scale of earlier calls.)
  if (carried && (!next || next == carried)) throw_range("next", "a carried state needs a distinct state to write");
  if (v.size() && !carried) {
    float top = 0.0f;
    for (Index i = 0; i < v.rows(); ++i) top = std::max(top, vec::max_abs(v.row(i).data(), v.cols()));
    if (const int e = far_binary_exponent(top)) {
      const Matrix scaled = v.unaryExpr([e](float x) { return std::ldexp(x, -e); });
      factored_attention(heads, keys, features, scaled, causal, chunk);
      for (const QueryHead& h : heads) {
        MatrixRef out = h.out;
        out = out.unaryExpr([e](float x) { return std::ldexp(x, e); });
      }
      return;
    }
  }
  const Index H = static_cast<Index>(heads.size());
  const Index L = heads[0].out.rows(), S = v.rows();
  chunk = std::min(chunk, std::max(L, S));  // a larger block only costs memory
  const Index segment = chunk * std::max<Index>(1, kSegmentRows / chunk);
  if (!causal) {
    PrefixState state = empty_prefix_state(features, v.cols());
    fold_range(keys, features, v, chunk, segment, 0, S, state);
    const Index blocks = (L + chunk - 1) / chunk;
    parallel_for(H * blocks, [&](Index hb) {
      const QueryHead& head = heads[static_cast<std::size_t>(hb / blocks)];
      const Index i0 = (hb % blocks) * chunk, n = std::min(chunk, L - i0);
      FactoredFeatures f = prepared(head.factors(i0, n), "q");
      Vector row_scale;
      const Matrix qf = shifted_queries(std::move(f.exponent), f.value, n, state.shift, row_scale);
      Matrix numerator(n, state.kv.cols());
      Vector denominator(n);
      readout(qf, state, numerator, denominator.data());
      write_rows(head.out, i0, numerator, denominator, n);
    });
    return;
  }
  // Causal. The first S - L keys are seen by every query: they join the prefix state as in the
  // bidirectional fold. The last L keys are aligned with the queries.
  const Index offset = causal_offset(L, S);
  if (carried && offset == 0 && L <= chunk && carried_chunk(heads, keys, features, v, *carried, *next)) return;
  PrefixState prefix = carried ? *carried : empty_prefix_state(features, v.cols());
  fold_range(keys, features, v, chunk, segment, 0, offset, prefix);
  const FactorBlock aligned = offset ? FactorBlock([&](Index j0, Index n) { return keys(j0 + offset, n); }) : keys;
  const auto va = v.bottomRows(L);
  // Each segment starts from the state of every key before it (the prefix). Segments go in
  // waves: first the keys of the wave's segments in parallel, then the prefixes in segment order,
  // then the sweeps in parallel (over heads and pieces). Same bits for any thread count or wave size.
  const int threads = available_threads();
  if (threads == 1) {
    // One thread: each segment's keys folded and swept in one pass, chunk by chunk, so that
    // nothing is kept per chunk (SegmentKeys, ~8 MiB a segment at m = 256, and its trips through
    // memory: ~10% of the time at L = 4096). The same operations on the same values: the same bits.
    SweepScratch scratch(chunk, v.cols());
    for (Index begin = 0; begin < L; begin += segment) {
      const Index end = std::min(L, begin + segment);
      PrefixState own = empty_prefix_state(features, v.cols());
      for (Index j0 = begin; j0 < end; j0 += chunk) {
        const Index n = std::min(chunk, end - j0);
        const KeyChunk k = key_chunk(aligned, features, j0, n);
        Vector shift;
        const Matrix kf = fold_features(own, k.log, k, shift);  // a copy of the log
        for (const QueryHead& head : heads)
          sweep_chunk(head.factors, {k, kf, own, prefix}, features, va, head.out, j0, n, scratch);
        fold_into(own, kf, shift, va.middleRows(j0, n));
      }
      merge(prefix, own);
    }
    if (carried) *next = std::move(prefix);
    return;
  }
  const Index segments = (L + segment - 1) / segment;
  const Index wave = causal_wave(threads, segment / chunk, chunk, features, v.cols());
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
    std::vector<SegmentKeys> ks(static_cast<std::size_t>(count));
    for (Index s = 0; s < count; ++s)
      ks[static_cast<std::size_t>(s)].chunks.resize(static_cast<std::size_t>((rows(s).second - rows(s).first + chunk - 1) / chunk));
    if (count < threads) {
      // Fewer segments than threads (short inputs): the key chunks first, in parallel across
      // chunks. Otherwise each fold makes its chunks as it goes, while they are in cache.
      const auto key_chunks = starts(chunk);
      parallel_for(static_cast<Index>(key_chunks.size()), [&](Index i) {
        const auto [s, j0] = key_chunks[static_cast<std::size_t>(i)];
        const auto [begin, end] = rows(s);
        ks[static_cast<std::size_t>(s)].chunks[static_cast<std::size_t>((j0 - begin) / chunk)] =
            key_chunk(aligned, features, j0, std::min(chunk, end - j0));
      });
    }
    parallel_for(count, [&](Index s) {
      fold_segment(ks[static_cast<std::size_t>(s)], aligned, features, va, chunk, rows(s).first, rows(s).second);
    });
    std::vector<PrefixState> prefixes;
    for (const SegmentKeys& k : ks) {
      prefixes.push_back(prefix);
      merge(prefix, k.total);
    }
    // Then the sweeps, in parallel, in pieces of whole chunks: segments are cut when the wave has
    // fewer than 4 per thread (short inputs, the last wave), so that every thread has work.
    const Index cuts = threads > 1 ? (4 * threads + count * H - 1) / (count * H) : 1;
    const Index piece = chunk * std::max<Index>(1, (segment / chunk + cuts - 1) / cuts);
    const auto pieces = starts(piece);
    const Index P = static_cast<Index>(pieces.size());
    parallel_for(H * P, [&](Index hp) {
      const QueryHead& head = heads[static_cast<std::size_t>(hp / P)];
      const auto [s, b] = pieces[static_cast<std::size_t>(hp % P)];
      const auto [begin, end] = rows(s);
      causal_sweep(head.factors, ks[static_cast<std::size_t>(s)], features, va, head.out, chunk, begin, b,
                   std::min(end, b + piece), prefixes[static_cast<std::size_t>(s)]);
    });
  }
  if (carried) *next = std::move(prefix);
}

namespace {

// Causal rows [i0, i0 + n), one chunk of a segment, from its keys (see ChunkKeys). Nothing
// carries from one chunk to the next but the scratch: any cut of a segment gives the same bits.
void sweep_chunk(const FactorBlock& queries, const ChunkKeys& keys, Index features, ConstMatrixRef v, MatrixRef out,
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
  const Matrix &key_log = keys.keys.log, &key_value = keys.keys.value;
  const Vector& chunk_shift = keys.keys.column_max;
  const PrefixState &own = keys.own, &prefix = keys.prefix;
  PrefixState& state = s.state;
  Matrix& numerator = s.numerator;
  Vector& denominator = s.denominator;
  // numerator/denominator rows = the chunk's keys j <= i through `block` plus the state through qf.
  auto in_chunk = [&](const Matrix& qf, const Matrix& kf, Index n, ConstMatrixRef vs) {
    add_in_chunk(qf, kf, n, vs, s.local, s.gemm, numerator, denominator);
  };
  const FactoredFeatures qfac = prepared(queries(i0, n), "q");
  // The state of every key before i0: prefix + the segment's own keys before the chunk.
  // (its shift is -inf only before the first chunk: masked logs are the lowest float)
  const Vector carried_shift = prefix.shift.cwiseMax(own.shift);
  const bool near = carried_shift.maxCoeff() > kNegInf && (chunk_shift - carried_shift).maxCoeff() <= kNear;
  // The chunk's key features at `shift`: the fold's (at fold_shift) as they are, or rescaled
  // by exp(fold_shift - shift) <= 1 per column, or, below fold_shift, from their logs.
  const Vector fold_shift = own.shift.cwiseMax(chunk_shift);
  Matrix recomputed;
  auto key_features = [&](const Vector& shift) -> const Matrix& {
    const Matrix& kept = keys.kept;
    if (shift == fold_shift) return kept;
    if ((shift.array() < fold_shift.array()).any()) return recomputed = shifted_keys(key_log, shift, key_value);
    Vector factor(shift.size());
    vec::rescale_factors(factor.data(), fold_shift.data(), shift.data(), shift.size());
    recomputed.resize(kept.rows(), kept.cols());
    for (Index i = 0; i < kept.rows(); ++i) vec::multiply(&recomputed(i, 0), &kept(i, 0), factor.data(), kept.cols());
    return recomputed;
  };
  if (near) {
    // The carried state straight at the combined shift (one rescale).
    merge_into(prefix, own, state, &chunk_shift);
    const Vector& shift = state.shift;
    const Matrix& kf = key_features(shift);
    Vector row_scale;
    const Matrix qf = shifted_queries(qfac.exponent, qfac.value, n, shift, row_scale);
    readout(qf, state, numerator, denominator.data());
    in_chunk(qf, kf, n, vs);
    if ((denominator.head(n).array().abs() >= kUnderflow).all()) {
      write_rows(out, i0, numerator, denominator, n);
      return;
    }
  }
  merge_into(prefix, own, state);  // the carried state at its own shift
  const Matrix& kf = key_features(chunk_shift);
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
  if (carried_shift.maxCoeff() > kNegInf) {
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
  write_rows(out, i0, numerator, denominator, n);
}

// Rows [begin, end) of causal attention (whole chunks of the segment that starts at
// segment_begin), chunk by chunk, from the keys the segment's fold kept.
void causal_sweep(const FactorBlock& queries, const SegmentKeys& keys, Index features, ConstMatrixRef v,
                  MatrixRef out, Index chunk, Index segment_begin, Index begin, Index end, const PrefixState& prefix) {
  SweepScratch scratch(chunk, v.cols());
  for (Index i0 = begin; i0 < end; i0 += chunk) {
    const std::size_t c = static_cast<std::size_t>((i0 - segment_begin) / chunk);
    sweep_chunk(queries, {keys.chunks[c], keys.features[c], keys.before[c], prefix}, features, v, out, i0,
                std::min(chunk, end - i0), scratch);
  }
}

// Row i recomputed in double with its own shift, for the rare rows whose float denominator
// underflowed (causal rows whose visible keys are all far below a column max). In double: no
// guard (a float guard would rescale a row whose total is below 1e-38); a zero total (no nonzero
// weight at all) gives a zero row.
void exact_row(const Matrix& query_log, const Matrix& query_value, Index i, const Matrix& key_log,
               const Matrix& key_value, Index visible, float* row) {
  VectorD weights;
  exact_weights(query_log, query_value, i, key_log, key_value, visible, weights);
  const double total = weights.sum();
  for (Index j = 0; j < visible; ++j) row[j] = total != 0.0 ? static_cast<float>(weights(j) / total) : 0.0f;
}

}  // namespace

void factored_attention_matrix(FactoredFeatures&& queries, FactoredFeatures&& keys, Index features,
                               MatrixRef out, bool causal) {
  queries = prepared(std::move(queries), "q");
  keys = prepared(std::move(keys), "k");
  const StabilizedFeatures st = stabilize(queries, keys, features);
  out.noalias() = st.query * st.key.transpose();
  const Index S = out.cols(), offset = causal_offset(out.rows(), S);
  const auto visible = [&](Index i) { return causal ? std::min(S, i + offset + 1) : S; };
  // A denominator below this has lost most of its digits to underflow.
  constexpr float kUnderflow = 1e-30f;
  const bool signed_values = (queries.value.size() && queries.value.minCoeff() < 0) ||
                             (keys.value.size() && keys.value.minCoeff() < 0);
  Matrix query_log, key_log;  // for the slow path, made on first use
  for (Index i = 0; i < out.rows(); ++i) {
    const Index n = visible(i);
    out.row(i).tail(S - n).setZero();
    const float den = out.row(i).head(n).sum();
    if (!(std::abs(den) >= kUnderflow) && !signed_values) {
      if (!key_log.size()) {
        query_log = log_magnitude(queries, features);
        key_log = log_magnitude(keys, features);
      }
      exact_row(query_log, queries.value, i, key_log, keys.value, n, &out(i, 0));
    } else {
      out.row(i).head(n) /= guard(den);
    }
  }
}

namespace {

// One query head over one key/value head, as the engine takes it.
std::vector<QueryHead> one_head(FactorBlock queries, MatrixRef out) { return {QueryHead{std::move(queries), out}}; }

}  // namespace

void favor_attention(const FeatureMap& map, const std::vector<ConstMatrixRef>& qs, ConstMatrixRef k,
                     ConstMatrixRef v, const std::vector<MatrixRef>& outs, const FavorOptions& options,
                     const PrefixState* carried, PrefixState* next) {
  if (qs.empty() || qs.size() != outs.size()) throw_range("q", "expected one output per query head");
  for (std::size_t h = 0; h < qs.size(); ++h) {
    detail::check_head(qs[h], k, &v, options.causal);
    check_map(map, qs[h]);
    detail::check_out(outs[h], qs[h].rows(), v.cols());
    if (qs[h].rows() != qs[0].rows()) throw_range("q", "expected the same L in every query head");
  }
  if (carried && !options.causal) throw_range("causal", "a carried prefix state needs causal attention");
  const double scale = resolve_scale(options, k.cols());
  const float root = static_cast<float>(std::sqrt(scale));
  const Index M = map.num_features();
  const auto run = [&](std::vector<QueryHead> heads, const KernelParameters& params) {
    factored_attention(heads,
                       masked_keys([&](Index j0, Index n) { return map.factored(root * k.middleRows(j0, n), params); },
                                   options.key_mask, M),
                       M, v, options.causal, options.chunk, carried, next);
  };
  const auto query_block = [&](std::size_t h, const KernelParameters& params) {
    return [&, h](Index i0, Index n) { return map.factored(root * qs[h].middleRows(i0, n), params); };
  };
  if (map.data_independent()) {
    const KernelParameters params = map.parameters(qs[0], k, scale);
    std::vector<QueryHead> heads;
    for (std::size_t h = 0; h < qs.size(); ++h) heads.push_back({query_block(h, params), outs[h]});
    run(std::move(heads), params);
  } else {
    // OPRF's parameters come from each query head's own q and the keys: no features to share.
    if (carried)
      throw_range("featureMap", "an 'oprf' map without a fixed rho cannot carry a causal state: its parameters "
                                "would depend on keys not seen yet; create it with a rho");
    for (std::size_t h = 0; h < qs.size(); ++h) {
      const KernelParameters params = map.parameters(qs[h], k, scale);
      run({QueryHead{query_block(h, params), outs[h]}}, params);
    }
  }
  for (const MatrixRef& out : outs) detail::check_result(out, "q, k, v", map.kernel() == Kernel::trigonometric);
}

void favor_attention(const FeatureMap& map, ConstMatrixRef q, ConstMatrixRef k, ConstMatrixRef v,
                     MatrixRef out, const FavorOptions& options) {
  favor_attention(map, std::vector<ConstMatrixRef>{q}, k, v, std::vector<MatrixRef>{out}, options);
}

Matrix favor_attention(const FeatureMap& map, ConstMatrixRef q, ConstMatrixRef k,
                       ConstMatrixRef v, const FavorOptions& options) {
  Matrix out(q.rows(), v.cols());
  favor_attention(map, q, k, v, out, options);
  return out;
}

void favor_attention_matrix(const FeatureMap& map, ConstMatrixRef q, ConstMatrixRef k,
                            MatrixRef out, const AttentionOptions& options) {
  detail::check_head(q, k, nullptr, options.causal);
  check_map(map, q);
  detail::check_out(out, q.rows(), k.rows());
  const double scale = resolve_scale(options, q.cols());
  const float root = static_cast<float>(std::sqrt(scale));
  const Matrix qs = root * q, ks = root * k;
  const KernelParameters params = map.parameters(qs, ks);
  FactoredFeatures keys = map.factored(ks, params);
  if (options.key_mask) mask_key_factors(keys, options.key_mask, 0, map.num_features());
  factored_attention_matrix(map.factored(qs, params), std::move(keys), map.num_features(), out, options.causal);
  detail::check_result(out, "q, k", map.kernel() == Kernel::trigonometric);
}

Matrix favor_attention_matrix(const FeatureMap& map, ConstMatrixRef q, ConstMatrixRef k,
                              const AttentionOptions& options) {
  Matrix out(q.rows(), k.rows());
  favor_attention_matrix(map, q, k, out, options);
  return out;
}

void linear_attention(ConstMatrixRef query_features, ConstMatrixRef key_features,
                      ConstMatrixRef v, MatrixRef out, bool causal, Index chunk) {
  detail::check_head(query_features, key_features, &v, causal);
  detail::check_out(out, query_features.rows(), v.cols());
  auto plain = [](ConstMatrixRef features) {
    return [features](Index i0, Index n) {
      return FactoredFeatures{Vector::Zero(n), Matrix(), Matrix(features.middleRows(i0, n))};
    };
  };
  factored_attention(one_head(plain(query_features), out), plain(key_features), key_features.cols(), v, causal, chunk);
  const bool signed_features = (query_features.array() < 0).any() || (key_features.array() < 0).any();
  detail::check_result(out, "query_features, key_features, v", signed_features);
}

Matrix linear_attention(ConstMatrixRef query_features, ConstMatrixRef key_features,
                        ConstMatrixRef v, bool causal, Index chunk) {
  Matrix out(query_features.rows(), v.cols());
  linear_attention(query_features, key_features, v, out, causal, chunk);
  return out;
}

}  // namespace favor
