// Embind glue: the entry points JS calls, each a core call between the heap's tensors
// (heap.hpp) and errors returned as values (error_values.hpp).
#include <emscripten/bind.h>
#include <emscripten/val.h>

#include <malloc.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <favor/favor.hpp>
// Internal headers, for what the C++ API leaves to the builds: the GEMM's tile rows and whether
// this module fuses multiply-adds (loadFavor's tuning), waking the helpers before a call, and the
// dims helpers of the core's messages.
#include <favor/kernels/gemm.hpp>
#include <favor/kernels/vector_math.hpp>
#include <favor/tensor/shape.hpp>
#include <favor/threads/rouse.hpp>

#include "error_values.hpp"
#include "heap.hpp"
#include "thread_cached_malloc.hpp"

using emscripten::val;
using namespace favor_wasm;

namespace {

favor::AttentionOptions attention_options(bool causal, double scale) {
  favor::AttentionOptions o;
  o.causal = causal;
  if (!std::isnan(scale)) o.scale = scale;  // NaN from JS means "not given"
  return o;
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

  // The projection W [m, d] is a heap tensor (web/heap.js), its dims read from before its data.
  val init_projection(std::uintptr_t ptr, std::string kernel, std::string sampling, double epsilon,
                      double rho) {
    return guarded([&] {
      const favor::Kernel k = favor::parse_kernel(kernel);
      const favor::Sampling s = favor::parse_sampling(sampling);
      const favor::ConstTensorView w_view = view(ptr);
      if (w_view.dims.size() != 2) throw InternalError("the projection is not a matrix");
      const favor::Index m = w_view.dims[0], d = w_view.dims[1];
      favor::check_finite(w_view.data, m * d, "projection");
      favor::Matrix w = Eigen::Map<const favor::Matrix>(w_view.data, m, d);
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

  // Fixes a data-dependent kernel's parameters from sample queries and keys ([..., rows, d] each,
  // all rows used) at attention scale `scale` (NaN: 1/sqrt(d)).
  val fit(std::uintptr_t q_ptr, std::uintptr_t k_ptr, double scale) {
    return guarded([&] {
      const auto rows_of = [](const favor::ConstTensorView& t) {
        favor::Index rows = 1;
        for (std::size_t i = 0; i + 1 < t.dims.size(); ++i) rows *= t.dims[i];
        return rows;
      };
      const favor::ConstTensorView q = view(q_ptr), k = view(k_ptr);
      const Eigen::Map<const favor::Matrix> x(q.data, rows_of(q), q.dims.back());
      const Eigen::Map<const favor::Matrix> y(k.data, rows_of(k), k.dims.back());
      map_->fit(x, y, std::isnan(scale) ? 1.0 / std::sqrt(static_cast<double>(map_->dim())) : scale);
      return val::undefined();
    });
  }

  bool data_dependent() const { return !map_->data_independent(); }

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

double exact_attention(std::uintptr_t q, std::uintptr_t k, std::uintptr_t v, bool causal, double scale,
                       std::uintptr_t mask, double out_length, bool arriving) {
  return guarded_tensor([&] {
    const favor::RousedCall roused;
    const auto qv = view(q), kv = view(k), vv = view(v);
    const auto dims = favor::attention_output_dims(qv.dims, kv.dims, vv.dims, causal);
    const auto inputs = arriving_inputs(arriving, qv, kv, vv);
    return with_output(dims, out_length, [&](const favor::TensorView& out) {
      favor::exact_attention(qv, kv, vv, out, attention_options(causal, scale), mask_view(mask));
    }, inputs.get());
  });
}

double attention_matrix(std::uintptr_t q, std::uintptr_t k, bool causal, double scale, std::uintptr_t mask,
                        double out_length) {
  return guarded_tensor([&] {
    const auto qv = view(q), kv = view(k);
    const auto dims = favor::attention_matrix_dims(qv.dims, kv.dims, causal);
    return with_output(dims, out_length, [&](const favor::TensorView& out) {
      favor::attention_matrix(qv, kv, out, attention_options(causal, scale), mask_view(mask));
    });
  });
}

double favor_attention(const FeatureMapHandle& map, std::uintptr_t q, std::uintptr_t k, std::uintptr_t v,
                       bool causal, double scale, double chunk, std::uintptr_t mask, double out_length, bool arriving) {
  return guarded_tensor([&] {
    const favor::RousedCall roused;
    const auto qv = view(q), kv = view(k), vv = view(v);
    const auto dims = favor::attention_output_dims(qv.dims, kv.dims, vv.dims, causal);
    favor::FavorOptions o;
    static_cast<favor::AttentionOptions&>(o) = attention_options(causal, scale);
    if (!std::isnan(chunk)) o.chunk = static_cast<favor::Index>(chunk);
    // A bidirectional call folds each head's keys and values as they come; a causal one folds a
    // wave's before it sweeps its queries (input_arrival.hpp).
    const auto inputs = arriving_inputs(arriving, qv, kv, vv,
                                        causal ? favor::HeadReading::whole : favor::HeadReading::by_slices);
    return with_output(dims, out_length, [&](const favor::TensorView& out) {
      favor::favor_attention(map.map(), qv, kv, vv, out, o, mask_view(mask));
    }, inputs.get());
  });
}

double favor_attention_matrix(const FeatureMapHandle& map, std::uintptr_t q, std::uintptr_t k, bool causal,
                              double scale, std::uintptr_t mask, double out_length) {
  return guarded_tensor([&] {
    const auto qv = view(q), kv = view(k);
    const auto dims = favor::attention_matrix_dims(qv.dims, kv.dims, causal);
    return with_output(dims, out_length, [&](const favor::TensorView& out) {
      favor::favor_attention_matrix(map.map(), qv, kv, out, attention_options(causal, scale),
                                    mask_view(mask));
    });
  });
}

val compare(std::uintptr_t exact, std::uintptr_t approx) {
  return guarded([&] {
    const favor::MatrixErrors e = favor::compare(view(exact), view(approx));
    val r = val::object();
    r.set("mse", e.mse);
    r.set("relFrobenius", e.rel_frobenius);
    r.set("maxAbs", e.max_abs);
    r.set("meanRowKL", e.mean_row_kl);
    return r;
  });
}

val output_relative_error(std::uintptr_t exact, std::uintptr_t approx) {
  return guarded([&] {
    const auto e = view(exact), a = view(approx);
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

double codebook_attention(std::uintptr_t c, std::uintptr_t q, std::uintptr_t k, std::uintptr_t v,
                          std::string assignment, double temperature, bool causal, double scale, double chunk,
                          std::uintptr_t mask, double out_length, bool arriving) {
  return guarded_tensor([&] {
    const favor::RousedCall roused;
    const auto cv = view(c), qv = view(q), kv = view(k), vv = view(v);
    const auto o = codebook_options(assignment, temperature, causal, scale, chunk);
    const auto dims = favor::attention_output_dims(qv.dims, kv.dims, vv.dims, causal);
    const auto inputs = arriving_inputs(arriving, qv, kv, vv);
    return with_output(dims, out_length, [&](const favor::TensorView& out) {
      favor::codebook_attention(cv, qv, kv, vv, out, o, mask_view(mask));
    }, inputs.get());
  });
}

double codebook_attention_matrix(std::uintptr_t c, std::uintptr_t q, std::uintptr_t k, std::string assignment,
                                 double temperature, bool causal, double scale, std::uintptr_t mask,
                                 double out_length) {
  return guarded_tensor([&] {
    const auto cv = view(c), qv = view(q), kv = view(k);
    const auto o = codebook_options(assignment, temperature, causal, scale, NAN);
    const auto dims = favor::attention_matrix_dims(qv.dims, kv.dims, causal);
    return with_output(dims, out_length, [&](const favor::TensorView& out) {
      favor::codebook_attention_matrix(cv, qv, kv, out, o, mask_view(mask));
    });
  });
}

double matmul(std::uintptr_t a, std::uintptr_t b, std::uintptr_t bias, bool transpose_b, double out_length) {
  return guarded_tensor([&] {
    const auto av = view(a), bv = view(b);
    favor::MatmulOptions o;
    o.transpose_b = transpose_b;
    const favor::ConstTensorView biasv = bias ? view(bias) : favor::ConstTensorView{};
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
  val init(std::uintptr_t b, bool transpose_b) {
    return guarded([&] {
      favor::MatmulOptions o;
      o.transpose_b = transpose_b;
      matrix_ = std::make_unique<favor::PackedMatrix>(view(b), o);
      return val::undefined();
    });
  }

  double matmul(std::uintptr_t a, std::uintptr_t bias, double out_length) const {
    return guarded_tensor([&] {
      const auto av = view(a);
      const favor::ConstTensorView biasv = bias ? view(bias) : favor::ConstTensorView{};
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
  val init_exact(double scale, double window) {
    return guarded([&] {
      favor::CausalStateOptions o;
      o.method = favor::StateMethod::exact;
      set_scale(o, scale);
      set_window(o, window);
      state_ = std::make_unique<favor::CausalState>(o);
      return val::undefined();
    });
  }

  val init_favor(const FeatureMapHandle& map, double scale, double chunk, double window) {
    return guarded([&] {
      favor::CausalStateOptions o;
      o.method = favor::StateMethod::favor;
      o.map = &map.map();
      set_scale(o, scale);
      set_window(o, window);
      if (!std::isnan(chunk)) o.chunk = static_cast<favor::Index>(chunk);
      state_ = std::make_unique<favor::CausalState>(o);
      return val::undefined();
    });
  }

  val init_codebook(std::uintptr_t c, std::string assignment, double temperature, double scale, double chunk) {
    return guarded([&] {
      favor::CausalStateOptions o;
      o.method = favor::StateMethod::codebook;
      o.codebook = view(c);
      o.assignment = favor::parse_assignment(assignment);
      o.temperature = temperature;
      set_scale(o, scale);
      if (!std::isnan(chunk)) o.chunk = static_cast<favor::Index>(chunk);
      state_ = std::make_unique<favor::CausalState>(o);
      return val::undefined();
    });
  }

  double append(std::uintptr_t q, std::uintptr_t k, std::uintptr_t v, std::uintptr_t mask, double out_length) {
    return guarded_tensor([&] {
      const auto qv = view(q), kv = view(k), vv = view(v);
      const auto dims = state_->append_dims(qv.dims, kv.dims, vv.dims);
      return with_output(dims, out_length, [&](const favor::TensorView& out) {
        state_->append(qv, kv, vv, out, mask_view(mask));
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

  // window: NaN for none, else an integer >= 1 checked in JS (up to 2^53). One longer than a wasm
  // Index holds is longer than any sequence the heap could hold: the largest Index, a multiple of 4
  // as FAVOR+'s windows are (the core checks the rest).
  static void set_window(favor::CausalStateOptions& o, double window) {
    if (std::isnan(window)) return;
    constexpr favor::Index kLargest = std::numeric_limits<favor::Index>::max() / 4 * 4;
    o.window = window >= static_cast<double>(kLargest) ? kLargest : static_cast<favor::Index>(window);
  }

  std::unique_ptr<favor::CausalState> state_;
};

double kmeans(std::uintptr_t points, double clusters, double iterations, double seed) {
  return guarded_tensor([&] {
    const auto pv = view(points);
    favor::KMeansOptions o;
    o.clusters = static_cast<favor::Index>(clusters);
    o.iterations = static_cast<favor::Index>(iterations);
    o.seed = static_cast<std::uint64_t>(seed);
    const auto out_dims = favor::kmeans_dims(pv.dims, o.clusters);
    return with_output(out_dims, NAN, [&](const favor::TensorView& out) { favor::kmeans(pv, out, o); });
  });
}

double random_codebook(double clusters, double dim, double seed, double sigma) {
  return guarded_tensor([&] {
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

// Whether this module is a SIMD build, and the relaxed-SIMD one (fused multiply-adds):
// favor.info.simd and .relaxedSimd come from the module itself, whichever file was loaded.
bool simd() {
#if defined(__wasm_simd128__)
  return true;
#else
  return false;
#endif
}
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
      .function("rho", &FeatureMapHandle::rho)
      .function("fit", &FeatureMapHandle::fit)
      .function("dataDependent", &FeatureMapHandle::data_dependent);
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
  emscripten::function("lastError", &last_error);
  emscripten::function("heapUsed", &heap_used);
  emscripten::function("threadsUsed", &favor::take_threads_used);
  emscripten::function("rouseThreads", &favor::rouse_threads);
  emscripten::function("setMaxThreads", &set_max_threads);
  emscripten::function("simd", &simd);
  emscripten::function("relaxedSimd", &relaxed_simd);
  emscripten::function("setTileRows", &set_tile_rows);
}
