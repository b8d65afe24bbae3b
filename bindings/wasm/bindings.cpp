// Embind glue: heap pointers and dims in, core calls, errors out as values.
//
// No exception may unwind through wasm frames into JS (it leaks the shadow stack in
// Emscripten 3.1.6), so every entry point catches everything and returns either a result
// object or { error, message } that web/api.js turns into a TypeError or RangeError.
#include <emscripten/bind.h>
#include <emscripten/em_js.h>
#include <emscripten/em_macros.h>
#include <emscripten/val.h>

#include <cxxabi.h>
#include <malloc.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <limits>
#include <memory>
#include <new>
#include <string>
#include <typeinfo>
#include <vector>

#include <favor/favor.hpp>
// Internal headers, for what the C++ API leaves to the builds: the GEMM's tile rows and whether
// this module fuses multiply-adds (loadFavor's tuning), the dims helpers of the core's messages,
// and the calling thread's task while the helpers start (with_output).
#include <favor/threads/caller_task.hpp>
#include <favor/threads/input_arrival.hpp>
#include <favor/threads/rouse.hpp>
#include <favor/kernels/gemm.hpp>
#include <favor/kernels/vector_math.hpp>
#include <favor/tensor/shape.hpp>

#include "thread_cached_malloc.hpp"

using emscripten::val;

// The array a result of `count` floats will be copied out into (web/heap.js takeTensor), made
// with its pages written once, so that the system maps them in now. Called on the calling thread
// while the helper threads compute (CallerTask); never throws: without memory for it now, the
// result gets its array after the call.
EM_JS(void, prepare_result_array, (double count), {
  try {
    const data = new Float32Array(count);
    for (let i = 0; i < count; i += 1024) data[i] = 0;  // one store per 4 KiB page
    Module.favorResultArray = data;
  } catch {
    Module.favorResultArray = undefined;
  }
});

// Copies floats [offset, offset + count) of the call's input `input` (web/heap.js, its tensors
// still arriving) to `to` in the heap; false if that failed (a JS exception must not cross the
// wasm frames). Called on the calling thread only (InputArrival).
EM_JS(bool, copy_arriving_input, (int input, double offset, double count, float* to), {
  try {
    Module.favorArriving(input, offset, count, to >>> 0);
    return true;
  } catch {
    return false;
  }
});

namespace {

// One wasm allocation cannot reach 2 GiB (see docs/toolchain.md §3).
constexpr double kMaxAllocationBytes = 2147483647.0 - 65536.0;

// A tensor in the heap carries its dims just before its data (web/api.js writes them for its
// inputs, allocate_output for outputs): its rank as a double at data - 8, its dims as the `rank`
// doubles before that. A pointer alone then describes a tensor: reading a JS dims array through
// Embind's val took a crossing per element and per property, much of a small call's time.
std::vector<favor::Index> dims_before(std::uintptr_t data) {
  const double* rank_at = reinterpret_cast<const double*>(data) - 1;
  const auto rank = static_cast<std::size_t>(*rank_at);
  const double* first = rank_at - rank;
  std::vector<favor::Index> dims(rank);
  for (std::size_t i = 0; i < rank; ++i) dims[i] = static_cast<favor::Index>(first[i]);
  return dims;
}

struct ErrorValue {
  const char* kind;
  std::string message;
};

val error(const ErrorValue& e) {
  val v = val::object();
  v.set("error", e.kind);
  v.set("message", e.message);
  return v;
}

// The exception being handled, as an error value. Looked up by its exact type rather than by
// typed catch clauses: in the pthreads build, clang 14's wasm exceptions match only catch (...)
// (typed clauses are skipped), while the type of the exception in hand is reported correctly.
ErrorValue current_error() {
  const std::type_info* type = abi::__cxa_current_exception_type();
  void* object = abi::__cxa_current_primary_exception();  // the thrown object; counted, released below
  const auto is = [type](const std::type_info& t) { return type && *type == t; };
  ErrorValue e;
  if (is(typeid(favor::Error))) {
    const auto* x = static_cast<const favor::Error*>(object);
    e = {x->kind() == favor::Error::Kind::type ? "TypeError" : "RangeError", x->what()};
  } else if (is(typeid(std::bad_alloc)) || is(typeid(std::bad_array_new_length)) || is(typeid(std::length_error))) {
    e = {"RangeError", "out of memory: the request does not fit in the WebAssembly heap"};
  } else {
    e = {"Error", std::string("unknown internal error") + (type ? std::string(" (") + type->name() + ")" : "")};
  }
  if (object) abi::__cxa_decrement_exception_refcount(object);
  return e;
}

template <class Fn>
val guarded(Fn&& fn) {
  try {
    return fn();
  } catch (...) {
    return error(current_error());
  }
}

// The error of the last call that returned a tensor pointer of 0, kept until lastError() takes it.
ErrorValue g_last_error{"Error", ""};

// Calls that make a tensor return its data pointer (a plain number, no val to build), or 0 after
// an error, which last_error() then returns as { error, message }.
template <class Fn>
double guarded_tensor(Fn&& fn) {
  try {
    return static_cast<double>(reinterpret_cast<std::uintptr_t>(fn()));
  } catch (...) {
    g_last_error = current_error();
    return 0.0;
  }
}

val last_error() {
  val e = error(g_last_error);
  g_last_error = {"Error", std::string()};  // the message's memory goes back now
  return e;
}

constexpr std::size_t kLine = 64;

// Bytes before an output's data that hold its dims (dims_before): whole cache lines, so that the
// data starts on one. web/api.js frees data - header_bytes(rank) after copying the output out.
std::size_t header_bytes(std::size_t rank) { return (8 * (rank + 1) + kLine - 1) / kLine * kLine; }

// A float buffer of `dims` owned by JS from here on, its dims written before it (dims_before).
float* allocate_output(const std::vector<favor::Index>& dims, const char* what) {
  double bytes = 4.0;
  for (favor::Index d : dims) bytes *= static_cast<double>(d);
  const std::size_t header = header_bytes(dims.size());
  if (bytes + static_cast<double>(header) > kMaxAllocationBytes)
    favor::throw_range(what, "the result would take " + std::to_string(bytes / 1073741824.0) +
                                 " GiB, more than one WebAssembly allocation can hold (2 GiB)");
  // On a cache line, as the inputs (web/api.js): malloc only guarantees 8 bytes here.
  const std::size_t size = (static_cast<std::size_t>(bytes) + kLine - 1) / kLine * kLine;
  auto* block = static_cast<unsigned char*>(std::aligned_alloc(kLine, header + (size ? size : kLine)));
  if (!block) throw std::bad_alloc();
  auto* out = reinterpret_cast<float*>(block + header);
  double* first = reinterpret_cast<double*>(out) - 1 - dims.size();  // dims, then the rank
  for (std::size_t i = 0; i < dims.size(); ++i) first[i] = static_cast<double>(dims[i]);
  first[dims.size()] = static_cast<double>(dims.size());
  return out;
}

// Frees an output allocate_output made (when the call that made it fails).
void free_output(float* out, std::size_t rank) {
  std::free(reinterpret_cast<unsigned char*>(out) - header_bytes(rank));
}

favor::ConstTensorView view(std::uintptr_t ptr) {
  return {reinterpret_cast<const float*>(ptr), dims_before(ptr)};
}

// A key mask (bytes) from JS: ptr 0 means none.
favor::ConstMaskView mask_view(std::uintptr_t ptr) {
  if (!ptr) return {};
  return {reinterpret_cast<const std::uint8_t*>(ptr), dims_before(ptr)};
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
float* with_output(const std::vector<favor::Index>& dims, double out_length, Compute&& compute,
                   favor::InputArrival* arriving = nullptr) {
  double size = 1.0;
  for (favor::Index d : dims) size *= static_cast<double>(d);
  if (!std::isnan(out_length) && out_length != size)
    favor::throw_range("out", "expected a Float32Array of " + std::to_string(static_cast<long long>(size)) +
                                  " floats (the output's dims " + favor::dims_string(dims) + "), got one of " +
                                  std::to_string(static_cast<long long>(out_length)) +
                                  (out_length == 0 ? " (empty or detached)" : ""));
  float* out = allocate_output(dims, "output");
  // While the helpers compute: the inputs still arriving copied in, and, without options.out, the
  // fresh array the result is copied into made.
  const bool fresh = std::isnan(out_length);
  const favor::CallerTask prepare(fresh || arriving ? std::function<void()>([size, fresh, arriving] {
                                    if (arriving) arriving->copy_all();
                                    if (fresh) prepare_result_array(size);
                                  })
                                                    : std::function<void()>());
  try {
    compute(favor::TensorView{out, dims});
  } catch (...) {
    free_output(out, dims.size());
    throw;
  }
  return out;
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

// With `arriving`, q, k and v hold only their dims yet: their data is copied in while the call
// runs (web/heap.js call, favor/input_arrival.hpp), in pieces of a fold segment's rows.
std::unique_ptr<favor::InputArrival> arriving_inputs(bool arriving, const favor::ConstTensorView& q,
                                                     const favor::ConstTensorView& k, const favor::ConstTensorView& v) {
  if (!arriving) return nullptr;
  constexpr favor::Index kRows = 2048;
  std::vector<float*> data{const_cast<float*>(q.data), const_cast<float*>(k.data), const_cast<float*>(v.data)};
  return std::make_unique<favor::InputArrival>(
      data,
      std::vector<favor::Index>{favor::element_count(q.dims, "q"), favor::element_count(k.dims, "k"),
                                favor::element_count(v.dims, "v")},
      favor::attention_input_order(q.dims, k.dims, v.dims, kRows, favor::max_threads()), [data](const favor::InputPiece& p) {
        if (!copy_arriving_input(p.input, static_cast<double>(p.offset), static_cast<double>(p.count),
                                 data[static_cast<std::size_t>(p.input)] + p.offset))
          favor::throw_range("q, k, v", "could not be copied into the WebAssembly heap");
      });
}

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
    const auto inputs = arriving_inputs(arriving, qv, kv, vv);
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
  // window: NaN for none, else an integer >= 1 checked in JS (up to 2^53: one longer than a wasm
  // Index holds is longer than any sequence the heap could hold, so it is the largest Index).
  val init_exact(double scale, double window) {
    return guarded([&] {
      favor::CausalStateOptions o;
      o.method = favor::StateMethod::exact;
      set_scale(o, scale);
      constexpr double kLargest = static_cast<double>(std::numeric_limits<favor::Index>::max());
      if (!std::isnan(window))
        o.window = window >= kLargest ? std::numeric_limits<favor::Index>::max() : static_cast<favor::Index>(window);
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
  emscripten::function("relaxedSimd", &relaxed_simd);
  emscripten::function("setTileRows", &set_tile_rows);
}
