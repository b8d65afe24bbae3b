#include "favor/tensor.hpp"

#include <algorithm>
#include <string>

#include "favor/error.hpp"
#include "favor/threads/input_arrival.hpp"
#include "favor/kernels/vector_math.hpp"
#include "favor/parallel.hpp"
#include "favor/tensor/head_groups.hpp"
#include "favor/tensor/shape.hpp"
#include "favor/engine/factored_attention.hpp"
#include "favor/engine/codebook_state.hpp"
#include "favor/threads/thread_plan.hpp"
#include "favor/tensor/work.hpp"

namespace favor {

namespace {

// Runs fn(h) for every index (heads, or key/value heads with their query heads) on at most the
// threads `multiply_adds` of work is worth (thread_plan.hpp), and at most one per block: `blocks`
// counts the pieces the call's work can be split into (its heads' blocks of rows), so that a
// small head, whose few blocks leave the other threads nothing to do, wakes none. Indices are
// independent (each writes only its slices of out), so they go to threads; when there are fewer
// of them than threads, the threads left over help with the parallel loops inside each (the
// results are the same either way).
template <class F>
void for_each_head(Index count, double multiply_adds, Index blocks, F&& fn) {
  const ThreadLimit limit(static_cast<int>(std::min<Index>(threads_for_work(multiply_adds), std::max<Index>(1, blocks))));
  if (count > 1) {
    parallel_for(count, fn);
  } else if (count == 1) {
    fn(0);
  }
}

// Rows (the second-to-last dim) and cols (the last) of a tensor.
Index rows_of(const std::vector<Index>& dims) { return dims[dims.size() - 2]; }
double cols_of(const std::vector<Index>& dims) { return static_cast<double>(dims.back()); }

// What a call's work splits into, for for_each_head: exact attention's query blocks, and the
// random-feature and codebook engines' key chunks and query blocks, each of which may be cut into
// pieces of kPieceRows rows (thread_plan.hpp), in every query head.
Index exact_blocks(Index query_heads, const std::vector<Index>& q) {
  return query_heads * ((rows_of(q) + kPieceRows - 1) / kPieceRows);
}
Index factored_blocks(Index query_heads, const std::vector<Index>& q, const std::vector<Index>& k) {
  return query_heads * ((std::max(rows_of(q), rows_of(k)) + kPieceRows - 1) / kPieceRows);
}

using ConstMap = Eigen::Map<const Matrix>;
using Map = Eigen::Map<Matrix>;

ConstMap head(const ConstTensorView& t, Index h) {
  const Index rows = t.dims[t.dims.size() - 2], cols = t.dims.back();
  return ConstMap(t.data + h * rows * cols, rows, cols);
}

Map head(const TensorView& t, Index h) {
  const Index rows = t.dims[t.dims.size() - 2], cols = t.dims.back();
  return Map(t.data + h * rows * cols, rows, cols);
}

void check_output(const TensorView& out, const std::vector<Index>& expected) {
  if (!out.data) throw_type("out", "has no data");
  if (out.dims != expected)
    throw_range("out", "expected dims " + dims_string(expected) + ", got " + dims_string(out.dims));
}

// Shapes shared by the output and matrix forms; returns L and S. Counts nothing of size L x S.
std::pair<Index, Index> check_query_key(const std::vector<Index>& q, const std::vector<Index>& k,
                                        bool causal) {
  check_rank(q, "q", "[..., L, d]");
  check_rank(k, "k", "[..., S, d]");
  head_groups(q, k, "k");
  if (k.back() != q.back())
    throw_range("k", "expected last dim d = " + std::to_string(q.back()) + " (as q), got " + dims_string(k));
  const Index L = q[q.size() - 2], S = k[k.size() - 2];
  if (causal && L > S)
    throw_range("causal", "causal attention needs at least as many keys as queries (the L queries are the last L "
                          "positions), got L = " + std::to_string(L) + ", S = " + std::to_string(S));
  return {L, S};
}

// q, k and v checked in that order, once all of them are in (inputs still arriving are awaited).
void check_inputs(const ConstTensorView& q, const ConstTensorView& k, const ConstTensorView& v) {
  await_all_inputs();
  check_values(q, "q"), check_values(k, "k"), check_values(v, "v");
}

// A head's inputs (the `count` floats of its query heads from `q`, its k and v) once they are in
// (inputs still arriving are awaited, input_arrival.hpp), checked finite on the thread that
// computes the head. What it throws is replaced by the ordered check of every input (the error a
// check beforehand would give), which the callers run on any error.
void head_inputs_in(const float* q, Index count, const ConstMap& k, const ConstMap& v) {
  await_input(k.data(), k.size()), await_input(v.data(), v.size()), await_input(q, count);
  if (!vec::all_finite(q, count) || !vec::all_finite(k.data(), k.size()) || !vec::all_finite(v.data(), v.size()))
    throw_range("q, k, v", "expected finite values");
}

// The one-head options of query head h: its key/value head's mask row.
template <class Options>
Options for_kv_head(const Options& options, const std::vector<const std::uint8_t*>& masks, Index kv) {
  Options o = options;
  o.key_mask = masks.empty() ? nullptr : masks[static_cast<std::size_t>(kv)];
  return o;
}

}  // namespace

HeadGroups head_groups(const std::vector<Index>& q, const std::vector<Index>& k, const std::string& argument) {
  const std::vector<Index> lq = leading(q), lk = leading(k);
  HeadGroups g;
  g.query_heads = heads(q);
  g.kv_heads = heads(k);
  bool ok = lq.size() == lk.size();
  for (std::size_t i = 0; ok && i + 1 < lq.size(); ++i) ok = lq[i] == lk[i];
  if (ok && !lq.empty()) {
    g.q_inner = lq.back();
    g.kv_inner = lk.back();
    ok = g.kv_inner >= 1 && g.q_inner % g.kv_inner == 0;
  }
  if (!ok)
    throw_range(argument, "leading (batch/head) dims " + dims_string(lk) + " do not match q's " + dims_string(lq) +
                              ": they must be equal, except that the last (the heads) may divide q's "
                              "(grouped-query attention: q [..., Hq, L, d], k and v [..., Hkv, S, d], Hq a "
                              "multiple of Hkv)");
  return g;
}

std::vector<const std::uint8_t*> key_mask_rows(const ConstMaskView& mask, const std::vector<Index>& k,
                                               const std::string& argument) {
  if (!mask.data) return {};
  const Index S = k[k.size() - 2];
  const std::vector<Index> lk = leading(k);
  const std::string expected = "expected dims [..., " + std::to_string(S) + "] whose leading dims broadcast against k's " +
                               dims_string(lk) + " (each equal or 1, aligned from the right), got ";
  if (mask.dims.empty() || mask.dims.back() != S || mask.dims.size() - 1 > lk.size())
    throw_range(argument, expected + dims_string(mask.dims));
  const std::size_t rank = mask.dims.size() - 1, skip = lk.size() - rank;
  for (std::size_t i = 0; i < rank; ++i)
    if (mask.dims[i] != 1 && mask.dims[i] != lk[skip + i]) throw_range(argument, expected + dims_string(mask.dims));
  const Index count = element_count(mask.dims, argument);
  for (Index i = 0; i < count; ++i)
    if (mask.data[i] > 1)
      throw_range(argument, "expected 0 (ignore the key) or 1 (attend), found " + std::to_string(mask.data[i]) +
                                " at index " + std::to_string(i));
  // Row of each key/value head: its index in k's leading dims, broadcast dims contributing 0.
  std::vector<const std::uint8_t*> rows(static_cast<std::size_t>(heads(k)));
  for (Index h = 0; h < static_cast<Index>(rows.size()); ++h) {
    Index rest = h, offset = 0, stride = S;
    for (std::size_t i = lk.size(); i-- > 0;) {
      const Index index = rest % lk[i];
      rest /= lk[i];
      if (i >= skip) {
        const Index dim = mask.dims[i - skip];
        if (dim != 1) offset += index * stride;
        stride *= dim;
      }
    }
    rows[static_cast<std::size_t>(h)] = mask.data + offset;
  }
  return rows;
}

std::vector<Index> attention_matrix_dims(const std::vector<Index>& q, const std::vector<Index>& k,
                                         bool causal) {
  const auto [L, S] = check_query_key(q, k, causal);
  std::vector<Index> out = leading(q);
  out.push_back(L);
  out.push_back(S);
  element_count(out, "output");
  return out;
}

std::vector<Index> attention_output_dims(const std::vector<Index>& q, const std::vector<Index>& k,
                                         const std::vector<Index>& v, bool causal) {
  check_query_key(q, k, causal);
  check_rank(v, "v", "[..., S, dv]");
  if (leading(v) != leading(k))
    throw_range("v", "leading (batch/head) dims " + dims_string(leading(v)) + " do not match k's " +
                         dims_string(leading(k)));
  if (v[v.size() - 2] != k[k.size() - 2])
    throw_range("v", "expected S = " + std::to_string(k[k.size() - 2]) + " rows (as k), got " + dims_string(v));
  std::vector<Index> out = leading(q);
  out.push_back(q[q.size() - 2]);
  out.push_back(v.back());
  element_count(out, "output");
  return out;
}

void exact_attention(const ConstTensorView& q, const ConstTensorView& k, const ConstTensorView& v,
                     const TensorView& out, const AttentionOptions& options, const ConstMaskView& key_mask) {
  check_output(out, attention_output_dims(q.dims, k.dims, v.dims, options.causal));
  resolve_scale(options, q.dims.back());
  const HeadGroups g = head_groups(q.dims, k.dims);
  const auto masks = key_mask_rows(key_mask, k.dims);
  if (!q.data || !k.data || !v.data) check_inputs(q, k, v);
  const double work = g.query_heads * exact_work(rows_of(q.dims), rows_of(k.dims), cols_of(q.dims), cols_of(v.dims), options.causal);
  // Each head's inputs checked by the thread that computes it, once they are in (inputs still
  // arriving, input_arrival.hpp, are awaited head by head); on any error, every input is checked
  // again in order: the error a check beforehand would give.
  try {
    for_each_head(g.query_heads, work, exact_blocks(g.query_heads, q.dims), [&](Index h) {
      const Index kv = g.kv_of(h);
      const auto qh = head(q, h), kh = head(k, kv), vh = head(v, kv);
      head_inputs_in(qh.data(), qh.size(), kh, vh);
      exact_attention(qh, kh, vh, head(out, h), for_kv_head(options, masks, kv));
    });
  } catch (...) {  // (no typed catch: the pthreads build would skip it, see bindings/wasm/error_values.cpp)
    check_inputs(q, k, v);
    throw;
  }
}

void attention_matrix(const ConstTensorView& q, const ConstTensorView& k, const TensorView& out,
                      const AttentionOptions& options, const ConstMaskView& key_mask) {
  check_output(out, attention_matrix_dims(q.dims, k.dims, options.causal));
  resolve_scale(options, q.dims.back());
  const HeadGroups g = head_groups(q.dims, k.dims);
  const auto masks = key_mask_rows(key_mask, k.dims);
  check_values(q, "q"), check_values(k, "k");
  const double work = g.query_heads * exact_work(rows_of(q.dims), rows_of(k.dims), cols_of(q.dims), 0.0, options.causal);
  for_each_head(g.query_heads, work, g.query_heads, [&](Index h) {
    const Index kv = g.kv_of(h);
    attention_matrix(head(q, h), head(k, kv), head(out, h), for_kv_head(options, masks, kv));
  });
}

namespace {

void check_map_dim(const FeatureMap& map, const std::vector<Index>& q) {
  if (q.back() != map.dim())
    throw_range("q", "expected last dim d = " + std::to_string(map.dim()) + " (the feature map's dim), got " +
                         dims_string(q));
}

}  // namespace

QueryGroup query_group(const HeadGroups& groups, Index kv, const ConstTensorView& q, const TensorView& out) {
  QueryGroup g;
  const Index first = groups.first_query_head(kv);
  for (Index h = first; h < first + groups.group(); ++h) {
    g.qs.emplace_back(head(q, h));
    g.outs.emplace_back(head(out, h));
  }
  return g;
}

void favor_attention(const FeatureMap& map, const ConstTensorView& q, const ConstTensorView& k,
                     const ConstTensorView& v, const TensorView& out, const FavorOptions& options,
                     const ConstMaskView& key_mask) {
  check_output(out, attention_output_dims(q.dims, k.dims, v.dims, options.causal));
  check_map_dim(map, q.dims);
  resolve_scale(options, q.dims.back());
  const HeadGroups g = head_groups(q.dims, k.dims);
  const auto masks = key_mask_rows(key_mask, k.dims);
  // The values are checked after the call where that is sound, sparing a pass over the inputs.
  // With exponential features a NaN or infinity in q or k makes the engine throw (every row's
  // squared norm is in its log, checked even where a key mask zeroes the row), and one in v makes
  // some output NaN or infinite, which it throws for (a masked key's zero weights times NaN are
  // NaN). Not so for relu features (a masked row's values are replaced), trigonometric ones (their
  // infinite outputs can be legitimate) or calls without outputs. On any error the inputs are
  // then checked in order: the error a check beforehand would give.
  const Kernel kernel = map.kernel();
  const bool after = (kernel == Kernel::positive || kernel == Kernel::hyperbolic || kernel == Kernel::oprf) &&
                     element_count(out.dims, "out") > 0;
  // Inputs still arriving (input_arrival.hpp) are awaited block by block by the engine where it
  // reads them; a check beforehand, or parameters fitted to q and k, need all of them first.
  if (!after) check_inputs(q, k, v);
  else if (!map.data_independent()) await_all_inputs();
  const double work = favor_work(map, g.query_heads * rows_of(q.dims) + g.kv_heads * rows_of(k.dims), cols_of(v.dims));
  try {
    for_each_head(g.kv_heads, work, factored_blocks(g.query_heads, q.dims, k.dims), [&](Index kv) {
      const QueryGroup group = query_group(g, kv, q, out);
      favor_attention(map, group.qs, head(k, kv), head(v, kv), group.outs, for_kv_head(options, masks, kv));
    });
  } catch (...) {  // (no typed catch: the pthreads build would skip it, see bindings/wasm/error_values.cpp)
    if (after) check_inputs(q, k, v);
    throw;
  }
}

void favor_attention_matrix(const FeatureMap& map, const ConstTensorView& q,
                            const ConstTensorView& k, const TensorView& out,
                            const AttentionOptions& options, const ConstMaskView& key_mask) {
  check_output(out, attention_matrix_dims(q.dims, k.dims, options.causal));
  check_map_dim(map, q.dims);
  resolve_scale(options, q.dims.back());
  const HeadGroups g = head_groups(q.dims, k.dims);
  const auto masks = key_mask_rows(key_mask, k.dims);
  check_values(q, "q"), check_values(k, "k");
  const double work = g.query_heads * (favor_work(map, rows_of(q.dims) + rows_of(k.dims), 0.0) +
                                       exact_work(rows_of(q.dims), rows_of(k.dims), static_cast<double>(map.num_features()), 0.0, options.causal));
  for_each_head(g.query_heads, work, g.query_heads, [&](Index h) {
    const Index kv = g.kv_of(h);
    favor_attention_matrix(map, head(q, h), head(k, kv), head(out, h), for_kv_head(options, masks, kv));
  });
}

namespace {

enum class CodebookLayout { shared, per_query_head, per_kv_head };

CodebookLayout check_codebook(const ConstTensorView& codebook, const std::vector<Index>& q,
                              const std::vector<Index>& k) {
  check_rank(codebook.dims, "codebook", "[c, d] or [..., c, d]");
  if (codebook.dims.back() != q.back())
    throw_range("codebook", "expected last dim d = " + std::to_string(q.back()) + " (as q), got " +
                                dims_string(codebook.dims));
  CodebookLayout layout = CodebookLayout::shared;
  if (codebook.dims.size() > 2) {
    if (leading(codebook.dims) == leading(q))
      layout = CodebookLayout::per_query_head;
    else if (leading(codebook.dims) == leading(k))
      layout = CodebookLayout::per_kv_head;
    else
      throw_range("codebook", "leading (batch/head) dims " + dims_string(leading(codebook.dims)) +
                                  " match neither q's " + dims_string(leading(q)) + " nor k's " +
                                  dims_string(leading(k)) + " (or use [c, d], shared by every head)");
  }
  check_values(codebook, "codebook");
  return layout;
}

}  // namespace

void codebook_attention(const ConstTensorView& codebook, const ConstTensorView& q,
                        const ConstTensorView& k, const ConstTensorView& v, const TensorView& out,
                        const CodebookOptions& options, const ConstMaskView& key_mask) {
  check_output(out, attention_output_dims(q.dims, k.dims, v.dims, options.causal));
  resolve_scale(options, q.dims.back());
  const CodebookLayout layout = check_codebook(codebook, q.dims, k.dims);
  const HeadGroups g = head_groups(q.dims, k.dims);
  const auto masks = key_mask_rows(key_mask, k.dims);
  if (!q.data || !k.data || !v.data) check_inputs(q, k, v);
  const double work = factored_work(g.query_heads * (rows_of(q.dims) + rows_of(k.dims)), rows_of(codebook.dims),
                                    cols_of(q.dims), cols_of(v.dims));
  // As exact attention: each head's inputs awaited and checked on its thread, all in order on an error.
  try {
    if (layout == CodebookLayout::per_query_head && g.group() > 1) {
      // One codebook per query head: the keys' responsibilities differ per head, nothing to share.
      for_each_head(g.query_heads, work, factored_blocks(g.query_heads, q.dims, k.dims), [&](Index h) {
        const Index kv = g.kv_of(h);
        const auto qh = head(q, h);
        head_inputs_in(qh.data(), qh.size(), head(k, kv), head(v, kv));
        codebook_attention(head(codebook, h), qh, head(k, kv), head(v, kv), head(out, h), for_kv_head(options, masks, kv));
      });
      return;
    }
    for_each_head(g.kv_heads, work, factored_blocks(g.query_heads, q.dims, k.dims), [&](Index kv) {
      const QueryGroup group = query_group(g, kv, q, out);
      head_inputs_in(group.qs[0].data(), group.qs[0].size() * static_cast<Index>(group.qs.size()), head(k, kv), head(v, kv));
      codebook_attention(head(codebook, layout == CodebookLayout::shared ? 0 : kv), group.qs, head(k, kv), head(v, kv),
                         group.outs, for_kv_head(options, masks, kv));
    });
  } catch (...) {  // (no typed catch: the pthreads build would skip it, see bindings/wasm/error_values.cpp)
    check_inputs(q, k, v);
    throw;
  }
}

void codebook_attention_matrix(const ConstTensorView& codebook, const ConstTensorView& q,
                               const ConstTensorView& k, const TensorView& out,
                               const CodebookOptions& options, const ConstMaskView& key_mask) {
  check_output(out, attention_matrix_dims(q.dims, k.dims, options.causal));
  resolve_scale(options, q.dims.back());
  const CodebookLayout layout = check_codebook(codebook, q.dims, k.dims);
  const HeadGroups g = head_groups(q.dims, k.dims);
  const auto masks = key_mask_rows(key_mask, k.dims);
  check_values(q, "q"), check_values(k, "k");
  const double work = g.query_heads * (factored_work(rows_of(q.dims) + rows_of(k.dims), rows_of(codebook.dims), cols_of(q.dims), 0.0) +
                                       exact_work(rows_of(q.dims), rows_of(k.dims), static_cast<double>(rows_of(codebook.dims)), 0.0, options.causal));
  for_each_head(g.query_heads, work, g.query_heads, [&](Index h) {
    const Index kv = g.kv_of(h);
    const Index c = layout == CodebookLayout::shared ? 0 : layout == CodebookLayout::per_query_head ? h : kv;
    codebook_attention_matrix(head(codebook, c), head(q, h), head(k, kv), head(out, h), for_kv_head(options, masks, kv));
  });
}

std::vector<Index> kmeans_dims(const std::vector<Index>& points, Index clusters) {
  check_rank(points, "k", "[..., n, d]");
  const Index n = points[points.size() - 2];
  if (clusters < 1 || clusters > n)
    throw_range("clusters", "expected an integer in [1, " + std::to_string(n) + "] (the number of keys), got " +
                                std::to_string(clusters));
  std::vector<Index> out = points;
  out[out.size() - 2] = clusters;
  return out;
}

void kmeans(const ConstTensorView& points, const TensorView& out, const KMeansOptions& options) {
  check_output(out, kmeans_dims(points.dims, options.clusters));
  check_values(points, "k");
  const double work = heads(points.dims) * factored_work(rows_of(points.dims), options.clusters, cols_of(points.dims), 0.0) *
                      static_cast<double>(options.iterations);
  for_each_head(heads(points.dims), work, heads(points.dims), [&](Index h) { head(out, h) = kmeans(head(points, h), options).centroids; });
}

MatrixErrors compare(const ConstTensorView& exact, const ConstTensorView& approx) {
  check_rank(exact.dims, "exact", "[..., L, S]");
  if (approx.dims != exact.dims)
    throw_range("approx", "expected dims " + dims_string(exact.dims) + " (as exact), got " + dims_string(approx.dims));
  if (!exact.data || !approx.data) throw_type(exact.data ? "approx" : "exact", "has no data");
  const Index cols = exact.dims.back(), rows = element_count(exact.dims, "exact") / cols;
  check_finite(exact.data, rows * cols, "exact");
  return compare(Eigen::Map<const Matrix>(exact.data, rows, cols),
                 Eigen::Map<const Matrix>(approx.data, rows, cols));
}

}  // namespace favor
