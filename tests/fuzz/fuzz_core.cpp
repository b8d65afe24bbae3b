// libFuzzer target over the C++ core's entry points, for the robustness checks.
//
// The input bytes choose an entry point, shapes (small: L, S, d, dv, m, c up to 64; leading
// dims up to 3), options (causal, scale including bad values, chunk, window, temperature, epsilon,
// kernel, sampling, assignment, seeds) and float values (small, scaled by 10^-45..10^38, raw
// bits, specials: NaN, +-inf, subnormals, FLT_MAX; identical rows, one-hot rows).
//
// Allowed outcomes: success, favor::Error, or std::bad_alloc / std::length_error when the
// request was deliberately huge. Anything else aborts (a crash for libFuzzer), as does any
// ASan/UBSan report. On success it checks invariants:
//   - invalid arguments (tensor API, which validates) never succeed;
//   - valid "tame" inputs (|values| <= 1e4, scale in [1e-6, 1e6]) never throw;
//   - outputs are finite (trigonometric and signed linear features: never NaN, may be +-inf);
//   - matrices of positive-valued methods have rows summing to 1 (zeros above the diagonal
//     when causal); outputs match a float64 reference when inputs are moderate;
//   - k-means objectives never increase; compare() never returns NaN for finite inputs;
//   - matmul with b packed once (PackedMatrix) has matmul's outcome and bits.
//
// Build and run: scripts/test-sanitize.sh (CMake option FAVOR_FUZZ, clang, build/asan/fuzz_core;
// FUZZ_SECONDS sets the time). The build uses a 32-bit Eigen::Index, like wasm32, so that size
// arithmetic that would overflow in the WebAssembly build overflows here too (UBSan).
// Reproduce a crash: build/asan/fuzz_core <file>; FUZZ_TRACE=1 prints the decoded call.
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
#include <favor/input_arrival.hpp>

// Huge Eigen (malloc) requests return null, so Eigen throws std::bad_alloc as it does in wasm,
// instead of ASan or libFuzzer treating a lazily mapped multi-GB allocation as a crash.
extern "C" const char* __asan_default_options() {
  return "allocator_may_return_null=1:max_allocation_size_mb=1024:detect_leaks=1";
}

namespace {

using favor::Index;
using favor::Matrix;
using favor::MatrixD;
using Ref = Eigen::Ref<const Matrix>;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr double kTame = 1e4;  // |value| bound of the "must succeed" region

// With FUZZ_TRACE=1 in the environment, the decoded call is printed on failure.
std::string g_trace;
const bool g_tracing = std::getenv("FUZZ_TRACE") != nullptr;

template <class M>
void trace(const char* name, const M& x) {
  if (!g_tracing) return;
  g_trace += std::string(name) + " [" + std::to_string(x.rows()) + ", " + std::to_string(x.cols()) + "]:";
  for (Index i = 0; i < x.rows(); ++i) {
    g_trace += "\n ";
    for (Index j = 0; j < x.cols(); ++j) { char b[32]; std::snprintf(b, sizeof b, " %.9g", static_cast<double>(x(i, j))); g_trace += b; }
  }
  g_trace += "\n";
}
void trace(const std::string& text) {
  if (g_tracing) g_trace += text + "\n";
}

[[noreturn]] void fail(const std::string& what) {
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

bool finite_all(const std::vector<float>& x) {
  return std::all_of(x.begin(), x.end(), [](float f) { return std::isfinite(f); });
}
bool finite_all(const Matrix& x) { return x.allFinite(); }
double max_abs(const std::vector<float>& x) {
  double m = 0.0;
  for (float f : x) m = std::max(m, std::abs(static_cast<double>(f)));
  return m;
}
double max_abs(const Matrix& x) { return x.size() ? static_cast<double>(x.cwiseAbs().maxCoeff()) : 0.0; }

bool tame_scale(const std::optional<double>& s) { return !s || (*s >= 1e-6 && *s <= 1e6); }

enum class Signs { positive, positive_or_zero_rows, signed_values };

// Finite outputs; signed methods: never NaN (+-inf allowed where a normalizer cancels).
void check_output(const float* x, std::size_t n, Signs signs, const char* what) {
  for (std::size_t i = 0; i < n; ++i) {
    if (std::isnan(x[i])) fail(std::string(what) + ": NaN in the output at " + std::to_string(i));
    if (signs != Signs::signed_values && !std::isfinite(x[i]))
      fail(std::string(what) + ": non-finite output at " + std::to_string(i));
  }
}

// Rows of a normalized attention matrix: sum 1, zeros above the diagonal when causal, entries
// in [0, 1] (up to rounding). Zero rows are allowed when `signs` says so (relu with epsilon 0).
// rows: of all heads, L per head (0: one head); causal is bottom-right (j <= i + cols - L).
void check_matrix_rows(const float* a, Index rows, Index cols, bool causal, Signs signs, const char* what, Index L = 0) {
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
void check_hull(const float* out, const float* v, Index L, Index S, Index dv, bool causal, Signs signs,
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
// Float64 references for one head, used when inputs are moderate (every log term <= 50 and
// nothing ill-conditioned), where float32 rounding is far below the 1e-3 tolerance.

// Weights w_ij as (log magnitude, sign) pairs from per-feature logs and values.
struct LogFeatures {
  MatrixD log;    // rows x M (-inf where the value is 0)
  MatrixD value;  // rows x M, signed values (1 for exponential features)
};

// out_i = sum_j w_ij v_j / sum_j w_ij with w_ij = sum_r exp(lq_ir + lk_jr) vq_ir vk_jr. Returns
// false when it cannot serve as a reference (a normalizer that cancels, or no visible weight).
bool reference_attention(const LogFeatures& q, const LogFeatures& k, const MatrixD* v, bool causal,
                         MatrixD& out_or_matrix) {
  const Index L = q.log.rows(), S = k.log.rows(), M = q.log.cols();
  out_or_matrix = MatrixD::Zero(L, v ? v->cols() : S);
  for (Index i = 0; i < L; ++i) {
    const Index visible = causal ? i + S - L + 1 : S;  // bottom-right
    double top = -std::numeric_limits<double>::infinity();
    for (Index j = 0; j < visible; ++j)
      for (Index r = 0; r < M; ++r)
        if (q.value(i, r) * k.value(j, r) != 0.0) top = std::max(top, q.log(i, r) + k.log(j, r));
    if (!std::isfinite(top)) return false;
    std::vector<double> w(static_cast<std::size_t>(visible), 0.0);
    double den = 0.0, abs_den = 0.0;
    for (Index j = 0; j < visible; ++j) {
      for (Index r = 0; r < M; ++r) {
        const double t = std::exp(q.log(i, r) + k.log(j, r) - top) * q.value(i, r) * k.value(j, r);
        w[static_cast<std::size_t>(j)] += t;
        abs_den += std::abs(t);
      }
      den += w[static_cast<std::size_t>(j)];
    }
    if (!(std::abs(den) > 1e-3 * abs_den) || den <= 0.0) return false;
    for (Index j = 0; j < visible; ++j) {
      const double a = w[static_cast<std::size_t>(j)] / den;
      if (v) out_or_matrix.row(i) += a * v->row(j);
      else out_or_matrix(i, j) = a;
    }
  }
  return true;
}

void compare_reference(const float* got, const MatrixD& expected, double tolerance, const char* what) {
  for (Index i = 0; i < expected.size(); ++i) {
    const double e = expected.data()[i];
    if (!(std::abs(got[i] - e) <= tolerance))
      fail(std::string(what) + ": differs from the float64 reference at " + std::to_string(i) + ": " +
           std::to_string(got[i]) + " vs " + std::to_string(e) + " (tolerance " + std::to_string(tolerance) + ")");
  }
}

// Scaled rows x~ = float(root) * x, as the core forms them, in double.
MatrixD scaled(const Ref& x, double scale) {
  const float root = static_cast<float>(std::sqrt(scale));
  return (root * x).cast<double>();
}

double max_sq_norm(const MatrixD& x) { return x.size() ? x.rowwise().squaredNorm().maxCoeff() : 0.0; }

// Random-feature logs/values of scaled rows, mirroring feature_map.hpp in double.
LogFeatures feature_logs(const favor::FeatureMap& map, const MatrixD& x, const favor::KernelParameters& params,
                         favor::Side side) {
  const MatrixD w = map.projection().cast<double>();
  const Index n = x.rows(), m = w.rows();
  const MatrixD proj = x * w.transpose();
  const Eigen::VectorXd half = 0.5 * x.rowwise().squaredNorm();
  const double md = static_cast<double>(m);
  LogFeatures f;
  switch (map.kernel()) {
    case favor::Kernel::positive:
      f.log = proj;
      f.log.colwise() -= half;
      f.log.array() -= 0.5 * std::log(md);
      f.value = MatrixD::Ones(n, m);
      break;
    case favor::Kernel::hyperbolic:
      f.log.resize(n, 2 * m);
      f.log << proj, -proj;
      f.log.colwise() -= half;
      f.log.array() -= 0.5 * std::log(2.0 * md);
      f.value = MatrixD::Ones(n, 2 * m);
      break;
    case favor::Kernel::oprf: {
      const Eigen::VectorXd wsq = w.rowwise().squaredNorm();
      f.log = params.oprf.b * proj;
      f.log.rowwise() += params.oprf.a * wsq.transpose();
      f.log.colwise() -= half;
      f.log.array() += params.oprf.log_d - 0.5 * std::log(md);
      f.value = MatrixD::Ones(n, m);
      break;
    }
    case favor::Kernel::trigonometric:
      f.log = MatrixD::Zero(n, 2 * m);
      f.log.colwise() += half;
      f.log.array() -= 0.5 * std::log(md);
      f.value.resize(n, 2 * m);
      f.value << proj.array().cos().matrix(), proj.array().sin().matrix();
      break;
    case favor::Kernel::relu:
      f.log = MatrixD::Zero(n, m);
      f.value = (proj.array().max(0.0) + map.epsilon()).matrix();
      break;
    case favor::Kernel::sderf:
    case favor::Kernel::aderf: {
      const favor::DenseExponentialParameters& p = params.dense;
      const MatrixD tx = x * (side == favor::Side::key ? p.key_transform : p.query_transform).transpose();
      const Eigen::VectorXd b = (1.0 - 4.0 * p.a.array()).sqrt().matrix();
      f.log = tx * (w * b.asDiagonal()).transpose();
      f.log.rowwise() += (w.array().square().matrix() * p.a).transpose();
      f.log.colwise() -= 0.5 * tx.rowwise().squaredNorm();
      f.log.array() += p.log_d - 0.5 * std::log(md);
      f.value = MatrixD::Ones(n, m);
      break;
    }
  }
  return f;
}

// Codebook logs/values of scaled queries and keys (codebook.hpp). Returns false for a hard
// assignment with a near tie (float rounding may then pick either codeword).
bool codebook_logs(const MatrixD& c, const MatrixD& q, const MatrixD& k, favor::Assignment assignment,
                   double temperature, LogFeatures& fq, LogFeatures& fk) {
  const Index nc = c.rows();
  fq.log = q * c.transpose();
  fq.value = MatrixD::Ones(q.rows(), nc);
  MatrixD e = k * c.transpose();
  e.rowwise() -= 0.5 * c.rowwise().squaredNorm().transpose();
  fk.value = MatrixD::Ones(k.rows(), nc);
  switch (assignment) {
    case favor::Assignment::gaussian:
      fk.log = e;
      fk.log.colwise() -= 0.5 * k.rowwise().squaredNorm();
      break;
    case favor::Assignment::soft: {
      e /= temperature;
      for (Index j = 0; j < e.rows(); ++j) {
        const double top = e.row(j).maxCoeff();
        const double lse = top + std::log((e.row(j).array() - top).exp().sum());
        e.row(j).array() -= lse;
      }
      fk.log = e;
      break;
    }
    case favor::Assignment::hard: {
      fk.log = MatrixD::Zero(k.rows(), nc);
      fk.value = MatrixD::Zero(k.rows(), nc);
      for (Index j = 0; j < e.rows(); ++j) {
        Index best = 0;
        const double top = e.row(j).maxCoeff(&best);
        for (Index y = 0; y < nc; ++y)
          if (y != best && top - e(j, y) <= 1e-4 * (1.0 + std::abs(top))) return false;
        fk.value(j, best) = 1.0;
      }
      break;
    }
  }
  return true;
}

double max_finite_log(const LogFeatures& f) {
  double m = 0.0;
  for (Index i = 0; i < f.log.size(); ++i)
    if (std::isfinite(f.log.data()[i])) m = std::max(m, std::abs(f.log.data()[i]));
  return m;
}

// ---------------------------------------------------------------------------------------------
// The checked call: runs `body`, classifies the outcome.

enum class Outcome { ok, error };

std::string g_last_error;

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
void expect(Outcome outcome, bool valid, bool tame, const char* what) {
  if (outcome == Outcome::ok && !valid) fail(std::string(what) + ": invalid arguments were accepted");
  if (outcome == Outcome::error && valid && tame)
    fail(std::string(what) + ": valid, tame arguments were rejected: " + g_last_error);
}

favor::Kernel kernel_of(int i) { return static_cast<favor::Kernel>(i % 7); }
bool dense_exponential(favor::Kernel k) { return k == favor::Kernel::sderf || k == favor::Kernel::aderf; }
favor::Sampling sampling_of(int i) { return static_cast<favor::Sampling>(i % 5); }
favor::Assignment assignment_of(int i) { return static_cast<favor::Assignment>(i % 3); }

// relu with epsilon 0 gives a zero row where a query's features and every visible key's have
// disjoint supports (0/0). So does a tiny epsilon (below 1e-6, e.g. a subnormal 1e-45) when the
// only overlap is epsilon-sized and falls below float32 range: a documented float32 limit.
// An epsilon below 1e-30 (e.g. the subnormal 1e-45) makes the overlap weights themselves
// subnormal: only "no NaN" is checked then.
Signs signs_of(const favor::FeatureMap& map) {
  if (map.kernel() == favor::Kernel::trigonometric) return Signs::signed_values;
  if (map.kernel() == favor::Kernel::relu && map.epsilon() > 0.0 && map.epsilon() < 1e-30) return Signs::signed_values;
  if (map.kernel() == favor::Kernel::relu && map.epsilon() < 1e-6) return Signs::positive_or_zero_rows;
  return Signs::positive;
}

// A feature map from the input: sampled (sometimes with an extreme seed) or explicit.
std::unique_ptr<favor::FeatureMap> make_map(Decoder& in, Index d, bool& tame) {
  const favor::Kernel kernel = kernel_of(in.pick(7));
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
    return std::make_unique<favor::FeatureMap>(kernel, std::move(w), epsilon, sampling_of(in.pick(5)));
  }
  favor::FeatureMapOptions o;
  o.dim = d;
  o.features = m;
  o.kernel = kernel;
  o.sampling = sampling_of(in.pick(5));
  o.seed = in.flag() ? in.p.ConsumeIntegral<std::uint64_t>() : in.p.ConsumeIntegralInRange<std::uint64_t>(0, 9);
  o.epsilon = epsilon;
  return std::make_unique<favor::FeatureMap>(o);
}

// Whether a state's outputs can be compared with one call to a relative tolerance: not for signed
// estimators (trigonometric, tiny-epsilon relu), whose normalizers may cancel.
bool signs_of_state(const favor::FeatureMap* map) { return !map || signs_of(*map) == Signs::positive; }

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

Shapes decode_shapes(Decoder& in, bool causal, bool uses_v) {
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

std::size_t count(const std::vector<Index>& dims) {
  std::size_t n = 1;
  for (Index x : dims) n *= static_cast<std::size_t>(std::max<Index>(x, 0));
  return n;
}

struct Tensor {
  std::vector<float> data;
  std::vector<Index> dims;
  favor::ConstTensorView view() const { return {data.data(), dims}; }
};

Tensor tensor(Decoder& in, const std::vector<Index>& dims, bool& all_finite, double& magnitude) {
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
std::vector<Index> output_dims(Decoder& in, const Shapes& s, Index cols, bool& valid) {
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
Eigen::Map<const Matrix> head(const Tensor& t, Index h, Index rows, Index cols) {
  return Eigen::Map<const Matrix>(t.data.data() + h * rows * cols, rows, cols);
}

// An attention call (exact, FAVOR+ or codebook) with its inputs arriving while it runs
// (favor/input_arrival.hpp), into memory that holds NaN until each piece is in: the same bits
// as on the inputs in place, or the same error. A read before its await would see the NaN.
using AttentionCall = std::function<void(const Tensor& q, const Tensor& k, const Tensor& v, const favor::TensorView& out)>;
void check_arriving(const AttentionCall& attend, const Tensor& q, const Tensor& k, const Tensor& v,
                    const std::vector<Index>& out_dims, bool causal, Index rows) {
  try {
    if (favor::attention_output_dims(q.dims, k.dims, v.dims, causal) != out_dims) return;
  } catch (...) {
    return;
  }
  const auto call = [&](const Tensor& a, const Tensor& b, const Tensor& c, std::vector<float>& out) -> std::string {
    try {
      attend(a, b, c, favor::TensorView{out.data(), out_dims});
      return "";
    } catch (const std::exception& e) {
      return std::string("error: ") + e.what();
    }
  };
  std::vector<float> expected(count(out_dims)), got(count(out_dims));
  const std::string expected_error = call(q, k, v, expected);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor hq{std::vector<float>(q.data.size(), nan), q.dims}, hk{std::vector<float>(k.data.size(), nan), k.dims},
      hv{std::vector<float>(v.data.size(), nan), v.dims};
  std::string error;
  {
    const std::vector<const Tensor*> from{&q, &k, &v};
    const std::vector<Tensor*> to{&hq, &hk, &hv};
    favor::InputArrival arrival(
        {hq.data.data(), hk.data.data(), hv.data.data()},
        {static_cast<Index>(q.data.size()), static_cast<Index>(k.data.size()), static_cast<Index>(v.data.size())},
        favor::attention_input_order(q.dims, k.dims, v.dims, rows, 1), [&](const favor::InputPiece& p) {
          std::memcpy(to[p.input]->data.data() + p.offset, from[p.input]->data.data() + p.offset, sizeof(float) * p.count);
        });
    error = call(hq, hk, hv, got);
  }
  if (error != expected_error) fail(std::string("arriving inputs: ") + (error.empty() ? "no error" : error) + " against " + (expected_error.empty() ? "no error" : expected_error));
  if (error.empty() && std::memcmp(got.data(), expected.data(), sizeof(float) * got.size()) != 0)
    fail("arriving inputs: other bits than the inputs in place");
}

void fuzz_tensor_attention(Decoder& in, int method) {
  // method: 0 exact, 1 exact matrix, 2 favor, 3 favor matrix, 4 codebook, 5 codebook matrix
  const bool causal = in.flag();
  const bool matrix = method % 2 == 1;
  Shapes s = decode_shapes(in, causal, !matrix);
  bool valid = s.valid, finite = true;
  double magnitude = 0.0;
  const Tensor q = tensor(in, s.q, finite, magnitude);
  const Tensor k = tensor(in, s.k, finite, magnitude);
  Tensor v;
  if (!matrix) v = tensor(in, s.v, finite, magnitude);
  favor::FavorOptions fo;
  fo.causal = causal;
  fo.scale = in.scale(valid);
  favor::CodebookOptions co;
  static_cast<favor::AttentionOptions&>(co) = fo;
  bool tame = true;
  std::unique_ptr<favor::FeatureMap> map;
  Tensor codebook;
  bool shared_codebook = true;
  Index clusters = 0;
  if (method == 2 || method == 3) {
    if (method == 2) fo.chunk = in.chunk(valid);
    const Index map_dim = in.pick(10) == 0 ? s.d + 1 : s.d;
    if (map_dim != s.d) valid = false;
    if (run("FeatureMap", false, [&] { map = make_map(in, map_dim, tame); }) != Outcome::ok) fail("FeatureMap: valid options rejected");
  } else if (method >= 4) {
    co.assignment = assignment_of(in.pick(3));
    switch (in.pick(6)) {
      case 0: co.temperature = std::pow(10.0, in.p.ConsumeIntegralInRange<int>(-45, 30)); break;
      case 1: co.temperature = in.pick(2) ? 0.0 : -1.0; valid = false; break;
      case 2: co.temperature = std::numeric_limits<double>::quiet_NaN(); valid = false; break;
      default: co.temperature = in.p.ConsumeFloatingPointInRange<double>(0.05, 4.0); break;
    }
    if (method == 4) co.chunk = in.chunk(valid);
    clusters = in.size(16);
    shared_codebook = s.lead.empty() || in.flag();
    std::vector<Index> cdims = shared_codebook ? std::vector<Index>{} : s.lead;
    cdims.push_back(clusters);
    cdims.push_back(in.pick(12) == 0 ? s.d + 1 : s.d);
    if (cdims.back() != s.d) valid = false;
    codebook = tensor(in, cdims, finite, magnitude);
  }
  if (!finite) valid = false;
  tame = tame && magnitude <= kTame && tame_scale(fo.scale);
  if (g_tracing) {
    auto dims = [](const std::vector<Index>& x) {
      std::string t;
      for (Index e : x) t += std::to_string(e) + " ";
      return t;
    };
    trace("method " + std::to_string(method) + " causal " + std::to_string(causal) + " scale " +
          (fo.scale ? std::to_string(*fo.scale) : std::string("default")) + " chunk " + std::to_string(fo.chunk) +
          " valid " + std::to_string(valid) + " tame " + std::to_string(tame));
    trace("q dims " + dims(s.q) + "k dims " + dims(s.k) + "v dims " + dims(s.v));
    auto flat = [](const Tensor& t) {
      const Index cols = t.dims.empty() ? 0 : std::max<Index>(t.dims.back(), 1);
      return Eigen::Map<const Matrix>(t.data.data(), static_cast<Index>(t.data.size()) / cols, cols);
    };
    trace("q", flat(q)), trace("k", flat(k));
    if (!matrix) trace("v", flat(v));
    if (map) {
      trace(std::string("kernel ") + favor::to_string(map->kernel()) + " epsilon " + std::to_string(map->epsilon()) + " (" + std::to_string(std::log10(map->epsilon())) + " log10)");
      trace("W", map->projection());
    }
    if (method >= 4) {
      trace(std::string("assignment ") + favor::to_string(co.assignment) + " temperature " + std::to_string(co.temperature));
      trace("codebook", flat(codebook));
    }
  }
  const std::vector<Index> out_dims = output_dims(in, s, matrix ? s.S : s.dv, valid);
  std::vector<float> out(count(out_dims) + 1, -7.0f);  // one guard element
  const favor::TensorView out_view{out.data(), out_dims};
  const char* names[] = {"exact_attention", "attention_matrix", "favor_attention",
                         "favor_attention_matrix", "codebook_attention", "codebook_attention_matrix"};
  const char* what = names[method];
  const Outcome outcome = run(what, false, [&] {
    switch (method) {
      case 0: favor::exact_attention(q.view(), k.view(), v.view(), out_view, fo); break;
      case 1: favor::attention_matrix(q.view(), k.view(), out_view, fo); break;
      case 2: favor::favor_attention(*map, q.view(), k.view(), v.view(), out_view, fo); break;
      case 3: favor::favor_attention_matrix(*map, q.view(), k.view(), out_view, fo); break;
      case 4: favor::codebook_attention(codebook.view(), q.view(), k.view(), v.view(), out_view, co); break;
      case 5: favor::codebook_attention_matrix(codebook.view(), q.view(), k.view(), out_view, co); break;
    }
  });
  // Trigonometric features may legitimately give errors for "tame" inputs only through
  // overflow of a cancelled normalizer, which they report as +-inf instead: so no exemption.
  expect(outcome, valid, tame, what);
  if (g_tracing && outcome == Outcome::ok)
    trace("out", Eigen::Map<const Matrix>(out.data(), static_cast<Index>((out.size() - 1) / static_cast<std::size_t>(out_dims.back())), out_dims.back()));
  if (out.back() != -7.0f) fail(std::string(what) + ": wrote past the end of its output");
  if (!matrix)
    check_arriving([&](const Tensor& a, const Tensor& b, const Tensor& c, const favor::TensorView& o) {
      if (method == 0) favor::exact_attention(a.view(), b.view(), c.view(), o, fo);
      else if (method == 2) favor::favor_attention(*map, a.view(), b.view(), c.view(), o, fo);
      else favor::codebook_attention(codebook.view(), a.view(), b.view(), c.view(), o, co);
    }, q, k, v, out_dims, causal, 1 + in.pick(64));
  if (outcome != Outcome::ok) return;

  const std::size_t n = count(out_dims);
  const Signs signs = map ? signs_of(*map) : Signs::positive;
  check_output(out.data(), n, signs, what);
  if (matrix) check_matrix_rows(out.data(), static_cast<Index>(n / static_cast<std::size_t>(s.S)), s.S, causal, signs, what, s.L);
  else
    for (Index h = 0; h < s.heads(); ++h)
      check_hull(out.data() + h * s.L * s.dv, v.data.data() + h * s.S * s.dv, s.L, s.S, s.dv, causal,
                 signs, what);

  // Float64 reference per head when moderate.
  const double scale = fo.scale ? *fo.scale : 1.0 / std::sqrt(static_cast<double>(s.d));
  for (Index h = 0; h < std::min<Index>(s.heads(), 2); ++h) {
    const auto qh = head(q, h, s.L, s.d), kh = head(k, h, s.S, s.d);
    const MatrixD qs = scaled(qh, scale), ks = scaled(kh, scale);
    LogFeatures fq, fk;
    if (method <= 1) {
      // Weights exp(score_ij) as "features" indexed by j: fq.log = scores, fk = identity.
      const MatrixD scores = scale * (qh.cast<double>() * kh.cast<double>().transpose());
      if (scores.cwiseAbs().maxCoeff() > 50.0) continue;
      fq.log = scores;
      fq.value = MatrixD::Ones(s.L, s.S);
      fk.log = MatrixD::Zero(s.S, s.S);
      fk.value = MatrixD::Identity(s.S, s.S);
    } else if (method <= 3) {
      const auto params = map->parameters(qh, kh, scale);
      if (map->kernel() == favor::Kernel::trigonometric) continue;  // signed: ill-conditioned
      // relu with (almost) no epsilon: float32 features of tiny inputs underflow to 0 (a zero row).
      if (map->kernel() == favor::Kernel::relu && map->epsilon() < 1e-6) continue;
      if (max_abs(map->projection()) > 1e2) continue;
      fq = feature_logs(*map, qs, params, favor::Side::query);
      fk = feature_logs(*map, ks, params, favor::Side::key);
      if (max_sq_norm(qs) > 50.0 || max_sq_norm(ks) > 50.0) continue;
      if (max_finite_log(fq) > 50.0 || max_finite_log(fk) > 50.0) continue;
    } else {
      const Index ch = shared_codebook ? 0 : h;
      const MatrixD cs = scaled(head(codebook, ch, clusters, s.d), scale);
      if (max_sq_norm(qs) > 50.0 || max_sq_norm(ks) > 50.0 || max_sq_norm(cs) > 50.0) continue;
      if (co.assignment == favor::Assignment::soft && co.temperature < 0.05) continue;
      if (!codebook_logs(cs, qs, ks, co.assignment, co.temperature, fq, fk)) continue;
    }
    MatrixD expected;
    const MatrixD vh = matrix ? MatrixD() : head(v, h, s.S, s.dv).cast<double>();
    if (!reference_attention(fq, fk, matrix ? nullptr : &vh, causal, expected)) continue;
    const double vmax = matrix ? 1.0 : std::max(1e-30, vh.cwiseAbs().maxCoeff());
    const std::size_t per_head = static_cast<std::size_t>(expected.size());
    compare_reference(out.data() + static_cast<std::size_t>(h) * per_head, expected, 2e-3 * vmax, what);
  }
}

// One-head (Eigen::Ref) API: no value validation, so NaN/inf inputs only need "no crash";
// shape errors must still be reported.
void fuzz_one_head(Decoder& in) {
  const bool causal = in.flag();
  const Index L = in.size(), S = causal && in.flag() ? L : in.size(), d = in.size(16), dv = in.size(8);
  const Matrix q = in.matrix(L, d), k = in.matrix(S, d), v = in.matrix(S, dv);
  const bool valid_causal = !(causal && L > S);
  bool valid_scale = true, valid_chunk = true;
  favor::FavorOptions fo;
  fo.causal = causal;
  fo.scale = in.scale(valid_scale);
  fo.chunk = in.chunk(valid_chunk);
  const bool valid = valid_causal && valid_scale;  // the matrix forms and exact attention
  const bool finite = q.allFinite() && k.allFinite() && v.allFinite();
  bool tame = finite && max_abs(q) <= kTame && max_abs(k) <= kTame && max_abs(v) <= kTame && tame_scale(fo.scale);
  Matrix out(L, dv);
  switch (in.pick(4)) {
    case 0: {
      const Outcome o = run("exact_attention (head)", false, [&] { favor::exact_attention(q, k, v, out, fo); });
      if (finite) expect(o, valid, tame, "exact_attention (head)");
      if (o == Outcome::ok && finite) {
        check_output(out.data(), static_cast<std::size_t>(out.size()), Signs::positive, "exact_attention (head)");
        check_hull(out.data(), v.data(), L, S, dv, causal, Signs::positive, "exact_attention (head)");
      }
      break;
    }
    case 1: {
      std::unique_ptr<favor::FeatureMap> map;
      if (run("FeatureMap", false, [&] { map = make_map(in, d, tame); }) != Outcome::ok) return;
      Matrix a(L, S);
      const bool as_matrix = in.flag();
      trace(std::string("kernel ") + favor::to_string(map->kernel()) + " epsilon " + std::to_string(map->epsilon()) + " (" + std::to_string(std::log10(map->epsilon())) + " log10)" +
            " causal " + std::to_string(causal) + " chunk " + std::to_string(fo.chunk) + " scale " +
            (fo.scale ? std::to_string(*fo.scale) : std::string("default")) + " matrix " + std::to_string(as_matrix));
      trace("W", map->projection()), trace("q", q), trace("k", k), trace("v", v);
      const Outcome o = run("favor (head)", false, [&] {
        if (as_matrix) favor::favor_attention_matrix(*map, q, k, a, fo);
        else favor::favor_attention(*map, q, k, v, out, fo);
      });
      if (o == Outcome::ok) as_matrix ? trace("out", a) : trace("out", out);
      if (finite) expect(o, valid && (as_matrix || valid_chunk), tame, "favor (head)");
      if (o == Outcome::ok && finite) {
        if (as_matrix) {
          check_output(a.data(), static_cast<std::size_t>(a.size()), signs_of(*map), "favor_attention_matrix (head)");
          check_matrix_rows(a.data(), L, S, causal, signs_of(*map), "favor_attention_matrix (head)");
        } else {
          check_output(out.data(), static_cast<std::size_t>(out.size()), signs_of(*map), "favor_attention (head)");
          check_hull(out.data(), v.data(), L, S, dv, causal, signs_of(*map), "favor_attention (head)");
        }
      }
      break;
    }
    case 2: {  // linear_attention with explicit features (signed or not)
      const Index M = in.size(32);
      Matrix qf = in.matrix(L, M), kf = in.matrix(S, M);
      const bool nonnegative = in.flag();
      if (nonnegative) {
        qf = qf.cwiseAbs();
        kf = kf.cwiseAbs();
      }
      const bool ffinite = qf.allFinite() && kf.allFinite() && finite;
      trace("qf", qf), trace("kf", kf), trace("v", v);
      trace("causal " + std::to_string(causal) + " chunk " + std::to_string(fo.chunk));
      const Outcome o = run("linear_attention", false, [&] { favor::linear_attention(qf, kf, v, out, causal, fo.chunk); });
      trace("out", out);
      if (ffinite && o == Outcome::ok) check_output(out.data(), static_cast<std::size_t>(out.size()), Signs::signed_values, "linear_attention");
      if (ffinite) expect(o, valid_causal && valid_chunk, max_abs(qf) <= 1e2 && max_abs(kf) <= 1e2 && max_abs(v) <= kTame,
                          "linear_attention");
      if (ffinite && o == Outcome::ok && nonnegative && max_abs(qf) <= 1e2 && max_abs(kf) <= 1e2) {
        LogFeatures lq{MatrixD::Zero(L, M), qf.cast<double>()}, lk{MatrixD::Zero(S, M), kf.cast<double>()};
        MatrixD expected;
        const MatrixD vd = v.cast<double>();
        if (reference_attention(lq, lk, &vd, causal, expected))
          compare_reference(out.data(), expected, 2e-3 * std::max(1e-30, vd.cwiseAbs().maxCoeff()), "linear_attention");
      }
      break;
    }
    default: {  // codebook, one head
      const Index c = in.size(16);
      const Matrix cb = in.matrix(c, in.pick(10) == 0 ? d + 1 : d);
      favor::CodebookOptions co;
      static_cast<favor::AttentionOptions&>(co) = fo;
      co.assignment = assignment_of(in.pick(3));
      co.chunk = fo.chunk;
      co.temperature = in.flag() ? std::pow(10.0, in.p.ConsumeIntegralInRange<int>(-45, 30)) : 0.5;
      tame = tame && cb.allFinite() && max_abs(cb) <= kTame;
      Matrix a(L, S);
      const bool as_matrix = in.flag();
      trace(std::string("assignment ") + favor::to_string(co.assignment) + " temperature " + std::to_string(co.temperature) +
            " causal " + std::to_string(causal) + " chunk " + std::to_string(co.chunk) + " scale " +
            (co.scale ? std::to_string(*co.scale) : std::string("default")) + " matrix " + std::to_string(as_matrix));
      trace("q", q), trace("k", k), trace("v", v), trace("codebook", cb);
      const Outcome o = run("codebook (head)", false, [&] {
        if (as_matrix) favor::codebook_attention_matrix(cb, q, k, a, co);
        else favor::codebook_attention(cb, q, k, v, out, co);
      });
      if (finite && cb.allFinite())
        expect(o, valid && cb.cols() == d && (as_matrix || valid_chunk), tame, "codebook (head)");
      if (o == Outcome::ok && finite && cb.allFinite()) {
        if (as_matrix) {
          check_output(a.data(), static_cast<std::size_t>(a.size()), Signs::positive, "codebook_attention_matrix (head)");
          check_matrix_rows(a.data(), L, S, causal, Signs::positive, "codebook_attention_matrix (head)");
        } else {
          check_output(out.data(), static_cast<std::size_t>(out.size()), Signs::positive, "codebook_attention (head)");
          check_hull(out.data(), v.data(), L, S, dv, causal, Signs::positive, "codebook_attention (head)");
        }
      }
      break;
    }
  }
}

// Feature maps: sizes (including huge ones), redraw, raw features, kernel estimates, OPRF.
void fuzz_feature_map(Decoder& in) {
  static const Index huge_sizes[] = {46341, 65536, 1 << 20, std::numeric_limits<int>::max(), 3, 0, -1};
  const bool huge = in.pick(4) == 0;
  const Index d = huge ? huge_sizes[in.pick(7)] : in.size(16);
  const Index m = huge ? huge_sizes[in.pick(7)] : in.size(32);
  favor::FeatureMapOptions o;
  o.dim = d;
  o.features = m;
  o.kernel = kernel_of(in.pick(7));
  o.sampling = sampling_of(in.pick(5));
  o.seed = in.p.ConsumeIntegral<std::uint64_t>();
  o.epsilon = in.pick(4) == 0 ? -1.0 : 1e-3;
  // Requests whose W alone (or an orthogonal d x d block) cannot be allocated must fail fast:
  // only sizes that would take more than ~1 GiB are "huge" here; others are computed.
  const double bytes = 4.0 * static_cast<double>(std::max<Index>(m, 0)) * static_cast<double>(std::max<Index>(d, 0)) +
                       (o.sampling == favor::Sampling::iid ? 0.0 : 8.0 * static_cast<double>(d) * static_cast<double>(d));
  if (huge && d > 0 && m > 0 && bytes < 2e9) {
    // e.g. m = 3, d = 65536 iid: 768 KiB, fine but slow for orthogonal; keep only cheap ones
    if (o.sampling != favor::Sampling::iid || static_cast<double>(m) * static_cast<double>(d) > 4e6) return;
  }
  std::unique_ptr<favor::FeatureMap> map;
  const Outcome outcome = run("FeatureMap(options)", huge, [&] { map = std::make_unique<favor::FeatureMap>(o); });
  const bool valid = d >= 1 && m >= 1 && o.epsilon >= 0.0 &&
                     !(dense_exponential(o.kernel) && d > favor::kMaxDenseExponentialDim);
  if (outcome == Outcome::ok && !valid) fail("FeatureMap: invalid options accepted");
  if (outcome == Outcome::error && valid && bytes < 1e8) fail("FeatureMap: valid small options rejected");
  if (outcome != Outcome::ok) return;
  if (!map->projection().allFinite()) fail("FeatureMap: non-finite projection");
  if (huge) return;

  if (in.flag()) {
    const Matrix before = map->projection();
    map->redraw(o.seed);
    if (!(map->projection().array() == before.array()).all()) fail("redraw with the same seed changed W");
  }
  const Index L = in.size(), S = in.size();
  const Matrix x = in.matrix(L, d), y = in.matrix(S, d);
  trace("kernel " + std::string(favor::to_string(map->kernel())) + " epsilon " + std::to_string(map->epsilon()) + " (" + std::to_string(std::log10(map->epsilon())) + " log10)");
  trace("W", map->projection()), trace("x", x), trace("y", y);
  const bool finite = x.allFinite() && y.allFinite();
  favor::KernelParameters params;
  // FAVOR#'s parameters refuse non-finite moments (OPRF's turn NaN and fail later).
  if (run("parameters", false, [&] { params = map->parameters(x, y, 1.0); }) != Outcome::ok) {
    if (!dense_exponential(map->kernel())) fail("parameters: threw for a kernel that never does");
    if (finite && max_abs(x) <= kTame && max_abs(y) <= kTame) fail("parameters: tame inputs rejected");
    return;
  }
  if (finite && map->kernel() == favor::Kernel::oprf &&
      !(std::isfinite(params.oprf.a) && std::isfinite(params.oprf.b) && std::isfinite(params.oprf.log_d) &&
        params.oprf.a <= 0.0 && params.oprf.b >= 1.0))
    fail("oprf coefficients are not finite or out of range");
  switch (in.pick(3)) {
    case 0: {
      const Matrix phi = map->features(x, params);  // documented to overflow for large inputs
      // OPRF's coefficients come from x and y together (rho): huge keys overflow them in float32.
      // 'aderf' scales queries by Psi ~ (|y| / |x|)^(1/2): unit queries against huge keys get large raw features.
      const bool tame = max_abs(x) <= 1.0 && (map->kernel() != favor::Kernel::oprf || max_abs(y) <= kTame) &&
                        (map->kernel() != favor::Kernel::aderf || max_abs(y) <= 1.0);
      if (finite && tame && !phi.allFinite()) fail("features: non-finite for unit inputs");
      break;
    }
    case 1: {
      MatrixD est;
      if (run("kernel_estimate", false, [&] { est = favor::kernel_estimate(*map, x, y); }) != Outcome::ok) {
        if (finite && max_abs(x) <= kTame && max_abs(y) <= kTame) fail("kernel_estimate: tame inputs rejected");
        break;
      }
      trace("estimate", est);
      if (finite)
        for (Index i = 0; i < est.size(); ++i)
          if (std::isnan(est.data()[i])) fail("kernel_estimate: NaN for finite inputs");
      break;
    }
    default: {
      // Documented: every entry finite (for inputs whose float32 features do not overflow).
      const favor::StabilizedFeatures st = favor::stabilized_features(*map, x, y, params);
      if (finite && max_abs(x) <= kTame && max_abs(y) <= kTame && (!st.query.allFinite() || !st.key.allFinite()))
        fail("stabilized_features: non-finite factors");
      break;
    }
  }
}

void fuzz_codebook_tools(Decoder& in) {
  switch (in.pick(4)) {
    case 0: {
      static const Index sizes[] = {1 << 16, 1 << 20, std::numeric_limits<int>::max(), 0, -3};
      const bool huge = in.pick(4) == 0;
      const Index c = huge ? sizes[in.pick(5)] : in.size(16), d = huge ? sizes[in.pick(5)] : in.size(16);
      const double sigma = in.pick(4) == 0 ? (in.flag() ? 0.0 : std::numeric_limits<double>::quiet_NaN())
                                            : std::pow(10.0, in.p.ConsumeIntegralInRange<int>(-40, 30));
      if (huge && c > 0 && d > 0 && static_cast<double>(c) * static_cast<double>(d) < 3e8) return;  // slow, not huge
      Matrix cb;
      const Outcome o = run("random_codebook", huge, [&] { cb = favor::random_codebook(c, d, in.p.ConsumeIntegral<std::uint64_t>(), sigma); });
      const bool valid = c >= 1 && d >= 1 && std::isfinite(sigma) && sigma > 0.0;
      if (o == Outcome::ok && !valid) fail("random_codebook: invalid arguments accepted");
      if (o == Outcome::error && valid && !huge) fail("random_codebook: valid arguments rejected");
      if (o == Outcome::ok && !cb.allFinite() && sigma < 1e30) fail("random_codebook: non-finite codebook");
      break;
    }
    case 1: {
      const Index c = in.size(16), d = in.size(16), n = in.size();
      const Matrix cb = in.matrix(c, d), pts = in.matrix(n, in.pick(10) == 0 ? d + 1 : d);
      std::vector<Index> nearest;
      const Outcome o = run("nearest_codewords", false, [&] { nearest = favor::nearest_codewords(cb, pts); });
      if (o == Outcome::ok) {
        if (static_cast<Index>(nearest.size()) != n) fail("nearest_codewords: wrong count");
        for (Index a : nearest)
          if (a < 0 || a >= c) fail("nearest_codewords: index out of range");
      }
      const double scale = in.flag() ? 0.5 : -1.0;
      run("codebook_from_projection", false, [&] { (void)favor::codebook_from_projection(cb, scale); });
      break;
    }
    case 2: {  // k-means, one head: objective never increases
      const Index n = in.size(), d = in.size(16);
      const Matrix pts = in.matrix(n, d);
      favor::KMeansOptions o;
      o.clusters = in.pick(8) == 0 ? n + 1 - 2 * in.pick(2) * (n + 1) : in.p.ConsumeIntegralInRange<Index>(1, n);
      o.iterations = in.pick(8) == 0 ? -1 : in.p.ConsumeIntegralInRange<Index>(0, 30);
      o.seed = in.p.ConsumeIntegral<std::uint64_t>();
      favor::KMeansResult r;
      const Outcome outcome = run("kmeans", false, [&] { r = favor::kmeans(pts, o); });
      const bool valid = o.clusters >= 1 && o.clusters <= n && o.iterations >= 0 && pts.allFinite();
      if (outcome == Outcome::ok && !valid) fail("kmeans: invalid arguments accepted");
      if (outcome == Outcome::error && valid) fail("kmeans: valid arguments rejected");
      if (outcome != Outcome::ok) return;
      if (r.centroids.rows() != o.clusters || r.centroids.cols() != d) fail("kmeans: wrong centroid shape");
      if (!r.centroids.allFinite()) fail("kmeans: non-finite centroids");
      for (Index a : r.assignment)
        if (a < 0 || a >= o.clusters) fail("kmeans: assignment out of range");
      for (std::size_t t = 1; t < r.objective.size(); ++t)
        if (!(r.objective[t] <= r.objective[t - 1] * (1.0 + 1e-9) + 1e-300))
          fail("kmeans: objective increased from " + std::to_string(r.objective[t - 1]) + " to " +
               std::to_string(r.objective[t]));
      break;
    }
    default: {  // k-means over a tensor with leading dims
      std::vector<Index> dims;
      for (int i = in.pick(3); i > 0; --i) dims.push_back(in.p.ConsumeIntegralInRange<Index>(1, 3));
      const Index n = in.size(), d = in.size(8);
      dims.push_back(n);
      dims.push_back(d);
      bool finite = true;
      double magnitude = 0.0;
      const Tensor pts = tensor(in, dims, finite, magnitude);
      favor::KMeansOptions o;
      o.clusters = in.p.ConsumeIntegralInRange<Index>(0, n + 1);
      o.iterations = in.p.ConsumeIntegralInRange<Index>(0, 10);
      std::vector<Index> out_dims = dims;
      out_dims[out_dims.size() - 2] = o.clusters;
      std::vector<float> out(count(out_dims) + 1, -7.0f);
      const Outcome outcome = run("kmeans (tensor)", false, [&] {
        favor::kmeans(pts.view(), favor::TensorView{out.data(), out_dims}, o);
      });
      expect(outcome, o.clusters >= 1 && o.clusters <= n && finite, true, "kmeans (tensor)");
      if (out.back() != -7.0f) fail("kmeans (tensor): wrote past its output");
      if (outcome == Outcome::ok) check_output(out.data(), out.size() - 1, Signs::positive, "kmeans (tensor)");
      break;
    }
  }
}

void fuzz_metrics(Decoder& in) {
  std::vector<Index> dims;
  for (int i = in.pick(3); i > 0; --i) dims.push_back(in.p.ConsumeIntegralInRange<Index>(1, 3));
  dims.push_back(in.size());
  dims.push_back(in.size());
  bool finite_exact = true, finite_approx = true;
  double magnitude = 0.0;
  const Tensor exact = tensor(in, dims, finite_exact, magnitude);
  std::vector<Index> approx_dims = dims;
  const bool same = in.pick(8) != 0;
  if (!same) approx_dims.back() += 1;
  const Tensor approx = tensor(in, approx_dims, finite_approx, magnitude);
  favor::MatrixErrors e;
  const Outcome o = run("compare", false, [&] { e = favor::compare(exact.view(), approx.view()); });
  expect(o, same && finite_exact, true, "compare");
  if (o == Outcome::ok && finite_approx) {
    if (std::isnan(e.mse) || std::isnan(e.rel_frobenius) || std::isnan(e.max_abs) || std::isnan(e.mean_row_kl))
      fail("compare: NaN for finite inputs");
    if (e.mse < 0 || e.rel_frobenius < 0 || e.max_abs < 0) fail("compare: negative error measure");
  }
  if (same) {
    const Index cols = dims.back(), rows = static_cast<Index>(count(dims) / static_cast<std::size_t>(cols));
    const Eigen::Map<const Matrix> a(exact.data.data(), 1, rows * cols), b(approx.data.data(), 1, rows * cols);
    double r = 0.0;
    run("output_relative_error", false, [&] { r = favor::output_relative_error(a, b); });
    if (finite_exact && finite_approx && std::isnan(r)) fail("output_relative_error: NaN for finite inputs");
  }
}


// matmul with b given each call and with b packed once (PackedMatrix): the same outcome, and the
// same bits on success; packing rejects a non-finite b; finite tame inputs never fail, and match a
// float64 product; a wrong k, rank, bias or out shape is rejected by both.
void fuzz_matmul(Decoder& in) {
  const bool transpose = in.flag();
  std::vector<Index> a_dims;
  for (int i = in.pick(3); i > 0; --i) a_dims.push_back(in.p.ConsumeIntegralInRange<Index>(1, 3));
  const Index n = in.size(), k = in.size(), m = in.size();
  a_dims.push_back(n), a_dims.push_back(k);
  bool valid = true, finite = true;
  double magnitude = 0.0;
  std::vector<Index> b_dims = transpose ? std::vector<Index>{m, k} : std::vector<Index>{k, m};
  switch (in.pick(10)) {
    case 0: b_dims[transpose ? 1 : 0] += 1, valid = false; break;  // k differs from a's
    case 1: b_dims.insert(b_dims.begin(), 1), valid = false; break;  // rank 3
    default: break;
  }
  const Tensor a = tensor(in, a_dims, finite, magnitude), b = tensor(in, b_dims, finite, magnitude);
  const bool with_bias = in.flag();
  std::vector<Index> bias_dims{m};
  if (with_bias && in.pick(10) == 0) bias_dims[0] += 1, valid = false;
  const Tensor bias = with_bias ? tensor(in, bias_dims, finite, magnitude) : Tensor{};
  std::vector<Index> out_dims = a_dims;
  out_dims.back() = m;
  if (in.pick(16) == 0) out_dims.back() += 1, valid = false;
  std::vector<float> plain(count(out_dims)), fast(plain.size());
  favor::MatmulOptions o;
  o.transpose_b = transpose;
  const favor::ConstTensorView bias_view = bias.view();
  const favor::ConstTensorView* bias_ptr = with_bias ? &bias_view : nullptr;
  const bool tame = finite && magnitude <= kTame;
  trace("matmul transpose " + std::to_string(transpose) + " n " + std::to_string(n) + " k " + std::to_string(k) +
        " m " + std::to_string(m) + " bias " + std::to_string(with_bias));
  const Outcome direct = run("matmul", false, [&] { favor::matmul(a.view(), b.view(), bias_ptr, {plain.data(), out_dims}, o); });
  // The product of finite inputs can still overflow float32 (a documented error), so only tame
  // inputs must succeed.
  expect(direct, valid && finite, tame, "matmul");
  std::unique_ptr<favor::PackedMatrix> packed;
  const Outcome packing = run("PackedMatrix", false, [&] { packed = std::make_unique<favor::PackedMatrix>(b.view(), o); });
  const bool b_ok = b_dims.size() == 2 && std::all_of(b.data.begin(), b.data.end(), [](float x) { return std::isfinite(x); });
  if ((packing == Outcome::ok) != b_ok) fail("PackedMatrix: accepted a bad b, or rejected a finite rank-2 one: " + g_last_error);
  if (packing != Outcome::ok) return;
  const Outcome via_packed = run("matmul (packed)", false, [&] { favor::matmul(a.view(), *packed, bias_ptr, {fast.data(), out_dims}); });
  if (via_packed != direct) fail("matmul with a packed b: another outcome than with b itself (" + g_last_error + ")");
  if (direct != Outcome::ok) return;
  if (std::memcmp(plain.data(), fast.data(), 4 * plain.size()) != 0) fail("matmul with a packed b: other bits than with b itself");
  if (!tame) return;
  const Index rows = static_cast<Index>(count(a_dims) / static_cast<std::size_t>(k));
  for (Index i = 0; i < rows; ++i)
    for (Index j = 0; j < m; ++j) {
      double sum = with_bias ? bias.data[j] : 0.0, size = 1.0;
      for (Index t = 0; t < k; ++t) {
        const double term = double(a.data[i * k + t]) * double(transpose ? b.data[j * k + t] : b.data[t * m + j]);
        sum += term, size += std::abs(term);
      }
      if (!(std::abs(plain[i * m + j] - sum) <= 1e-5 * (size + std::abs(with_bias ? bias.data[j] : 0.0))))
        fail("matmul: differs from the float64 product");
    }
}

// Causal states, key masks and grouped-query heads: appends in random pieces (with random masks,
// sometimes a bad append that must leave the state as it was) against one causal tensor call on
// the whole sequence (an exact state with a window shorter than it: against the same state
// appending it at once); and grouped heads against K and V repeated by hand. A window on another
// method, or a negative one, is refused.
void fuzz_state_and_groups(Decoder& in) {
  const int method = in.pick(3);  // exact, favor, codebook
  const Index hkv = 1 + in.pick(2), group = 1 + in.pick(3), hq = hkv * group;
  const Index L = in.size(), d = in.size(16), dv = in.size(8);
  std::vector<float> q = in.values(hq * L, d, false), k = in.values(hkv * L, d, false), v = in.values(hkv * L, dv, false);
  q.resize(static_cast<std::size_t>(hq * L * d)), k.resize(static_cast<std::size_t>(hkv * L * d)), v.resize(static_cast<std::size_t>(hkv * L * dv));
  const bool tame = max_abs(q) <= 10.0 && max_abs(k) <= 10.0 && max_abs(v) <= kTame;
  std::vector<std::uint8_t> mask(static_cast<std::size_t>(hkv * L), 1);
  const bool masked = in.flag();
  if (masked)
    for (auto& m : mask) m = in.pick(3) != 0;
  bool tame_map = true;
  std::unique_ptr<favor::FeatureMap> map;
  favor::CausalStateOptions so;
  so.method = static_cast<favor::StateMethod>(method);
  Matrix book;
  if (method == 1) {
    if (run("FeatureMap", false, [&] { map = make_map(in, d, tame_map); }) != Outcome::ok) return;
    if (map->kernel() == favor::Kernel::oprf && !map->data_independent())
      map->set_rho(in.p.ConsumeFloatingPointInRange<double>(0.0, 20.0));
    if (!map->data_independent()) {  // FAVOR#: fixed from a sample of queries and keys
      const Matrix x = in.matrix(1 + in.pick(4), d, false), y = in.matrix(1 + in.pick(4), d, false);
      tame_map = tame_map && max_abs(x) <= 10.0 && max_abs(y) <= 10.0;
      if (run("fit", false, [&] { map->fit(x, y, 1.0 / std::sqrt(static_cast<double>(d))); }) != Outcome::ok) return;
    }
    so.map = map.get();
  } else if (method == 2) {
    book = in.matrix(1 + in.pick(8), d, false);
    so.codebook = {book.data(), {book.rows(), d}};
    so.assignment = assignment_of(in.pick(3));
  }
  if (method == 0 && in.flag()) so.window = 1 + static_cast<Index>(in.pick(static_cast<int>(L) + 2));  // < L or not
  if (in.pick(8) == 0) {
    favor::CausalStateOptions bad = so;
    bad.window = method == 0 ? -1 - static_cast<Index>(in.pick(3)) : 1 + static_cast<Index>(in.pick(4));
    if (run("CausalState (bad window)", false, [&] { favor::CausalState refused(bad); }) == Outcome::ok)
      fail("CausalState: a window of " + std::to_string(bad.window) + " was accepted for method " + std::to_string(method));
  }
  favor::CausalState state(so);
  const std::vector<Index> qd{hq, L, d}, kd{hkv, L, d}, vd{hkv, L, dv}, od{hq, L, dv};
  std::vector<float> whole(static_cast<std::size_t>(hq * L * dv) + 1, -7.0f), got(whole.size() - 1, 0.0f);
  favor::FavorOptions fo;
  fo.causal = true;
  favor::CodebookOptions co;
  co.causal = true;
  co.assignment = so.assignment;
  const favor::ConstMaskView mv = masked ? favor::ConstMaskView{mask.data(), {hkv, L}} : favor::ConstMaskView{};
  const Outcome one = run("causal call", false, [&] {
    const favor::TensorView out{whole.data(), od};
    switch (method) {
      case 0:
        if (so.window != 0 && so.window < L) {
          favor::CausalState once(so);
          once.append({q.data(), qd}, {k.data(), kd}, {v.data(), vd}, out, mv);
        } else {
          favor::exact_attention({q.data(), qd}, {k.data(), kd}, {v.data(), vd}, out, fo, mv);
        }
        break;
      case 1: favor::favor_attention(*map, {q.data(), qd}, {k.data(), kd}, {v.data(), vd}, out, fo, mv); break;
      default: favor::codebook_attention(so.codebook, {q.data(), qd}, {k.data(), kd}, {v.data(), vd}, out, co, mv); break;
    }
  });
  if (whole.back() != -7.0f) fail("causal call: wrote past the end of its output");
  // Append in pieces.
  bool ok = true;
  for (Index a = 0; a < L && ok;) {
    const Index n = std::min(L - a, 1 + static_cast<Index>(in.pick(6)));
    auto rows = [&](const std::vector<float>& t, Index heads, Index cols) {
      std::vector<float> r(static_cast<std::size_t>(heads * n * cols));
      for (Index h = 0; h < heads; ++h)
        std::copy(t.begin() + (h * L + a) * cols, t.begin() + (h * L + a + n) * cols, r.begin() + h * n * cols);
      return r;
    };
    const auto qs = rows(q, hq, d), ks = rows(k, hkv, d), vs = rows(v, hkv, dv);
    std::vector<std::uint8_t> ms;
    for (Index h = 0; h < hkv; ++h) ms.insert(ms.end(), mask.begin() + h * L + a, mask.begin() + h * L + a + n);
    std::vector<float> out(static_cast<std::size_t>(hq * n * dv) + 1, -7.0f);
    if (in.pick(5) == 0) {  // a bad append: one more key (and value) than queries
      std::vector<float> bk(static_cast<std::size_t>(hkv * (n + 1) * std::max(d, dv)), 0.5f);
      const Outcome o = run("append (bad)", false, [&] {
        state.append({qs.data(), {hq, n, d}}, {bk.data(), {hkv, n + 1, d}}, {bk.data(), {hkv, n + 1, dv}}, {out.data(), {hq, n, dv}});
      });
      if (o == Outcome::ok) fail("append: dims that do not match were accepted");
      if (state.length() != a) fail("append: a failed append changed the length");
    }
    const favor::ConstMaskView m = masked ? favor::ConstMaskView{ms.data(), {hkv, n}} : favor::ConstMaskView{};
    const Outcome o = run("append", false, [&] {
      state.append({qs.data(), {hq, n, d}}, {ks.data(), {hkv, n, d}}, {vs.data(), {hkv, n, dv}}, {out.data(), {hq, n, dv}}, m);
    });
    if (out.back() != -7.0f) fail("append: wrote past the end of its output");
    if (o != Outcome::ok) {
      ok = false;
      if (state.length() != a) fail("append: a failed append changed the length");
      break;
    }
    for (Index h = 0; h < hq; ++h) std::copy(out.begin() + h * n * dv, out.begin() + (h + 1) * n * dv, got.begin() + (h * L + a) * dv);
    a += n;
  }
  if (one == Outcome::ok && ok && tame && tame_map && signs_of_state(map.get()) && finite_all(got)) {
    double diff = 0.0, top = 0.0;
    for (std::size_t i = 0; i < got.size(); ++i) {
      diff = std::max(diff, std::abs(static_cast<double>(got[i]) - whole[i]));
      top = std::max(top, std::abs(static_cast<double>(whole[i])));
    }
    if (diff > 1e-3 * std::max(top, max_abs(v)) + 1e-30)
      fail("causal state: appends differ from one causal call by " + std::to_string(diff) + " (max " + std::to_string(top) + ")");
  }
  if (one == Outcome::ok && tame && !ok) fail("append: rejected what one causal call accepted: " + g_last_error);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider provider(data, size);
  g_trace.clear();
  Decoder in{provider};
  const int entry = in.pick(13);
  switch (entry) {
    case 12: fuzz_matmul(in); break;
    case 0: case 1: case 2: case 3: case 4: case 5: fuzz_tensor_attention(in, entry); break;
    case 6: case 7: fuzz_one_head(in); break;
    case 8: fuzz_feature_map(in); break;
    case 9: fuzz_codebook_tools(in); break;
    case 11: fuzz_state_and_groups(in); break;
    default: fuzz_metrics(in); break;
  }
  return 0;
}
