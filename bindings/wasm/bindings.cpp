// Embind glue: heap pointers and dims in, core calls, errors out as values.
//
// No exception may unwind through wasm frames into JS (it leaks the shadow stack in
// Emscripten 3.1.6), so every entry point catches everything and returns either a result
// object or { error, message } that web/api.js turns into a TypeError or RangeError.
#include <emscripten/bind.h>
#include <emscripten/val.h>

#include <cxxabi.h>
#include <malloc.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <memory>
#include <new>
#include <string>
#include <typeinfo>
#include <vector>

#include <favor/favor.hpp>
#include <favor/gemm.hpp>
#include <favor/vector_math.hpp>

#include "thread_cached_malloc.hpp"

using emscripten::val;

namespace {

// One wasm allocation cannot reach 2 GiB (see docs/emscripten-3.1.6-notes.md).
constexpr double kMaxAllocationBytes = 2147483647.0 - 65536.0;

std::vector<favor::Index> to_dims(const val& dims) {
  std::vector<favor::Index> out;
  const unsigned n = dims["length"].as<unsigned>();
  out.reserve(n);
  for (unsigned i = 0; i < n; ++i) out.push_back(static_cast<favor::Index>(dims[i].as<double>()));
  return out;
}

val to_array(const std::vector<favor::Index>& dims) {
  val a = val::array();
  for (favor::Index d : dims) a.call<void>("push", static_cast<double>(d));
  return a;
}

val error(const char* kind, const std::string& message) {
  val e = val::object();
  e.set("error", kind);
  e.set("message", message);
  return e;
}

// The exception being handled, as an error value. Looked up by its exact type rather than by
// typed catch clauses: in the pthreads build, clang 14's wasm exceptions match only catch (...)
// (typed clauses are skipped), while the type of the exception in hand is reported correctly.
val current_error() {
  const std::type_info* type = abi::__cxa_current_exception_type();
  void* object = abi::__cxa_current_primary_exception();  // the thrown object; counted, released below
  const auto is = [type](const std::type_info& t) { return type && *type == t; };
  val e = val::undefined();
  if (is(typeid(favor::Error))) {
    const auto* x = static_cast<const favor::Error*>(object);
    e = error(x->kind() == favor::Error::Kind::type ? "TypeError" : "RangeError", x->what());
  } else if (is(typeid(std::bad_alloc)) || is(typeid(std::bad_array_new_length)) || is(typeid(std::length_error))) {
    e = error("RangeError", "out of memory: the request does not fit in the WebAssembly heap");
  } else {
    e = error("Error", std::string("unknown internal error") + (type ? std::string(" (") + type->name() + ")" : ""));
  }
  if (object) abi::__cxa_decrement_exception_refcount(object);
  return e;
}

template <class Fn>
val guarded(Fn&& fn) {
  try {
    return fn();
  } catch (...) {
    return current_error();
  }
}

// A float buffer owned by JS from here on (freed with Module._free after copying out).
float* allocate_output(const std::vector<favor::Index>& dims, const char* what) {
  double bytes = 4.0;
  for (favor::Index d : dims) bytes *= static_cast<double>(d);
  if (bytes > kMaxAllocationBytes)
    favor::throw_range(what, "the result would take " + std::to_string(bytes / 1073741824.0) +
                                 " GiB, more than one WebAssembly allocation can hold (2 GiB)");
  // On a cache line, as the inputs (web/api.js): malloc only guarantees 8 bytes here. JS frees it with free().
  constexpr std::size_t kLine = 64;
  const std::size_t size = (static_cast<std::size_t>(bytes) + kLine - 1) / kLine * kLine;
  auto* out = static_cast<float*>(std::aligned_alloc(kLine, size ? size : kLine));
  if (!out) throw std::bad_alloc();
  return out;
}

val result(float* out, const std::vector<favor::Index>& dims) {
  val r = val::object();
  r.set("ptr", static_cast<double>(reinterpret_cast<std::uintptr_t>(out)));
  r.set("dims", to_array(dims));
  return r;
}

favor::ConstTensorView view(std::uintptr_t ptr, const val& dims) {
  return {reinterpret_cast<const float*>(ptr), to_dims(dims)};
}

// A key mask (bytes) from JS: ptr 0 means none.
favor::ConstMaskView mask_view(std::uintptr_t ptr, const val& dims) {
  if (!ptr) return {};
  return {reinterpret_cast<const std::uint8_t*>(ptr), to_dims(dims)};
}

favor::AttentionOptions attention_options(bool causal, double scale) {
  favor::AttentionOptions o;
  o.causal = causal;
  if (!std::isnan(scale)) o.scale = scale;  // NaN from JS means "not given"
  return o;
}

// Runs `compute(out)` into a freshly allocated output of `dims`, freeing it on failure.
// out_length: the length of the caller's options.out (NaN: none), checked against the output's
// size before anything is computed or changed (a causal state's append included); JS copies the
// result into it.
template <class Compute>
val with_output(const std::vector<favor::Index>& dims, double out_length, Compute&& compute) {
  if (!std::isnan(out_length)) {
    double size = 1.0;
    for (favor::Index d : dims) size *= static_cast<double>(d);
    if (out_length != size)
      favor::throw_range("out", "expected a Float32Array of " + std::to_string(static_cast<long long>(size)) +
                                    " floats (the output's dims " + favor::dims_string(dims) + "), got one of " +
                                    std::to_string(static_cast<long long>(out_length)) +
                                    (out_length == 0 ? " (empty or detached)" : ""));
  }
  float* out = allocate_output(dims, "output");
  try {
    compute(favor::TensorView{out, dims});
  } catch (...) {
    std::free(out);
    throw;
  }
  return result(out, dims);
}

// The JS-facing feature map: constructing it cannot fail; init() reports errors as values.
class FeatureMapHandle {
 public:
  val init(double dim, double features, std::string kernel, std::string sampling, double seed,
           double epsilon, double rho) {
    return guarded([&] {
      favor::FeatureMapOptions o;
      if (!std::isnan(rho)) o.rho = rho;
      o.dim = static_cast<favor::Index>(dim);
      o.features = static_cast<favor::Index>(features);
      o.kernel = favor::parse_kernel(kernel);
      o.sampling = favor::parse_sampling(sampling);
      o.seed = static_cast<std::uint64_t>(seed);
      o.epsilon = epsilon;
      check_size(o.features, o.dim);
      map_ = std::make_unique<favor::FeatureMap>(o);
      return val::undefined();
    });
  }

  val init_projection(std::uintptr_t ptr, double rows, double cols, std::string kernel,
                      std::string sampling, double epsilon, double rho) {
    return guarded([&] {
      const favor::Kernel k = favor::parse_kernel(kernel);
      const favor::Sampling s = favor::parse_sampling(sampling);
      const auto m = static_cast<favor::Index>(rows), d = static_cast<favor::Index>(cols);
      favor::check_finite(reinterpret_cast<const float*>(ptr), m * d, "projection");
      favor::Matrix w = Eigen::Map<const favor::Matrix>(reinterpret_cast<const float*>(ptr), m, d);
      auto map = std::make_unique<favor::FeatureMap>(k, std::move(w), epsilon, s);
      if (!std::isnan(rho)) map->set_rho(rho);
      map_ = std::move(map);
      return val::undefined();
    });
  }

  val redraw(double seed) {
    return guarded([&] {
      map_->redraw(static_cast<std::uint64_t>(seed));
      return val::undefined();
    });
  }

  // A copy-free view of W; JS copies it before the next call into wasm.
  val projection() const {
    const favor::Matrix& w = map_->projection();
    return val(emscripten::typed_memory_view(static_cast<std::size_t>(w.size()), w.data()));
  }

  double dim() const { return static_cast<double>(map_->dim()); }
  double features() const { return static_cast<double>(map_->num_projections()); }
  double num_features() const { return static_cast<double>(map_->num_features()); }
  std::string kernel() const { return favor::to_string(map_->kernel()); }
  std::string sampling() const { return favor::to_string(map_->sampling()); }
  double epsilon() const { return map_->epsilon(); }
  double rho() const { return map_->rho() ? *map_->rho() : NAN; }

  const favor::FeatureMap& map() const { return *map_; }

 private:
  static void check_size(favor::Index m, favor::Index d) {
    if (4.0 * static_cast<double>(m) * static_cast<double>(d) > kMaxAllocationBytes)
      favor::throw_range("features", "a projection of " + std::to_string(m) + " x " + std::to_string(d) +
                                         " floats does not fit in one WebAssembly allocation");
  }

  std::unique_ptr<favor::FeatureMap> map_;
};

val exact_attention(std::uintptr_t q, val q_dims, std::uintptr_t k, val k_dims, std::uintptr_t v,
                    val v_dims, bool causal, double scale, std::uintptr_t mask, val mask_dims,
                    double out_length) {
  return guarded([&] {
    const auto qv = view(q, q_dims), kv = view(k, k_dims), vv = view(v, v_dims);
    const auto dims = favor::attention_output_dims(qv.dims, kv.dims, vv.dims, causal);
    return with_output(dims, out_length, [&](const favor::TensorView& out) {
      favor::exact_attention(qv, kv, vv, out, attention_options(causal, scale), mask_view(mask, mask_dims));
    });
  });
}

val attention_matrix(std::uintptr_t q, val q_dims, std::uintptr_t k, val k_dims, bool causal,
                     double scale, std::uintptr_t mask, val mask_dims, double out_length) {
  return guarded([&] {
    const auto qv = view(q, q_dims), kv = view(k, k_dims);
    const auto dims = favor::attention_matrix_dims(qv.dims, kv.dims, causal);
    return with_output(dims, out_length, [&](const favor::TensorView& out) {
      favor::attention_matrix(qv, kv, out, attention_options(causal, scale), mask_view(mask, mask_dims));
    });
  });
}

val favor_attention(const FeatureMapHandle& map, std::uintptr_t q, val q_dims, std::uintptr_t k,
                    val k_dims, std::uintptr_t v, val v_dims, bool causal, double scale,
                    double chunk, std::uintptr_t mask, val mask_dims, double out_length) {
  return guarded([&] {
    const auto qv = view(q, q_dims), kv = view(k, k_dims), vv = view(v, v_dims);
    const auto dims = favor::attention_output_dims(qv.dims, kv.dims, vv.dims, causal);
    favor::FavorOptions o;
    static_cast<favor::AttentionOptions&>(o) = attention_options(causal, scale);
    if (!std::isnan(chunk)) o.chunk = static_cast<favor::Index>(chunk);
    return with_output(dims, out_length, [&](const favor::TensorView& out) {
      favor::favor_attention(map.map(), qv, kv, vv, out, o, mask_view(mask, mask_dims));
    });
  });
}

val favor_attention_matrix(const FeatureMapHandle& map, std::uintptr_t q, val q_dims,
                           std::uintptr_t k, val k_dims, bool causal, double scale, std::uintptr_t mask,
                           val mask_dims, double out_length) {
  return guarded([&] {
    const auto qv = view(q, q_dims), kv = view(k, k_dims);
    const auto dims = favor::attention_matrix_dims(qv.dims, kv.dims, causal);
    return with_output(dims, out_length, [&](const favor::TensorView& out) {
      favor::favor_attention_matrix(map.map(), qv, kv, out, attention_options(causal, scale),
                                    mask_view(mask, mask_dims));
    });
  });
}

val compare(std::uintptr_t exact, val exact_dims, std::uintptr_t approx, val approx_dims) {
  return guarded([&] {
    const favor::MatrixErrors e = favor::compare(view(exact, exact_dims), view(approx, approx_dims));
    val r = val::object();
    r.set("mse", e.mse);
    r.set("relFrobenius", e.rel_frobenius);
    r.set("maxAbs", e.max_abs);
    r.set("meanRowKL", e.mean_row_kl);
    return r;
  });
}

val output_relative_error(std::uintptr_t exact, val exact_dims, std::uintptr_t approx,
                          val approx_dims) {
  return guarded([&] {
    const auto e = view(exact, exact_dims), a = view(approx, approx_dims);
    if (e.dims != a.dims) favor::throw_range("approx", "expected the dims of exact");
    const favor::Index n = favor::element_count(e.dims, "exact");
    favor::check_finite(e.data, n, "exact");
    using Row = Eigen::Map<const favor::Matrix>;
    val r = val::object();
    r.set("value", favor::output_relative_error(Row(e.data, 1, n), Row(a.data, 1, n)));
    return r;
  });
}

favor::CodebookOptions codebook_options(const std::string& assignment, double temperature,
                                        bool causal, double scale, double chunk) {
  favor::CodebookOptions o;
  static_cast<favor::AttentionOptions&>(o) = attention_options(causal, scale);
  o.assignment = favor::parse_assignment(assignment);
  o.temperature = temperature;
  if (!std::isnan(chunk)) o.chunk = static_cast<favor::Index>(chunk);
  return o;
}

val codebook_attention(std::uintptr_t c, val c_dims, std::uintptr_t q, val q_dims, std::uintptr_t k,
                       val k_dims, std::uintptr_t v, val v_dims, std::string assignment,
                       double temperature, bool causal, double scale, double chunk, std::uintptr_t mask,
                       val mask_dims, double out_length) {
  return guarded([&] {
    const auto cv = view(c, c_dims), qv = view(q, q_dims), kv = view(k, k_dims), vv = view(v, v_dims);
    const auto o = codebook_options(assignment, temperature, causal, scale, chunk);
    const auto dims = favor::attention_output_dims(qv.dims, kv.dims, vv.dims, causal);
    return with_output(dims, out_length, [&](const favor::TensorView& out) {
      favor::codebook_attention(cv, qv, kv, vv, out, o, mask_view(mask, mask_dims));
    });
  });
}

val codebook_attention_matrix(std::uintptr_t c, val c_dims, std::uintptr_t q, val q_dims,
                              std::uintptr_t k, val k_dims, std::string assignment,
                              double temperature, bool causal, double scale, std::uintptr_t mask,
                              val mask_dims, double out_length) {
  return guarded([&] {
    const auto cv = view(c, c_dims), qv = view(q, q_dims), kv = view(k, k_dims);
    const auto o = codebook_options(assignment, temperature, causal, scale, NAN);
    const auto dims = favor::attention_matrix_dims(qv.dims, kv.dims, causal);
    return with_output(dims, out_length, [&](const favor::TensorView& out) {
      favor::codebook_attention_matrix(cv, qv, kv, out, o, mask_view(mask, mask_dims));
    });
  });
}

val matmul(std::uintptr_t a, val a_dims, std::uintptr_t b, val b_dims, std::uintptr_t bias, val bias_dims,
           bool transpose_b, double out_length) {
  return guarded([&] {
    const auto av = view(a, a_dims), bv = view(b, b_dims);
    favor::MatmulOptions o;
    o.transpose_b = transpose_b;
    const favor::ConstTensorView biasv = bias ? view(bias, bias_dims) : favor::ConstTensorView{};
    const auto dims = favor::matmul_dims(av.dims, bv.dims, o);
    return with_output(dims, out_length, [&](const favor::TensorView& out) {
      favor::matmul(av, bv, bias ? &biasv : nullptr, out, o);
    });
  });
}

// The JS-facing packed matrix (favor.packMatrix): constructing it cannot fail; init() reports
// errors as values.
class PackedMatrixHandle {
 public:
  val init(std::uintptr_t b, val b_dims, bool transpose_b) {
    return guarded([&] {
      favor::MatmulOptions o;
      o.transpose_b = transpose_b;
      matrix_ = std::make_unique<favor::PackedMatrix>(view(b, b_dims), o);
      return val::undefined();
    });
  }

  val matmul(std::uintptr_t a, val a_dims, std::uintptr_t bias, val bias_dims, double out_length) const {
    return guarded([&] {
      const auto av = view(a, a_dims);
      const favor::ConstTensorView biasv = bias ? view(bias, bias_dims) : favor::ConstTensorView{};
      const auto dims = favor::matmul_dims(av.dims, *matrix_);
      return with_output(dims, out_length, [&](const favor::TensorView& out) {
        favor::matmul(av, *matrix_, bias ? &biasv : nullptr, out);
      });
    });
  }

  double bytes() const { return static_cast<double>(matrix_->bytes()); }

 private:
  std::unique_ptr<favor::PackedMatrix> matrix_;
};

// The JS-facing causal state: constructing it cannot fail; init*() report errors as values.
class CausalStateHandle {
 public:
  val init_exact(double scale) {
    return guarded([&] {
      favor::CausalStateOptions o;
      o.method = favor::StateMethod::exact;
      set_scale(o, scale);
      state_ = std::make_unique<favor::CausalState>(o);
      return val::undefined();
    });
  }

  val init_favor(const FeatureMapHandle& map, double scale, double chunk) {
    return guarded([&] {
      favor::CausalStateOptions o;
      o.method = favor::StateMethod::favor;
      o.map = &map.map();
      set_scale(o, scale);
      if (!std::isnan(chunk)) o.chunk = static_cast<favor::Index>(chunk);
      state_ = std::make_unique<favor::CausalState>(o);
      return val::undefined();
    });
  }

  val init_codebook(std::uintptr_t c, val c_dims, std::string assignment, double temperature, double scale,
                    double chunk) {
    return guarded([&] {
      favor::CausalStateOptions o;
      o.method = favor::StateMethod::codebook;
      o.codebook = view(c, c_dims);
      o.assignment = favor::parse_assignment(assignment);
      o.temperature = temperature;
      set_scale(o, scale);
      if (!std::isnan(chunk)) o.chunk = static_cast<favor::Index>(chunk);
      state_ = std::make_unique<favor::CausalState>(o);
      return val::undefined();
    });
  }

  val append(std::uintptr_t q, val q_dims, std::uintptr_t k, val k_dims, std::uintptr_t v, val v_dims,
             std::uintptr_t mask, val mask_dims, double out_length) {
    return guarded([&] {
      const auto qv = view(q, q_dims), kv = view(k, k_dims), vv = view(v, v_dims);
      const auto dims = state_->append_dims(qv.dims, kv.dims, vv.dims);
      return with_output(dims, out_length, [&](const favor::TensorView& out) {
        state_->append(qv, kv, vv, out, mask_view(mask, mask_dims));
      });
    });
  }

  double length() const { return static_cast<double>(state_->length()); }
  double state_bytes() const { return static_cast<double>(state_->state_bytes()); }
  void reset() { state_->reset(); }

 private:
  static void set_scale(favor::CausalStateOptions& o, double scale) {
    if (!std::isnan(scale)) o.scale = scale;
  }

  std::unique_ptr<favor::CausalState> state_;
};

val kmeans(std::uintptr_t points, val dims, double clusters, double iterations, double seed) {
  return guarded([&] {
    const auto pv = view(points, dims);
    favor::KMeansOptions o;
    o.clusters = static_cast<favor::Index>(clusters);
    o.iterations = static_cast<favor::Index>(iterations);
    o.seed = static_cast<std::uint64_t>(seed);
    const auto out_dims = favor::kmeans_dims(pv.dims, o.clusters);
    return with_output(out_dims, NAN, [&](const favor::TensorView& out) { favor::kmeans(pv, out, o); });
  });
}

val random_codebook(double clusters, double dim, double seed, double sigma) {
  return guarded([&] {
    const std::vector<favor::Index> dims{static_cast<favor::Index>(clusters), static_cast<favor::Index>(dim)};
    return with_output(dims, NAN, [&](const favor::TensorView& out) {
      Eigen::Map<favor::Matrix>(out.data, dims[0], dims[1]) =
          favor::random_codebook(dims[0], dims[1], static_cast<std::uint64_t>(seed), sigma);
    });
  });
}

// Bytes of the heap currently allocated by malloc (dlmalloc's in-use total): a diagnostic for
// leak tests, exposed as favor.memory().usedBytes.
double heap_used() {
  favor_wasm::drain_thread_caches();
  return static_cast<double>(mallinfo().uordblks);
}

// Whether this module is the relaxed-SIMD build (fused multiply-adds): favor.info.relaxedSimd
// comes from the module itself, whichever file was loaded.
bool relaxed_simd() { return favor::vec::kFusedMultiplyAdd; }

// The GEMM's register tile rows (4 or 6, see gemm.hpp): the loader picks them for the engine.
int set_tile_rows(int rows) {
  favor::gemm::set_tile_rows(rows);
  return favor::gemm::tile_rows();
}

// Threads for later calls (1 in builds without pthreads). The loader sets it once, to the pool
// size + 1: more would start workers that only the blocked caller's event loop could create.
int set_max_threads(int threads) {
  favor::set_max_threads(threads);
  favor_wasm::drain_thread_caches();  // dispose() ends the helpers next: their cached blocks go back now
  return favor::max_threads();
}

}  // namespace

EMSCRIPTEN_BINDINGS(favor_attention) {
  emscripten::class_<FeatureMapHandle>("FeatureMap")
      .constructor<>()
      .function("init", &FeatureMapHandle::init)
      .function("initProjection", &FeatureMapHandle::init_projection)
      .function("redraw", &FeatureMapHandle::redraw)
      .function("projection", &FeatureMapHandle::projection)
      .function("dim", &FeatureMapHandle::dim)
      .function("features", &FeatureMapHandle::features)
      .function("numFeatures", &FeatureMapHandle::num_features)
      .function("kernel", &FeatureMapHandle::kernel)
      .function("sampling", &FeatureMapHandle::sampling)
      .function("epsilon", &FeatureMapHandle::epsilon)
      .function("rho", &FeatureMapHandle::rho);
  emscripten::class_<CausalStateHandle>("CausalState")
      .constructor<>()
      .function("initExact", &CausalStateHandle::init_exact)
      .function("initFavor", &CausalStateHandle::init_favor)
      .function("initCodebook", &CausalStateHandle::init_codebook)
      .function("append", &CausalStateHandle::append)
      .function("length", &CausalStateHandle::length)
      .function("stateBytes", &CausalStateHandle::state_bytes)
      .function("reset", &CausalStateHandle::reset);
  emscripten::class_<PackedMatrixHandle>("PackedMatrix")
      .constructor<>()
      .function("init", &PackedMatrixHandle::init)
      .function("matmul", &PackedMatrixHandle::matmul)
      .function("bytes", &PackedMatrixHandle::bytes);
  emscripten::function("matmul", &matmul);
  emscripten::function("exactAttention", &exact_attention);
  emscripten::function("attentionMatrix", &attention_matrix);
  emscripten::function("favorAttention", &favor_attention);
  emscripten::function("favorAttentionMatrix", &favor_attention_matrix);
  emscripten::function("codebookAttention", &codebook_attention);
  emscripten::function("codebookAttentionMatrix", &codebook_attention_matrix);
  emscripten::function("kmeans", &kmeans);
  emscripten::function("randomCodebook", &random_codebook);
  emscripten::function("compare", &compare);
  emscripten::function("outputRelativeError", &output_relative_error);
  emscripten::function("heapUsed", &heap_used);
  emscripten::function("setMaxThreads", &set_max_threads);
  emscripten::function("relaxedSimd", &relaxed_simd);
  emscripten::function("setTileRows", &set_tile_rows);
}
