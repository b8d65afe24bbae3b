#include "favor/engine/prefix_state.hpp"

#include <algorithm>
#include <limits>

#include "favor/kernels/attention_kernel.hpp"
#include "favor/kernels/gemm.hpp"
#include "favor/parallel.hpp"
#include "favor/threads/thread_plan.hpp"
#include "favor/kernels/vector_math.hpp"

namespace favor {

PrefixState empty_prefix_state(Index features, Index dv) {
  return {Matrix::Zero(features, dv), Vector::Zero(features),
          Vector::Constant(features, -std::numeric_limits<float>::infinity()), Matrix(), Matrix()};
}

Vector joined_shift(Eigen::Ref<const Vector> a, Eigen::Ref<const Vector> b) {
  Vector out(a.size());
  vec::max_into(out.data(), a.data(), b.data(), a.size());
  return out;
}

namespace {

// Calls row(r, factor) for each feature r whose factor exp(old - new) is not 1 (0 while nothing
// is summed), before any row changes. None when no shift moves (most decode steps): no
// exponentials then.
template <class Row>
void changed_rows(const PrefixState& state, const Vector& shift, Row row) {
  if (vec::equal(shift.data(), state.shift.data(), shift.size())) return;
  Vector factor(shift.size());
  vec::rescale_factors(factor.data(), state.shift.data(), shift.data(), shift.size());
  for (Index r = 0; r < shift.size(); ++r)
    if (factor(r) != 1.0f) row(r, factor(r));
}

void scale_row(PrefixState& state, Index r, float factor) {
  state.kv.row(r) *= factor;
  state.k_sum(r) *= factor;
}

using kernel::fv;
using kernel::kLanes;

// Feature r's pending terms added to `row` (its kv row, or a copy of it), entry by entry the
// operations of accumulate's product (each a sum over the pending keys in order: madd in vector
// columns, multiply then add in the last dv % kLanes, as gemm's tiles and rank-1 path do).
void add_pending_terms(const PrefixState& s, Index r, float* row) {
  const Index M = s.kv.rows(), dv = s.kv.cols(), n = s.pending_kf.rows(), vector_columns = dv / kLanes * kLanes;
  if (!n) return;
  const float* kf = s.pending_kf.data() + r;
  Index j = 0;
  for (; j < vector_columns; j += kLanes) {
    fv x = kernel::load(row + j);
    for (Index i = 0; i < n; ++i) x = kernel::madd(kernel::splat(kf[i * M]), kernel::load(&s.pending_v(i, j)), x);
    kernel::store(row + j, x);
  }
  for (; j < dv; ++j)
    for (Index i = 0; i < n; ++i) row[j] = row[j] + kf[i * M] * s.pending_v(i, j);
}

void add_pending_row(PrefixState& s, Index r) { add_pending_terms(s, r, &s.kv(r, 0)); }

// Columns [j0, j0 + V kLanes) of one query row's readout, adding the pending terms to each row of
// kv but those in `added` (ascending) as it reads it: per kv entry add_pending_row's operations,
// per numerator entry gemm's (a sum over features in order, from 0). One: one pending key.
template <int V, bool One>
void add_and_read(PrefixState& s, const float* q, const std::vector<Index>& added, Index j0, float* numerator) {
  const Index M = s.kv.rows(), n = s.pending_kf.rows(), ld = s.kv.outerStride(), ldv = s.pending_v.outerStride();
  const float* kf = s.pending_kf.data();
  const float* pv = s.pending_v.data() + j0;
  float* row = s.kv.data() + j0;
  fv acc[V];
  for (int v = 0; v < V; ++v) acc[v] = kernel::splat(0.0f);
  std::size_t next = 0;
  Index skip = added.empty() ? M : added[0];
  for (Index r = 0; r < M; ++r, row += ld) {
    const fv b = kernel::splat(q[r]);
    if (r == skip) {
      skip = ++next < added.size() ? added[next] : M;
      for (int v = 0; v < V; ++v) acc[v] = kernel::madd(b, kernel::load(row + v * kLanes), acc[v]);
    } else if constexpr (One) {
      const fv a = kernel::splat(kf[r]);
      for (int v = 0; v < V; ++v) {
        const fv x = kernel::madd(a, kernel::load(pv + v * kLanes), kernel::load(row + v * kLanes));
        kernel::store(row + v * kLanes, x);
        acc[v] = kernel::madd(b, x, acc[v]);
      }
    } else {
      for (int v = 0; v < V; ++v) {
        fv x = kernel::load(row + v * kLanes);
        for (Index i = 0; i < n; ++i) x = kernel::madd(kernel::splat(kf[i * M + r]), kernel::load(pv + i * ldv + v * kLanes), x);
        kernel::store(row + v * kLanes, x);
        acc[v] = kernel::madd(b, x, acc[v]);
      }
    }
  }
  for (int v = 0; v < V; ++v) kernel::store(numerator + j0 + v * kLanes, acc[v]);
}

// The scalar columns [j0, dv) likewise (multiply then add, as gemm's single columns).
void add_and_read_columns(PrefixState& s, const float* q, const std::vector<Index>& added, Index j0, float* numerator) {
  const Index M = s.kv.rows(), dv = s.kv.cols(), n = s.pending_kf.rows();
  const float* kf = s.pending_kf.data();
  for (Index j = j0; j < dv; ++j) {
    float acc = 0.0f;
    auto skip = added.begin();
    for (Index r = 0; r < M; ++r) {
      float& x = s.kv(r, j);
      if (skip != added.end() && *skip == r) ++skip;
      else for (Index i = 0; i < n; ++i) x = x + kf[i * M + r] * s.pending_v(i, j);
      acc = acc + q[r] * x;
    }
    numerator[j] = acc;
  }
}

// A carried state always holds room for one pending key: after a decode step its key is pending,
// and a state that has none (after a longer append, or a rollback that settled it) gets a zero
// key (features +0, values -0: adding it, 0 * -0 = -0, leaves every sum's bits as they were), so
// that the memory a state holds is the same after every append.
void keep_pending_room(PrefixState& s) {
  if (s.pending_kf.rows() || !s.kv.rows()) return;
  s.pending_kf = Matrix::Zero(1, s.kv.rows());
  s.pending_v = Matrix::Constant(1, s.kv.cols(), -0.0f);
}

}  // namespace

void rescale_state(PrefixState& state, const Vector& shift) {
  changed_rows(state, shift, [&](Index r, float factor) { scale_row(state, r, factor); });
  state.shift = shift;
}

const PrefixState& StateStep::carried() {
  settle(*carried_);
  return *carried_;
}

void StateStep::rescale_in_place(Vector shift) {
  PrefixState& state = *carried_;
  const Index dv = state.kv.cols();
  rescaled_.clear(), old_rows_.clear();
  changed_rows(state, shift, [&](Index r, float factor) {
    rescaled_.push_back(r);
    old_rows_.insert(old_rows_.end(), &state.kv(r, 0), &state.kv(r, 0) + dv);
    old_rows_.push_back(state.k_sum(r));
    add_pending_row(state, r);  // the old sums are kv + the pending terms: those are scaled
    scale_row(state, r, factor);
  });
  old_shift_ = std::move(state.shift);
  state.shift = std::move(shift);
}

void StateStep::add_pending() {
  PrefixState& state = *carried_;
  if (!state.pending_kf.rows() || pending_added_) return;
  auto skip = rescaled_.begin();
  for (Index r = 0; r < state.kv.rows(); ++r) {
    if (skip != rescaled_.end() && *skip == r) ++skip;
    else add_pending_row(state, r);
  }
  pending_added_ = true;
}

void StateStep::readout(const Matrix& qf, Matrix& numerator, float* denominator) {
  PrefixState& state = *carried_;
  if (qf.rows() == 1 && state.pending_kf.rows() && !pending_added_) {
    const Index vector_columns = state.kv.cols() / kLanes * kLanes;
    Index j = 0;
    const bool one = state.pending_kf.rows() == 1;
    for (; j + 8 * kLanes <= vector_columns; j += 8 * kLanes)
      one ? add_and_read<8, true>(state, qf.data(), rescaled_, j, numerator.data())
          : add_and_read<8, false>(state, qf.data(), rescaled_, j, numerator.data());
    for (; j < vector_columns; j += kLanes) add_and_read<1, false>(state, qf.data(), rescaled_, j, numerator.data());
    add_and_read_columns(state, qf.data(), rescaled_, j, numerator.data());
    denominator[0] = vec::dot(qf.data(), state.k_sum.data(), qf.cols());
    pending_added_ = true;
    return;
  }
  add_pending();
  favor::readout(qf, state, numerator, denominator);
}

void StateStep::accumulate_at_commit(Matrix kf, ConstMatrixRef vs) {
  kf_ = std::move(kf);
  v_ = vs;
}

void StateStep::replace_with(PrefixState next) { next_ = std::move(next); }

void StateStep::finish() {
  next_.reset();
  old_shift_.resize(0), kf_.resize(0, 0), v_.resize(0, 0);
  rescaled_.clear(), old_rows_.clear();
  pending_added_ = false;
}

void StateStep::commit() {
  PrefixState& state = *carried_;
  if (next_) {
    state = std::move(*next_);
    keep_pending_room(state);
  } else if (kf_.rows()) {
    add_pending();  // (readout has added them)
    for (Index i = 0; i < kf_.rows(); ++i) vec::add_into(state.k_sum.data(), &kf_(i, 0), kf_.cols());
    state.pending_kf = std::move(kf_);
    state.pending_v = std::move(v_);
  }
  finish();
}

void StateStep::rollback() {
  PrefixState& state = *carried_;
  if (old_shift_.size()) {
    const Index dv = state.kv.cols();
    const float* row = old_rows_.data();
    for (const Index r : rescaled_) {
      std::copy_n(row, dv, &state.kv(r, 0));
      state.k_sum(r) = row[dv];
      row += dv + 1;
    }
    state.shift = old_shift_;
  }
  // The rows put back lack their pending terms again: added (the same state, settled).
  if (state.pending_kf.rows()) {
    if (pending_added_) {
      for (const Index r : rescaled_) add_pending_row(state, r);
      state.pending_kf.resize(0, 0), state.pending_v.resize(0, 0);
    } else {
      settle(state);
    }
  }
  keep_pending_room(state);
  finish();
}

void readout(const Matrix& qf, const PrefixState& state, Matrix& numerator, float* denominator) {
  gemm::gemm(qf.rows(), state.kv.cols(), state.kv.rows(), qf.data(), qf.outerStride(), 1, state.kv.data(),
             state.kv.outerStride(), numerator.data(), numerator.outerStride(), false);
  vec::dot_rows(qf.data(), qf.outerStride(), qf.rows(), state.k_sum.data(), qf.cols(), denominator);
}

namespace {

// kv += kf^T vs, A = kf^T read in place (row stride 1, column stride kf's).
void add_products(PrefixState& state, const Matrix& kf, ConstMatrixRef vs) {
  gemm::gemm(kf.cols(), vs.cols(), kf.rows(), kf.data(), 1, kf.outerStride(), vs.data(), vs.outerStride(),
             state.kv.data(), state.kv.outerStride(), true);
}

}  // namespace

void accumulate(PrefixState& state, const Matrix& kf, ConstMatrixRef vs) {
  add_products(state, kf, vs);
  for (Index i = 0; i < kf.rows(); ++i) vec::add_into(state.k_sum.data(), &kf(i, 0), kf.cols());
}

void settle(PrefixState& state) {
  if (!state.pending_kf.rows()) return;
  add_products(state, state.pending_kf, state.pending_v);
  state.pending_kf.resize(0, 0), state.pending_v.resize(0, 0);
}

KeyChunk key_chunk(const FactorBlock& keys, Index features, Index j0, Index n) {
  FactoredFeatures f = prepared(keys(j0, n), "k");
  KeyChunk k;
  k.log = log_magnitude(std::move(f), features, k.column_max);
  k.value = std::move(f.value);
  return k;
}

Matrix fold_features(const PrefixState& state, Matrix log, const KeyChunk& k, Vector& shift) {
  shift = joined_shift(state.shift, k.column_max);
  return shifted_keys(std::move(log), shift, k.value);
}

void fold_into(PrefixState& state, const Matrix& kf, const Vector& shift, ConstMatrixRef vs) {
  rescale_state(state, shift);
  accumulate(state, kf, vs);
}

Matrix fold_chunk(PrefixState& state, Matrix log, const KeyChunk& k, ConstMatrixRef vs) {
  // fold_features then fold_into, the same operations, with the column sums taken as each feature
  // row is made (while it is in L1) rather than in a second pass.
  rescale_state(state, joined_shift(state.shift, k.column_max));
  Matrix kf = shifted_keys(std::move(log), state.shift, k.value, state.k_sum.data());
  add_products(state, kf, vs);
  return kf;
}

KeyChunk key_columns(const KeyChunk& whole, Index r0, Index F) {
  KeyChunk k;
  k.log = whole.log.middleCols(r0, F);
  if (whole.value.size()) k.value = whole.value.middleCols(r0, F);
  k.column_max = whole.column_max.segment(r0, F);
  return k;
}

KeyChunk key_columns(const std::vector<KeyChunk>& pieces, Index r0, Index F) {
  if (pieces.size() == 1) return key_columns(pieces[0], r0, F);
  Index rows = 0;
  bool values = false;
  for (const KeyChunk& p : pieces) rows += p.log.rows(), values = values || p.value.size();
  KeyChunk k;
  k.log.resize(rows, F);
  if (values) k.value.resize(rows, F);
  k.column_max.setConstant(F, -std::numeric_limits<float>::infinity());
  Index i = 0;
  for (const KeyChunk& p : pieces) {
    const Index n = p.log.rows();
    if (!n) continue;  // an empty piece of a short chunk
    k.log.middleRows(i, n) = p.log.middleCols(r0, F);
    if (values) {
      if (p.value.size()) k.value.middleRows(i, n) = p.value.middleCols(r0, F);
      else k.value.middleRows(i, n).setOnes();  // (no values: every value 1)
    }
    k.column_max = k.column_max.cwiseMax(p.column_max.segment(r0, F));
    i += n;
  }
  return k;
}

void set_feature_rows(PrefixState& into, const PrefixState& block, Index r0) {
  const Index F = block.shift.size();
  into.kv.middleRows(r0, F) = block.kv;
  into.k_sum.segment(r0, F) = block.k_sum;
  into.shift.segment(r0, F) = block.shift;
}

float max_abs_rows(ConstMatrixRef x, Index begin, Index end) {
  float top = 0.0f;
  for (Index i = begin; i < end; ++i) top = std::max(top, vec::max_abs(x.row(i).data(), x.cols()));
  return top;
}

PrefixState fold_keys(const FactorBlock& keys, Index features, ConstMatrixRef v, Index chunk, Index begin, Index end,
                      float* v_top) {
  PrefixState state = empty_prefix_state(features, v.cols());
  for (Index j0 = begin; j0 < end; j0 += chunk) {
    const Index n = std::min(chunk, end - j0);
    KeyChunk k = key_chunk(keys, features, j0, n);
    if (v_top) *v_top = std::max(*v_top, max_abs_rows(v, j0, j0 + n));  // (then in cache for the fold)
    fold_chunk(state, std::move(k.log), k, v.middleRows(j0, n));
  }
  return state;
}

void merge_into(PrefixView a, PrefixView b, PrefixState& out, const Vector* floor) {
  const Index features = a.shift.size(), dv = a.kv.cols();
  Vector shift = joined_shift(a.shift, b.shift);
  if (floor) shift = joined_shift(shift, *floor);
  Vector fa(features), fb(features);
  vec::rescale_factors(fa.data(), a.shift.data(), shift.data(), features);
  vec::rescale_factors(fb.data(), b.shift.data(), shift.data(), features);
  out.kv.resize(features, dv);
  out.k_sum.resize(features);
  for (Index r = 0; r < features; ++r) {
    vec::axpby(&out.kv(r, 0), fa(r), a.kv.row(r).data(), fb(r), b.kv.row(r).data(), dv);
    out.k_sum(r) = fa(r) * a.k_sum(r) + fb(r) * b.k_sum(r);
  }
  out.shift = std::move(shift);
}

void merge(PrefixState& into, const PrefixState& from) { merge_into(into, from, into); }

PrefixState summed_states(const std::vector<const PrefixState*>& parts) {
  const Index features = parts[0]->shift.size(), dv = parts[0]->kv.cols();
  PrefixState sum{Matrix(features, dv), Vector::Zero(features), parts[0]->shift, Matrix(), Matrix()};
  for (const PrefixState* p : parts) sum.shift = joined_shift(sum.shift, p->shift);
  std::vector<Vector> factors;
  for (const PrefixState* p : parts) {
    factors.emplace_back(features);
    vec::rescale_factors(factors.back().data(), p->shift.data(), sum.shift.data(), features);
  }
  std::vector<float> row(static_cast<std::size_t>(dv));
  for (Index r = 0; r < features; ++r) {
    float* out = &sum.kv(r, 0);
    for (std::size_t i = 0; i < parts.size(); ++i) {
      const PrefixState& p = *parts[i];
      const float f = factors[i](r);
      std::copy_n(&p.kv(r, 0), dv, row.data());  // (row-major: a row is contiguous)
      add_pending_terms(p, r, row.data());
      if (i == 0) vec::scale_into(out, f, row.data(), dv);
      else vec::axpby(out, 1.0f, out, f, row.data(), dv);
      sum.k_sum(r) += f * p.k_sum(r);
    }
  }
  return sum;
}

bool write_rows(MatrixRef out, Index i0, const Matrix& numerator, const Vector& denominator, Index n) {
  bool finite = true;
  for (Index i = 0; i < n; ++i)
    finite = vec::divide_all_finite(&out(i0 + i, 0), &numerator(i, 0), out.cols(), guard(denominator(i))) && finite;
  return finite;
}

namespace {

// Rows up to which fold_range may hold every key chunk of the range at once (their logs: rows x M
// floats) to fold them by feature blocks.
constexpr Index kBlockedFoldRows = 16384;

// The states of the segments of [begin, end) (parts[s], tops[s]: max |v|), with more threads than
// segments: the key chunks first, in parallel, then each segment folded by feature blocks in
// parallel (kFeatureQuantum).
void fold_by_feature_blocks(const FactorBlock& keys, Index features, ConstMatrixRef v, Index chunk, Index segment,
                            Index begin, Index end, int threads, std::vector<PrefixState>& parts,
                            std::vector<float>* tops) {
  const Index count = static_cast<Index>(parts.size());
  const Index chunks = (end - begin + chunk - 1) / chunk, per_segment = segment / chunk;
  // Chunks that would not share out evenly among the threads, or would make few rounds of them (a
  // short call's few), made in pieces of rows (region_pieces).
  const Index pieces = region_pieces(chunks, chunk, threads);
  std::vector<std::vector<KeyChunk>> ks(static_cast<std::size_t>(chunks), std::vector<KeyChunk>(static_cast<std::size_t>(pieces)));
  std::vector<float> chunk_tops(static_cast<std::size_t>(chunks * pieces), 0.0f);
  parallel_for(chunks * pieces, [&](Index cp) {
    const Index c = cp / pieces, chunk0 = begin + c * chunk;
    const auto [r0, r1] = piece_rows(std::min(chunk, end - chunk0), pieces, cp % pieces);
    const Index j0 = chunk0 + r0, n = r1 - r0;
    if (n <= 0) return;  // (a short last chunk's)
    ks[static_cast<std::size_t>(c)][static_cast<std::size_t>(cp % pieces)] = key_chunk(keys, features, j0, n);
    if (tops) chunk_tops[static_cast<std::size_t>(cp)] = max_abs_rows(v, j0, j0 + n);
  });
  if (tops)
    for (Index cp = 0; cp < chunks * pieces; ++cp) {
      float& top = (*tops)[static_cast<std::size_t>(cp / pieces / per_segment)];
      top = std::max(top, chunk_tops[static_cast<std::size_t>(cp)]);
    }
  const FeatureBlocks plan = plan_feature_blocks(count, features, threads, kFeatureQuantum);
  const Index blocks = plan.count();
  for (PrefixState& part : parts) part = empty_prefix_state(features, v.cols());
  parallel_for(count * blocks, [&](Index t) {
    const Index s = t / blocks, r0 = plan.starts[static_cast<std::size_t>(t % blocks)], F = plan.width(t % blocks);
    PrefixState block = empty_prefix_state(F, v.cols());
    for (Index c = s * per_segment; c < std::min(chunks, (s + 1) * per_segment); ++c) {
      const Index j0 = begin + c * chunk, n = std::min(chunk, end - j0);
      KeyChunk k = key_columns(ks[static_cast<std::size_t>(c)], r0, F);
      fold_chunk(block, std::move(k.log), k, v.middleRows(j0, n));
    }
    set_feature_rows(parts[static_cast<std::size_t>(s)], block, r0);
  });
}

}  // namespace

void fold_range(const FactorBlock& keys, Index features, ConstMatrixRef v, Index chunk, Index segment,
                Index begin, Index end, PrefixState& into, float* v_top) {
  if (end <= begin) return;
  const std::size_t count = static_cast<std::size_t>((end - begin + segment - 1) / segment);
  std::vector<PrefixState> parts(count);
  std::vector<float> tops(count, 0.0f);
  const int threads = available_threads();
  if (static_cast<Index>(count) < threads && end - begin <= kBlockedFoldRows && features >= 2 * kFeatureQuantum) {
    fold_by_feature_blocks(keys, features, v, chunk, segment, begin, end, threads, parts, v_top ? &tops : nullptr);
  } else {
    parallel_for(static_cast<Index>(count), [&](Index s) {
      const Index b = begin + s * segment;
      parts[static_cast<std::size_t>(s)] = fold_keys(keys, features, v, chunk, b, std::min(end, b + segment),
                                                     v_top ? &tops[static_cast<std::size_t>(s)] : nullptr);
    });
  }
  for (const PrefixState& part : parts) merge(into, part);
  if (v_top)
    for (const float top : tops) *v_top = std::max(*v_top, top);
}

}  // namespace favor
