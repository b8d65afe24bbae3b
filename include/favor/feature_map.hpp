// Random feature maps phi with exp(x.y) ~= phi(x).phi(y) for inputs already scaled by
// sqrt(scale) (docs/design.md §3, §4). Every map is written in a factored form
//
//     phi_r(x_i) = exp(log_prefactor + row_log_i + exponent_ir) * value_ir
//
// so that attention can shift exponents without bias (see linear_attention.hpp):
//   positive      row_log = -|x|^2/2, exponent = w_r.x,                        value = 1
//   hyperbolic    row_log = -|x|^2/2, exponent = [w.x, -w.x],                   value = 1
//   oprf          row_log = -|x|^2/2, exponent = A |w_r|^2 + B w_r.x,           value = 1
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

enum class Kernel { positive, hyperbolic, trigonometric, relu, oprf };

// 'positive' | 'hyperbolic' | 'trigonometric' | 'relu' | 'oprf'; throws favor::Error otherwise.
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

// Data-dependent parameters of one head's kernel (OPRF's A, B, D; neutral for other kernels).
struct KernelParameters {
  OprfCoefficients oprf;
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
  // True when parameters() does not look at the inputs.
  bool data_independent() const { return kernel_ != Kernel::oprf || rho_.has_value(); }

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
  FactoredFeatures factored(ConstMatrixRef x, const KernelParameters& params, float root = 1.0f,
                            bool fold_row_log = false) const;

  // The positive kernel's query features at the keys' per-feature shift, as shifted_queries makes
  // them from factored(): t = w.x~ + shift, then each row's exp(t - its max), the same bits. The
  // shift is added and the row maxima taken in the projection's epilogue: the product is read
  // once more instead of twice. False (qf unset) where factored() and prepared() have more to
  // say: another kernel, or rows past the bound that spares their checks.
  bool queries_at_shift(ConstMatrixRef x, float root, const Vector& shift, Matrix& qf) const;

  // phi(x) as plain numbers (rows x M). Overflows for large inputs: meant for tests, small
  // inputs and users who want the raw features; attention never calls it.
  Matrix features(ConstMatrixRef x, const KernelParameters& params) const;

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

  Kernel kernel_;
  Sampling sampling_ = Sampling::orthogonal;
  bool explicit_ = false;
  double epsilon_;
  std::optional<double> rho_;
  Matrix projection_;
  Vector projection_sq_norms_;  // |w_r|^2, for OPRF
  double max_projection_norm_ = 0.0;  // max |w_r|, for the bound in factored()
  FloatBuffer packed_projection_;  // W^T in the GEMM's strips (gemm::pack_bt), for factored
};

// The unbiased estimate phi(x).phi(y) of exp(x.y) for every pair (L x S), in double, from the
// factored features of each pair (O(L S M)); +-inf where it truly overflows double. Throws
// favor::Error if the float32 features themselves overflow (inputs of magnitude ~1e19 and beyond).
MatrixD kernel_estimate(const FeatureMap& map, ConstMatrixRef x, ConstMatrixRef y);

}  // namespace favor
