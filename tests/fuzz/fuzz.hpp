// The fuzz target's shared parts: decoding the input bytes into values, shapes and calls,
// tracing, the checked call and the invariants every output is held to (what they are:
// fuzz_core.cpp).
#pragma once

#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <favor/favor.hpp>
#include <favor/features/factored.hpp>
#include <favor/threads/input_arrival.hpp>

namespace fuzz {

using favor::Index;
using favor::Matrix;
using favor::MatrixD;
using Ref = Eigen::Ref<const Matrix>;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr double kTame = 1e4;  // |value| bound of the "must succeed" region

// With FUZZ_TRACE=1 in the environment, the decoded call is printed on failure.
inline std::string g_trace;
inline const bool g_tracing = std::getenv("FUZZ_TRACE") != nullptr;

template <class M>
inline void trace(const char* name, const M& x) {
  if (!g_tracing) return;
  g_trace += std::string(name) + " [" + std::to_string(x.rows()) + ", " + std::to_string(x.cols()) + "]:";
  for (Index i = 0; i < x.rows(); ++i) {
    g_trace += "\n ";
    for (Index j = 0; j < x.cols(); ++j) { char b[32]; std::snprintf(b, sizeof b, " %.9g", static_cast<double>(x(i, j))); g_trace += b; }
  }
  g_trace += "\n";
}
inline void trace(const std::string& text) {
  if (g_tracing) g_trace += text + "\n";
}

[[noreturn]] inline void fail(const std::string& what) {
  if (g_tracing) std::fprintf(stderr, "%s", g_trace.c_str());
  std::fprintf(stderr, "\nFUZZ INVARIANT VIOLATED: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

// ---------------------------------------------------------------------------------------------
// Decoding values and shapes.

struct Decoder {
  FuzzedDataProvider& p;

  bool flag() { return p.ConsumeBool(); }
  int pick(int n) { return p.ConsumeIntegralInRange<int>(0, n - 1); }

  // Mostly 1..24, sometimes up to 64.
  Index size(Index max = 24) {
    const int r = pick(8);
    if (r == 0) return p.ConsumeIntegralInRange<Index>(1, 64);
    return p.ConsumeIntegralInRange<Index>(1, max);
  }

  float special() {
    static const float table[] = {0.0f, -0.0f, 1.0f, -1.0f, std::numeric_limits<float>::min(),
                                  std::numeric_limits<float>::denorm_min(), -1e-40f, 3e-39f,
                                  std::numeric_limits<float>::max(), -std::numeric_limits<float>::max(),
                                  1e3f, -1e3f, 1e19f, -1e20f, 1e30f, kNaN, kInf, -kInf, 0.5f, 2.0f};
    return table[pick(sizeof(table) / sizeof(table[0]))];
  }

  // A tensor's values in one of several styles.
  std::vector<float> values(Index rows, Index cols, bool allow_special = true) {
    const std::size_t n = static_cast<std::size_t>(std::max<Index>(rows, 0)) *
                          static_cast<std::size_t>(std::max<Index>(cols, 0));
    std::vector<float> x(n);
    const int style = pick(allow_special ? 8 : 6);
    const int exponent = p.ConsumeIntegralInRange<int>(-45, 38);
    const float magnitude = std::pow(10.0f, static_cast<float>(exponent));
    for (std::size_t i = 0; i < n; ++i) {
      const auto b = static_cast<std::int8_t>(p.ConsumeIntegral<std::uint8_t>());
      switch (style) {
        case 0: case 1: x[i] = b / 32.0f; break;           // [-4, 4]
        case 2: x[i] = b / 128.0f * magnitude; break;      // any scale, subnormal to FLT_MAX
        case 3: x[i] = b / 128.0f * 1e3f; break;           // norms up to ~1e4
        case 4: x[i] = (b & 1) ? b / 64.0f : 0.0f; break;  // sparse
        case 5: x[i] = b / 128.0f * 1e-39f; break;         // subnormal
        case 6: x[i] = pick(4) == 0 ? special() : b / 32.0f; break;
        case 7: {
          std::uint32_t bits = p.ConsumeIntegral<std::uint32_t>();
          std::memcpy(&x[i], &bits, sizeof bits);
          break;
        }
      }
    }
    // Row structure: identical rows, or one-hot rows.
    const int rows_style = pick(6);
    if (rows > 1 && cols > 0 && rows_style == 0) {
      for (Index r = 1; r < rows; ++r)
        std::copy_n(x.begin(), cols, x.begin() + static_cast<std::ptrdiff_t>(r * cols));
    } else if (rows > 0 && cols > 0 && rows_style == 1) {
      const float hot = pick(2) ? magnitude : 1.0f;
      std::fill(x.begin(), x.end(), 0.0f);
      for (Index r = 0; r < rows; ++r) x[static_cast<std::size_t>(r * cols + pick(static_cast<int>(cols)))] = hot;
    }
    return x;
  }

  Matrix matrix(Index rows, Index cols, bool allow_special = true) {
    const std::vector<float> x = values(rows, cols, allow_special);
    return Eigen::Map<const Matrix>(x.data(), rows, cols);
  }

  // scale: default (nullopt), tame, extreme, or invalid (0, negative, NaN, inf).
  std::optional<double> scale(bool& valid) {
    switch (pick(8)) {
      case 0: case 1: case 2: return std::nullopt;
      case 3: return p.ConsumeFloatingPointInRange<double>(1e-3, 10.0);
      case 4: return std::pow(10.0, p.ConsumeIntegralInRange<int>(-40, 40));
      case 5: valid = false; return 0.0;
      case 6: valid = false; return -p.ConsumeFloatingPointInRange<double>(0.0, 10.0);
      default: valid = false; return pick(2) ? std::numeric_limits<double>::quiet_NaN()
                                              : std::numeric_limits<double>::infinity();
    }
  }

  Index chunk(bool& valid) {
    switch (pick(6)) {
      case 0: return pick(2) ? 128 : 0;  // 0: the default
      case 1: valid = false; return -p.ConsumeIntegralInRange<Index>(1, 3);
      default: return p.ConsumeIntegralInRange<Index>(1, 70);
    }
  }
};

inline bool finite_all(const std::vector<float>& x) {
  return std::all_of(x.begin(), x.end(), [](float f) { return std::isfinite(f); });
}
inline bool finite_all(const Matrix& x) { return x.allFinite(); }
inline double max_abs(const std::vector<float>& x) {
  double m = 0.0;
  for (float f : x) m = std::max(m, std::abs(static_cast<double>(f)));
  return m;
}
inline double max_abs(const Matrix& x) { return x.size() ? static_cast<double>(x.cwiseAbs().maxCoeff()) : 0.0; }

inline bool tame_scale(const std::optional<double>& s) { return !s || (*s >= 1e-6 && *s <= 1e6); }

enum class Signs { positive, positive_or_zero_rows, signed_values };

// Finite outputs; signed methods: never NaN (+-inf allowed where a normalizer cancels).
inline void check_output(const float* x, std::size_t n, Signs signs, const char* what) {
  for (std::size_t i = 0; i < n; ++i) {
    if (std::isnan(x[i])) fail(std::string(what) + ": NaN in the output at " + std::to_string(i));
    if (signs != Signs::signed_values && !std::isfinite(x[i]))
      fail(std::string(what) + ": non-finite output at " + std::to_string(i));
  }
}

// Rows of a normalized attention matrix: sum 1, zeros above the diagonal when causal, entries
// in [0, 1] (up to rounding). Zero rows are allowed when `signs` says so (relu with epsilon 0).
// rows: of all heads, L per head (0: one head); causal is bottom-right (j <= i + cols - L).
inline void check_matrix_rows(const float* a, Index rows, Index cols, bool causal, Signs signs, const char* what, Index L = 0) {
  if (signs == Signs::signed_values) return;
  if (L == 0) L = rows;
  for (Index i = 0; i < rows; ++i) {
    const float* row = a + i * cols;
    double sum = 0.0;
    for (Index j = 0; j < cols; ++j) {
      if (causal && j > i % L + cols - L && row[j] != 0.0f) fail(std::string(what) + ": nonzero entry above the diagonal");
      if (!(row[j] >= -1e-6f && row[j] <= 1.0f + 1e-5f))
        fail(std::string(what) + ": entry " + std::to_string(row[j]) + " outside [0, 1]");
      sum += row[j];
    }
    if (signs == Signs::positive_or_zero_rows && sum == 0.0) continue;
    if (std::abs(sum - 1.0) > 1e-3)
      fail(std::string(what) + ": row " + std::to_string(i) + " sums to " + std::to_string(sum));
  }
}

// Outputs of positive-valued methods are convex combinations of the visible rows of v: each
// entry lies within the range of its column over the visible keys (up to rounding). Zero rows
// are allowed when `signs` says so.
inline void check_hull(const float* out, const float* v, Index L, Index S, Index dv, bool causal, Signs signs,
                const char* what) {
  if (signs == Signs::signed_values) return;
  double vmax = 0.0;
  for (Index j = 0; j < S * dv; ++j) vmax = std::max(vmax, std::abs(static_cast<double>(v[j])));
  const double tolerance = 1e-4 * vmax + 1e-37;
  for (Index i = 0; i < L; ++i) {
    const Index visible = causal ? std::min(i + S - L + 1, S) : S;  // bottom-right
    bool zero_row = true;
    for (Index t = 0; t < dv; ++t) zero_row = zero_row && out[i * dv + t] == 0.0f;
    if (zero_row && signs == Signs::positive_or_zero_rows) continue;
    for (Index t = 0; t < dv; ++t) {
      double lo = std::numeric_limits<double>::infinity(), hi = -lo;
      for (Index j = 0; j < visible; ++j) {
        lo = std::min(lo, static_cast<double>(v[j * dv + t]));
        hi = std::max(hi, static_cast<double>(v[j * dv + t]));
      }
      const double x = out[i * dv + t];
      if (!(x >= lo - tolerance && x <= hi + tolerance))
        fail(std::string(what) + ": output [" + std::to_string(i) + ", " + std::to_string(t) + "] = " +
             std::to_string(x) + " outside the range of the visible v, [" + std::to_string(lo) + ", " +
             std::to_string(hi) + "]");
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The checked call: runs `body`, classifies the outcome.

enum class Outcome { ok, error };

inline std::string g_last_error;

template <class Body>
Outcome run(const char* what, bool huge, Body&& body) {
  g_last_error.clear();
  try {
    body();
    return Outcome::ok;
  } catch (const favor::Error& e) {
    const std::string message = e.what();
    g_last_error = message;
    if (e.argument().empty() || message.rfind(e.argument() + ": ", 0) != 0)
      fail(std::string(what) + ": favor::Error does not start with its argument: " + message);
    return Outcome::error;
  } catch (const std::bad_alloc&) {
    if (!huge) fail(std::string(what) + ": std::bad_alloc for a small request");
    return Outcome::error;
  } catch (const std::length_error& e) {
    if (!huge) fail(std::string(what) + ": std::length_error for a small request: " + e.what());
    return Outcome::error;
  } catch (const std::exception& e) {
    fail(std::string(what) + ": unexpected exception: " + e.what());
  } catch (...) {
    fail(std::string(what) + ": unexpected non-std exception");
  }
}

// Expectation on the outcome of a validated call.
inline void expect(Outcome outcome, bool valid, bool tame, const char* what) {
  if (outcome == Outcome::ok && !valid) fail(std::string(what) + ": invalid arguments were accepted");
  if (outcome == Outcome::error && valid && tame)
    fail(std::string(what) + ": valid, tame arguments were rejected: " + g_last_error);
}

// How many names each enum has (tests/node/choices.test.mjs checks them against the core's
// parse functions): a kernel, sampling or assignment added there is fuzzed once counted here.
inline constexpr int kKernels = 7, kSamplings = 5, kAssignments = 3;
inline favor::Kernel pick_kernel(Decoder& in) { return static_cast<favor::Kernel>(in.pick(kKernels)); }
inline bool dense_exponential(favor::Kernel k) { return k == favor::Kernel::sderf || k == favor::Kernel::aderf; }
inline favor::Sampling pick_sampling(Decoder& in) { return static_cast<favor::Sampling>(in.pick(kSamplings)); }
inline favor::Assignment pick_assignment(Decoder& in) { return static_cast<favor::Assignment>(in.pick(kAssignments)); }

// relu with epsilon 0 gives a zero row where a query's features and every visible key's have
// disjoint supports (0/0). So does a tiny epsilon (below 1e-6, e.g. a subnormal 1e-45) when the
// only overlap is epsilon-sized and falls below float32 range: a documented float32 limit.
// An epsilon below 1e-30 (e.g. the subnormal 1e-45) makes the overlap weights themselves
// subnormal: only "no NaN" is checked then.
inline Signs signs_of(const favor::FeatureMap& map) {
  if (map.kernel() == favor::Kernel::trigonometric) return Signs::signed_values;
  if (map.kernel() == favor::Kernel::relu && map.epsilon() > 0.0 && map.epsilon() < 1e-30) return Signs::signed_values;
  if (map.kernel() == favor::Kernel::relu && map.epsilon() < 1e-6) return Signs::positive_or_zero_rows;
  return Signs::positive;
}

// A feature map from the input: sampled (sometimes with an extreme seed) or explicit.
inline std::unique_ptr<favor::FeatureMap> make_map(Decoder& in, Index d, bool& tame) {
  const favor::Kernel kernel = pick_kernel(in);
  double epsilon = 1e-3;
  switch (in.pick(5)) {
    case 0: epsilon = 0.0; break;
    case 1: epsilon = std::pow(10.0, in.p.ConsumeIntegralInRange<int>(-45, 10)); tame = tame && epsilon <= kTame; break;
    default: break;
  }
  const Index m = in.size(32);
  if (in.pick(4) == 0) {
    Matrix w = in.matrix(m, d, false);
    tame = tame && max_abs(w) <= 1e2;
    return std::make_unique<favor::FeatureMap>(kernel, std::move(w), epsilon, pick_sampling(in));
  }
  favor::FeatureMapOptions o;
  o.dim = d;
  o.features = m;
  o.kernel = kernel;
  o.sampling = pick_sampling(in);
  o.seed = in.flag() ? in.p.ConsumeIntegral<std::uint64_t>() : in.p.ConsumeIntegralInRange<std::uint64_t>(0, 9);
  o.epsilon = epsilon;
  return std::make_unique<favor::FeatureMap>(o);
}

// Whether a state's outputs can be compared with one call to a relative tolerance: not for signed
// estimators (trigonometric, tiny-epsilon relu), whose normalizers may cancel.
inline bool signs_of_state(const favor::FeatureMap* map) { return !map || signs_of(*map) == Signs::positive; }

// ---------------------------------------------------------------------------------------------
// Entry points.

// Shapes of a tensor call: leading dims shared by q/k/v, sometimes broken on purpose.
struct Shapes {
  std::vector<Index> lead;
  Index L, S, d, dv;
  std::vector<Index> q, k, v;
  bool valid = true;
  Index heads() const {
    Index h = 1;
    for (Index x : lead) h *= x;
    return h;
  }
};

inline Shapes decode_shapes(Decoder& in, bool causal, bool uses_v) {
  Shapes s;
  const int rank = in.pick(3);
  for (int i = 0; i < rank; ++i) s.lead.push_back(in.p.ConsumeIntegralInRange<Index>(1, 3));
  s.L = in.size();
  s.S = causal && in.pick(6) != 0 ? s.L : in.size();
  s.d = in.size(16);
  s.dv = in.size(8);
  auto dims = [&](Index rows, Index cols) {
    std::vector<Index> x = s.lead;
    x.push_back(rows);
    x.push_back(cols);
    return x;
  };
  s.q = dims(s.L, s.d);
  s.k = dims(s.S, s.d);
  s.v = dims(s.S, s.dv);
  if (causal && s.L > s.S) s.valid = false;
  // Occasionally break a shape.
  switch (in.pick(12)) {
    case 0: s.k.back() += 1; s.valid = false; break;                       // d mismatch
    case 1: s.v[s.v.size() - 2] += 1; s.valid = s.valid && !uses_v; break;         // S mismatch
    case 2: s.k.insert(s.k.begin(), 2); s.valid = false; break;            // leading mismatch
    case 3: s.q[s.q.size() - 2] = -in.p.ConsumeIntegralInRange<Index>(0, 2); s.valid = false; break;
    case 4: s.v = {s.S}; s.valid = s.valid && !uses_v; break;              // rank 1
    default: break;
  }
  return s;
}

inline std::size_t count(const std::vector<Index>& dims) {
  std::size_t n = 1;
  for (Index x : dims) n *= static_cast<std::size_t>(std::max<Index>(x, 0));
  return n;
}

struct Tensor {
  std::vector<float> data;
  std::vector<Index> dims;
  favor::ConstTensorView view() const { return {data.data(), dims}; }
};

inline Tensor tensor(Decoder& in, const std::vector<Index>& dims, bool& all_finite, double& magnitude) {
  Tensor t;
  t.dims = dims;
  const Index cols = dims.empty() ? 0 : dims.back();
  const Index rows = cols > 0 ? static_cast<Index>(count(dims) / static_cast<std::size_t>(cols)) : 0;
  t.data = in.values(rows, cols);
  t.data.resize(count(dims));
  all_finite = all_finite && finite_all(t.data);
  magnitude = std::max(magnitude, max_abs(t.data));
  return t;
}

// Output dims as the core will require them, or a deliberately wrong shape.
inline std::vector<Index> output_dims(Decoder& in, const Shapes& s, Index cols, bool& valid) {
  std::vector<Index> out = s.lead;
  out.push_back(s.L);
  out.push_back(cols);
  if (in.pick(16) == 0) {
    out.back() += 1;
    valid = false;
  }
  return out;
}

// A head of a tensor as a matrix.
inline Eigen::Map<const Matrix> head(const Tensor& t, Index h, Index rows, Index cols) {
  return Eigen::Map<const Matrix>(t.data.data() + h * rows * cols, rows, cols);
}


// The entry points, one file each.
void fuzz_tensor_attention(Decoder& in, int method);
void fuzz_one_head(Decoder& in);
void fuzz_feature_map(Decoder& in);
void fuzz_codebook_tools(Decoder& in);
void fuzz_metrics(Decoder& in);
void fuzz_matmul(Decoder& in);
void fuzz_state_and_groups(Decoder& in);

}  // namespace fuzz
