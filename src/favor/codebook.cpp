#include "codebook.hpp"

#include <cmath>
#include <limits>

#include "error.hpp"
#include "exact_attention.hpp"
#include "linear_attention.hpp"
#include "random.hpp"
#include "validate.hpp"

namespace favor {

Assignment parse_assignment(const std::string& name, const std::string& argument) {
  if (name == "hard") return Assignment::hard;
  if (name == "soft") return Assignment::soft;
  if (name == "gaussian") return Assignment::gaussian;
  throw_range(argument, "expected 'hard', 'soft' or 'gaussian', got '" + name + "'");
}

const char* to_string(Assignment assignment) {
  switch (assignment) {
    case Assignment::hard: return "hard";
    case Assignment::soft: return "soft";
    case Assignment::gaussian: return "gaussian";
  }
  return "?";
}

namespace {

void check_codebook(ConstMatrixRef codebook, ConstMatrixRef q) {
  if (codebook.rows() < 1 || codebook.cols() != q.cols())
    throw_range("codebook", "expected [c, " + std::to_string(q.cols()) + "] (d of q) with c >= 1, got " +
                                detail::shape(codebook.rows(), codebook.cols()));
}

void check_temperature(const CodebookOptions& options) {
  if (!std::isfinite(options.temperature) || options.temperature <= 0.0)
    throw_range("temperature", "expected a finite number > 0, got " + std::to_string(options.temperature));
}

// Factors of codebook attention for scaled rows x~ = x sqrt(scale).
struct CodebookFactors {
  CodebookFactors(ConstMatrixRef raw, ConstMatrixRef q, const CodebookOptions& options) {
    check_codebook(raw, q);
    check_temperature(options);
    root = static_cast<float>(std::sqrt(resolve_scale(options, q.cols())));
    codebook = root * raw;
    half_sq = 0.5f * codebook.rowwise().squaredNorm();
    assignment = options.assignment;
    inv_temperature = static_cast<float>(1.0 / options.temperature);
  }

  float root;
  Matrix codebook;  // c~ (c x d)
  Vector half_sq;   // |c~_y|^2 / 2
  Assignment assignment;
  float inv_temperature;

  FactoredFeatures queries(const Matrix& x) const {
    return {Vector::Zero(x.rows()), x * codebook.transpose(), Matrix()};
  }

  FactoredFeatures keys(const Matrix& y) const {
    const Index n = y.rows(), c = codebook.rows();
    // -|y - c|^2/2 = y.c - |c|^2/2 - |y|^2/2; the last term is a row term.
    Matrix e = y * codebook.transpose();
    e.rowwise() -= half_sq.transpose();
    FactoredFeatures f;
    switch (assignment) {
      case Assignment::gaussian:
        f.row_log = -0.5f * y.rowwise().squaredNorm();
        f.exponent = std::move(e);
        break;
      case Assignment::soft: {  // log softmax of e / T (the row term cancels)
        e *= inv_temperature;
        const Vector top = e.rowwise().maxCoeff();
        e.colwise() -= top;
        const Vector log_sum = e.array().exp().rowwise().sum().log().matrix();
        e.colwise() -= log_sum;
        f.row_log = Vector::Zero(n);
        f.exponent = std::move(e);
        break;
      }
      case Assignment::hard: {
        f.row_log = Vector::Zero(n);
        f.value = Matrix::Zero(n, c);
        Index best = 0;
        for (Index j = 0; j < n; ++j) {
          e.row(j).maxCoeff(&best);  // max of y.c - |c|^2/2 = nearest codeword
          f.value(j, best) = 1.0f;
        }
        break;
      }
    }
    return f;
  }
};

}  // namespace

void codebook_attention(ConstMatrixRef codebook, ConstMatrixRef q, ConstMatrixRef k,
                        ConstMatrixRef v, MatrixRef out, const CodebookOptions& options) {
  detail::check_head(q, k, &v, options.causal);
  detail::check_out(out, q.rows(), v.cols());
  const CodebookFactors factors(codebook, q, options);
  const float root = factors.root;
  factored_attention([&](Index i0, Index n) { return factors.queries(root * q.middleRows(i0, n)); },
                     [&](Index j0, Index n) { return factors.keys(root * k.middleRows(j0, n)); },
                     codebook.rows(), v, out, options.causal, options.chunk);
  detail::check_result(out, "q, k, v, codebook");
}

Matrix codebook_attention(ConstMatrixRef codebook, ConstMatrixRef q, ConstMatrixRef k,
                          ConstMatrixRef v, const CodebookOptions& options) {
  Matrix out(q.rows(), v.cols());
  codebook_attention(codebook, q, k, v, out, options);
  return out;
}

void codebook_attention_matrix(ConstMatrixRef codebook, ConstMatrixRef q, ConstMatrixRef k,
                               MatrixRef out, const CodebookOptions& options) {
  detail::check_head(q, k, nullptr, options.causal);
  detail::check_out(out, q.rows(), k.rows());
  const CodebookFactors factors(codebook, q, options);
  factored_attention_matrix(factors.queries(factors.root * q), factors.keys(factors.root * k), codebook.rows(), out,
                            options.causal);
  detail::check_result(out, "q, k, codebook");
}

Matrix codebook_attention_matrix(ConstMatrixRef codebook, ConstMatrixRef q, ConstMatrixRef k,
                                 const CodebookOptions& options) {
  Matrix out(q.rows(), k.rows());
  codebook_attention_matrix(codebook, q, k, out, options);
  return out;
}

std::vector<Index> nearest_codewords(ConstMatrixRef codebook, ConstMatrixRef points) {
  if (codebook.cols() != points.cols())
    throw_range("codebook", "expected " + std::to_string(points.cols()) + " columns, got " +
                                std::to_string(codebook.cols()));
  Matrix e = points * codebook.transpose();
  e.rowwise() -= 0.5f * codebook.rowwise().squaredNorm().transpose();
  std::vector<Index> nearest(static_cast<std::size_t>(points.rows()));
  for (Index j = 0; j < points.rows(); ++j) e.row(j).maxCoeff(&nearest[static_cast<std::size_t>(j)]);
  return nearest;
}

Matrix codebook_from_projection(ConstMatrixRef projection, double scale) {
  if (!std::isfinite(scale) || scale <= 0.0)
    throw_range("scale", "expected a finite number > 0, got " + std::to_string(scale));
  return projection / static_cast<float>(std::sqrt(scale));
}

Matrix random_codebook(Index clusters, Index dim, std::uint64_t seed, double sigma) {
  if (clusters < 1) throw_range("clusters", "expected an integer >= 1, got " + std::to_string(clusters));
  if (dim < 1) throw_range("dim", "expected an integer >= 1, got " + std::to_string(dim));
  if (!std::isfinite(sigma) || sigma <= 0.0) throw_range("sigma", "expected a finite number > 0");
  NormalStream gaussian(seed, 3);
  Matrix c(clusters, dim);
  for (Index i = 0; i < clusters; ++i)
    for (Index t = 0; t < dim; ++t) c(i, t) = static_cast<float>(sigma * gaussian.normal());
  return c;
}

}  // namespace favor
