// Random feature maps phi with exp(x.y) ~= phi(x).phi(y) for inputs already scaled by
// sqrt(scale) (docs/design.md §3, §4). Every map is written in a factored form
//
//     phi_r(x_i) = exp(log_prefactor + row_log_i + exponent_ir) * value_ir
//
// so that attention can shift exponents without bias (see linear_attention.hpp):
//   positive      row_log = -|x|^2/2, exponent = w_r.x,                        value = 1
//   hyperbolic    row_log = -|x|^2/2, exponent = [w.x, -w.x],                   value = 1
//   oprf          row_log = -|x|^2/2, exponent = A |w_r|^2 + B w_r.x,           value = 1
//   sderf, aderf  row_log = -|T x|^2/2, exponent = sum_k a_k w_rk^2 + sum_k b_k w_rk (T x)_k,
//                 value = 1 (FAVOR#: T and a per head and side, b_k = sqrt(1 - 4 a_k))
//   trigonometric row_log = +|x|^2/2, exponent = 0,           value = [cos w.x, sin w.x]
//   relu          row_log = 0,        exponent = 0,           value = relu(w.x) + epsilon
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "projection.hpp"
#include "types.hpp"

namespace favor {

// The engine's factored form of features (private: src/favor/features/factored.hpp).
struct FactoredFeatures;

enum class Kernel { positive, hyperbolic, trigonometric, relu, oprf, sderf, aderf };

// 'positive' | 'hyperbolic' | 'trigonometric' | 'relu' | 'oprf' | 'sderf' | 'aderf'; throws
// favor::Error otherwise.
Kernel parse_kernel(const std::string& name, const std::string& argument = "kernel");
const char* to_string(Kernel kernel);

// True for kernels that estimate the softmax kernel exp(x.y) (all but relu).
bool is_softmax_estimator(Kernel kernel);

// OPRF (FAVOR++) coefficients for a given rho = mean_ij |x_i + y_j|^2 in dimension d.
struct OprfCoefficients {
  double a = 0.0;      // A* < 0
  double b = 1.0;      // sqrt(1 - 4A)
  double log_d = 0.0;  // log D = (d/4) log(1 - 4A)
};
OprfCoefficients oprf_coefficients(double rho, Index dim);
// rho of the optimal A for all pairs of rows, in O((L + S) d):
// mean|x|^2 + mean|y|^2 + 2 mean(x).mean(y).
double oprf_rho(ConstMatrixRef x, ConstMatrixRef y);

// FAVOR#'s dense-exponential random features (Likhosherstov et al. 2023; docs/design.md §3),
// written in the frame of the sampled w (the paper's omega is a rotation of w, same law):
//   phi_r(x) = D exp(sum_k a_k w_rk^2 + sum_k b_k w_rk (T x)_k - |T x|^2 / 2) / sqrt(m),
//   b_k = sqrt(1 - 4 a_k), log D = sum_k log(1 - 4 a_k) / 4.
// 'sderf': T = V^T for both sides, V the eigenvectors of mean (x + y)(x + y)^T, a_k OPRF's
// coefficient in one dimension for its eigenvalue. 'aderf': one a for every k (OPRF's for the
// balanced rho), T = Psi for queries and Psi^-T for keys, Psi chosen so that the queries' and
// keys' second moments match after it (then (Psi x).(Psi^-T y) = x.y). Unbiased for any
// orthogonal V / invertible Psi; these choices minimize the mean log second moment over pairs.
struct DenseExponentialParameters {
  MatrixD query_transform;  // T for queries (d x d)
  MatrixD key_transform;    // T for keys (d x d); the same as query_transform for 'sderf'
  VectorD a;                // d coefficients, each <= 0
  double log_d = 0.0;
};
// The parameters of `kernel` ('sderf' or 'aderf') for queries x * sqrt(scale) and keys
// y * sqrt(scale), from their means and second moments (O((L + S) d^2 + d^3)). Throws
// favor::Error for another kernel, d > kMaxDenseExponentialDim, or a non-finite input.
DenseExponentialParameters dense_exponential_parameters(Kernel kernel, ConstMatrixRef x, ConstMatrixRef y,
                                                        double scale = 1.0);
// The eigendecompositions cost O(d^3) per head and call (or once, for a fitted map).
constexpr Index kMaxDenseExponentialDim = 256;

struct FeatureMapOptions {
  Index dim = 0;        // d
  Index features = 0;   // m, number of random projections
  Kernel kernel = Kernel::positive;
  Sampling sampling = Sampling::orthogonal;
  std::uint64_t seed = 0;
  double epsilon = 1e-3;  // relu only
  // OPRF only: a fixed rho = mean |q~ + k~|^2 (scaled rows) for every call, instead of one computed
  // from each call's q and k. Fixed parameters make OPRF a data-independent map: causal states
  // need it (otherwise the parameters would depend on keys not yet seen), and grouped-query heads
  // then share their key features. Finite and >= 0.
  std::optional<double> rho;
};

// Which side of the kernel a row is: FAVOR#'s 'aderf' maps queries and keys differently.
enum class Side { query, key };

// FAVOR#'s parameters made ready for one map's W, per side: the projection W diag(b) T (m x d,
// packed for the GEMM), T itself where |T x| is not |x| (packed; empty for 'sderf', whose T is a
// rotation), and bounds that prove the exponents finite.
struct DenseSide {
  FloatBuffer packed_projection;
  FloatBuffer packed_transform;
  double max_projection_norm = 0.0;  // max_r |(W diag(b) T)_r|
};

// Data-dependent parameters of one head's kernel (OPRF's A, B, D; FAVOR#'s; neutral for other
// kernels).
struct KernelParameters {
  OprfCoefficients oprf;
  DenseExponentialParameters dense;
  DenseSide dense_query, dense_key;
  Vector dense_offset;  // m: sum_k a_k w_rk^2
  double max_dense_offset = 0.0;
};

class FeatureMap {
 public:
  // Samples W (m x d) from options.sampling and options.seed.
  explicit FeatureMap(const FeatureMapOptions& options);
  // Uses an explicit projection W (m x d): outputs are the estimator for exactly that W.
  // `sampling` is only used by a later redraw().
  FeatureMap(Kernel kernel, Matrix projection, double epsilon = 1e-3,
             Sampling sampling = Sampling::orthogonal);

  // A new W (same m x d) from a new seed, drawn with the map's sampling mode.
  void redraw(std::uint64_t seed);

  // OPRF's fixed rho (see FeatureMapOptions::rho); nullopt: computed from each call's inputs.
  void set_rho(std::optional<double> rho);
  const std::optional<double>& rho() const { return rho_; }
  // Fixes the parameters of a data-dependent kernel ('oprf': its rho; 'sderf', 'aderf': the
  // dense-exponential parameters) from sample queries x and keys y at attention scale `scale`,
  // for every later call: the map then no longer depends on its inputs (causal states need
  // this). Throws favor::Error naming "kernel" for a kernel without such parameters.
  void fit(ConstMatrixRef x, ConstMatrixRef y, double scale = 1.0);
  // FAVOR#'s fitted parameters, or nullopt (computed from each call's inputs).
  const std::optional<DenseExponentialParameters>& dense() const { return dense_; }
  // True when parameters() does not look at the inputs.
  bool data_independent() const;
  // False for 'aderf', whose query and key features differ (see Side).
  bool symmetric() const { return kernel_ != Kernel::aderf; }

  Kernel kernel() const { return kernel_; }
  Sampling sampling() const { return sampling_; }
  bool explicit_projection() const { return explicit_; }
  Index dim() const { return projection_.cols(); }
  Index num_projections() const { return projection_.rows(); }  // m
  Index num_features() const;                                    // M: m, or 2m for hyperbolic/trig
  double epsilon() const { return epsilon_; }
  const Matrix& projection() const { return projection_; }

  // Parameters for a head whose scaled queries and keys are x * sqrt(scale) and y * sqrt(scale)
  // (OPRF uses their rho; x and y themselves are not copied or scaled).
  KernelParameters parameters(ConstMatrixRef x, ConstMatrixRef y, double scale = 1.0) const;

  // log of the constant factor in front of phi: -log(m)/2, -log(2m)/2, log D - log(m)/2, or 0.
  double log_prefactor(const KernelParameters& params) const;

  // Engine hooks (their result type is private; C++ users call favor_attention instead).
  // Factored features of the rows of x (rows x d) scaled by root (attention's sqrt(scale)),
  // without a scaled copy of x: the projections are scaled as they are stored. fold_row_log
  // (keys, whose log magnitudes come next): the positive kernel may return its row_log added
  // into the exponent (row_log then 0) with the columns' maxima (FactoredFeatures::column_max).
  // `side`: whether the rows are queries or keys (only 'aderf' tells them apart).
  FactoredFeatures factored(ConstMatrixRef x, const KernelParameters& params, float root = 1.0f,
                            bool fold_row_log = false, Side side = Side::query) const;

  // The positive kernel's query features at the keys' per-feature shift, as shifted_queries makes
  // them from factored(): t = w.x~ + shift, then each row's exp(t - its max), the same bits. The
  // shift is added and the row maxima taken in the projection's epilogue: the product is read
  // once more instead of twice. False (qf unset) where factored() and prepared() have more to
  // say: another kernel, or rows past the bound that spares their checks.
  bool queries_at_shift(ConstMatrixRef x, float root, const Vector& shift, Matrix& qf) const;

  // phi(x) as plain numbers (rows x M). Overflows for large inputs: meant for tests, small
  // inputs and users who want the raw features; attention never calls it.
  Matrix features(ConstMatrixRef x, const KernelParameters& params, Side side = Side::query) const;

 private:
  void check_epsilon() const;
  // Rows' |x~|^2 / 2, and whether they and every projection are finite (see factored()).
  struct RowNorms {
    Vector half_sq;
    bool bounded = false;
    bool small = true;  // every |x~|^2 below 1e37 (and none NaN)
  };
  RowNorms row_norms(ConstMatrixRef x, const KernelParameters& params, float root) const;
  void derive();  // projection_sq_norms_ and packed_projection_ from projection_
  // FAVOR#'s per-side projections for this W; the reason they overflow float32, or empty.
  std::string prepare_dense(KernelParameters& params) const;
  void refresh_fitted();  // fitted_ from dense_ and W
  FactoredFeatures dense_factored(ConstMatrixRef x, const KernelParameters& params, float root, Side side) const;

  Kernel kernel_;
  Sampling sampling_ = Sampling::orthogonal;
  bool explicit_ = false;
  double epsilon_;
  std::optional<double> rho_;
  std::optional<DenseExponentialParameters> dense_;
  // A fitted map's parameters made ready for its W once (at fit and redraw), not at every call.
  std::optional<KernelParameters> fitted_;
  Matrix projection_;
  Vector projection_sq_norms_;  // |w_r|^2, for OPRF
  double max_projection_norm_ = 0.0;  // max |w_r|, for the bound in factored()
  FloatBuffer packed_projection_;  // W^T in the GEMM's strips (gemm::pack_bt), for factored
  // W sampled 'structured' (not explicit): its blocks' signs, so that factored projects by fast
  // Walsh-Hadamard transforms (src/favor/features/structured_projection.hpp); empty otherwise.
  FloatBuffer structured_signs_;
};

// The unbiased estimate phi(x).phi(y) of exp(x.y) for every pair (L x S), in double, from the
// factored features of each pair (O(L S M)); +-inf where it truly overflows double. Throws
// favor::Error if the float32 features themselves overflow (inputs of magnitude ~1e19 and beyond).
MatrixD kernel_estimate(const FeatureMap& map, ConstMatrixRef x, ConstMatrixRef y);

}  // namespace favor
