#include "tensor.hpp"

#include <cmath>
#include <limits>
#include <string>

#include "error.hpp"
#include "parallel.hpp"
#include "vector_math.hpp"

namespace favor {

namespace {

std::string dims_string(const std::vector<Index>& dims) {
  std::string s = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

void check_rank(const std::vector<Index>& dims, const std::string& argument, const char* layout) {
  if (dims.size() < 2)
    throw_range(argument, std::string("expected dims ") + layout + " (rank >= 2), got " + dims_string(dims));
  for (Index d : dims)
    if (d < 1) throw_range(argument, "expected every dim >= 1, got " + dims_string(dims));
}

std::vector<Index> leading(const std::vector<Index>& dims) {
  return {dims.begin(), dims.end() - 2};
}

void check_leading(const std::vector<Index>& dims, const std::vector<Index>& q_dims,
                   const std::string& argument) {
  if (leading(dims) != leading(q_dims))
    throw_range(argument, "leading (batch/head) dims " + dims_string(leading(dims)) +
                              " do not match q's " + dims_string(leading(q_dims)));
}

Index heads(const std::vector<Index>& dims) {
  Index h = 1;
  for (std::size_t i = 0; i + 2 < dims.size(); ++i) h *= dims[i];
  return h;
}

// Runs fn(h) for every head. Heads are independent (each writes only its slice of out), so they
// go to threads when there are enough of them to keep every thread busy; otherwise the heads
// run in turn and each call parallelizes inside (the results are the same either way).
template <class F>
void for_each_head(Index count, F&& fn) {
  if (count >= max_threads()) {
    parallel_for(count, fn);
  } else {
    for (Index h = 0; h < count; ++h) fn(h);
  }
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

void check_values(const ConstTensorView& t, const std::string& argument) {
  if (!t.data) throw_type(argument, "has no data");
  check_finite(t.data, element_count(t.dims, argument), argument);
}

void check_output(const TensorView& out, const std::vector<Index>& expected) {
  if (!out.data) throw_type("out", "has no data");
  if (out.dims != expected)
    throw_range("out", "expected dims " + dims_string(expected) + ", got " + dims_string(out.dims));
}

}  // namespace

Index element_count(const std::vector<Index>& dims, const std::string& argument) {
  Index n = 1;
  for (Index d : dims) {
    if (d < 0) throw_range(argument, "expected dims >= 0, got " + dims_string(dims));
    if (d != 0 && n > std::numeric_limits<Index>::max() / d)
      throw_range(argument, "dims " + dims_string(dims) + " hold more elements than can be addressed");
    n *= d;
  }
  return n;
}

void check_finite(const float* data, Index count, const std::string& argument) {
  if (vec::all_finite(data, count)) return;
  for (Index i = 0; i < count; ++i)
    if (!std::isfinite(data[i]))
      throw_range(argument, "expected finite values, found " + std::to_string(data[i]) + " at index " +
                                std::to_string(i));
}

namespace {

// Shapes shared by the output and matrix forms; returns L and S. Counts nothing of size L x S.
std::pair<Index, Index> check_query_key(const std::vector<Index>& q, const std::vector<Index>& k,
                                        bool causal) {
  check_rank(q, "q", "[..., L, d]");
  check_rank(k, "k", "[..., S, d]");
  check_leading(k, q, "k");
  if (k.back() != q.back())
    throw_range("k", "expected last dim d = " + std::to_string(q.back()) + " (as q), got " + dims_string(k));
  const Index L = q[q.size() - 2], S = k[k.size() - 2];
  if (causal && L != S)
    throw_range("causal", "causal attention needs as many keys as queries, got L = " + std::to_string(L) +
                              ", S = " + std::to_string(S));
  return {L, S};
}

}  // namespace

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
  check_leading(v, q, "v");
  if (v[v.size() - 2] != k[k.size() - 2])
    throw_range("v", "expected S = " + std::to_string(k[k.size() - 2]) + " rows (as k), got " + dims_string(v));
  std::vector<Index> out = leading(q);
  out.push_back(q[q.size() - 2]);
  out.push_back(v.back());
  element_count(out, "output");
  return out;
}

void exact_attention(const ConstTensorView& q, const ConstTensorView& k, const ConstTensorView& v,
                     const TensorView& out, const AttentionOptions& options) {
  check_output(out, attention_output_dims(q.dims, k.dims, v.dims, options.causal));
  resolve_scale(options, q.dims.back());
  check_values(q, "q"), check_values(k, "k"), check_values(v, "v");
  for_each_head(heads(q.dims), [&](Index h) {
    exact_attention(head(q, h), head(k, h), head(v, h), head(out, h), options);
  });
}

void attention_matrix(const ConstTensorView& q, const ConstTensorView& k, const TensorView& out,
                      const AttentionOptions& options) {
  check_output(out, attention_matrix_dims(q.dims, k.dims, options.causal));
  resolve_scale(options, q.dims.back());
  check_values(q, "q"), check_values(k, "k");
  for_each_head(heads(q.dims), [&](Index h) { attention_matrix(head(q, h), head(k, h), head(out, h), options); });
}

void favor_attention(const FeatureMap& map, const ConstTensorView& q, const ConstTensorView& k,
                     const ConstTensorView& v, const TensorView& out, const FavorOptions& options) {
  check_output(out, attention_output_dims(q.dims, k.dims, v.dims, options.causal));
  if (q.dims.back() != map.dim())
    throw_range("q", "expected last dim d = " + std::to_string(map.dim()) + " (the feature map's dim), got " +
                         dims_string(q.dims));
  resolve_scale(options, q.dims.back());
  check_values(q, "q"), check_values(k, "k"), check_values(v, "v");
  for_each_head(heads(q.dims), [&](Index h) {
    favor_attention(map, head(q, h), head(k, h), head(v, h), head(out, h), options);
  });
}

void favor_attention_matrix(const FeatureMap& map, const ConstTensorView& q,
                            const ConstTensorView& k, const TensorView& out,
                            const AttentionOptions& options) {
  check_output(out, attention_matrix_dims(q.dims, k.dims, options.causal));
  if (q.dims.back() != map.dim())
    throw_range("q", "expected last dim d = " + std::to_string(map.dim()) + " (the feature map's dim), got " +
                         dims_string(q.dims));
  resolve_scale(options, q.dims.back());
  check_values(q, "q"), check_values(k, "k");
  for_each_head(heads(q.dims), [&](Index h) {
    favor_attention_matrix(map, head(q, h), head(k, h), head(out, h), options);
  });
}

namespace {

// The codebook of head h: shared ([c, d]) or per head ([..., c, d]).
Index check_codebook(const ConstTensorView& codebook, const std::vector<Index>& q) {
  check_rank(codebook.dims, "codebook", "[c, d] or [..., c, d]");
  if (codebook.dims.back() != q.back())
    throw_range("codebook", "expected last dim d = " + std::to_string(q.back()) + " (as q), got " +
                                dims_string(codebook.dims));
  if (codebook.dims.size() > 2) check_leading(codebook.dims, q, "codebook");
  check_values(codebook, "codebook");
  return codebook.dims.size() > 2 ? 1 : 0;  // stride in heads
}

}  // namespace

void codebook_attention(const ConstTensorView& codebook, const ConstTensorView& q,
                        const ConstTensorView& k, const ConstTensorView& v, const TensorView& out,
                        const CodebookOptions& options) {
  check_output(out, attention_output_dims(q.dims, k.dims, v.dims, options.causal));
  resolve_scale(options, q.dims.back());
  const Index per_head = check_codebook(codebook, q.dims);
  check_values(q, "q"), check_values(k, "k"), check_values(v, "v");
  for_each_head(heads(q.dims), [&](Index h) {
    codebook_attention(head(codebook, h * per_head), head(q, h), head(k, h), head(v, h), head(out, h), options);
  });
}

void codebook_attention_matrix(const ConstTensorView& codebook, const ConstTensorView& q,
                               const ConstTensorView& k, const TensorView& out,
                               const CodebookOptions& options) {
  check_output(out, attention_matrix_dims(q.dims, k.dims, options.causal));
  resolve_scale(options, q.dims.back());
  const Index per_head = check_codebook(codebook, q.dims);
  check_values(q, "q"), check_values(k, "k");
  for_each_head(heads(q.dims), [&](Index h) {
    codebook_attention_matrix(head(codebook, h * per_head), head(q, h), head(k, h), head(out, h), options);
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
  for_each_head(heads(points.dims), [&](Index h) { head(out, h) = kmeans(head(points, h), options).centroids; });
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
