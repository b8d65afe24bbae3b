#include "favor/codebook.hpp"

#include "favor/engine/codebook_state.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "favor/error.hpp"
#include "favor/exact_attention.hpp"
#include "favor/kernels/gemm.hpp"
#include "favor/engine/factored_attention.hpp"
#include "favor/features/random.hpp"
#include "favor/engine/validate.hpp"
#include "favor/kernels/vector_math.hpp"

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

}  // namespace

ScaledCodebook::ScaledCodebook(ConstMatrixRef raw, double scale_) : scale(scale_) {
  if (raw.rows() < 1 || raw.cols() < 1)
    throw_range("codebook", "expected [c, d] with c, d >= 1, got " + detail::shape(raw.rows(), raw.cols()));
  root = static_cast<float>(std::sqrt(scale));
  codebook = root * raw;
  half_sq = 0.5f * codebook.rowwise().squaredNorm();
  gemm::pack_bt(codebook.rows(), codebook.cols(), codebook.data(), codebook.cols(), packed);
  max_norm = raw.cast<double>().rowwise().norm().maxCoeff();
}

namespace {

// Factors of codebook attention for scaled rows x~ = x sqrt(scale).
struct CodebookFactors {
  CodebookFactors(const ScaledCodebook& book, const std::vector<ConstMatrixRef>& qs, const CodebookOptions& options)
      : book(book) {
    double q_norm = 0.0;
    for (const ConstMatrixRef& q : qs) {
      check_codebook(book.codebook, q);
      q_norm = std::max(q_norm, q.cast<double>().rowwise().norm().maxCoeff());
    }
    check_temperature(options);
    if (resolve_scale(options, book.codebook.cols()) != book.scale)
      throw_range("scale", "expected the scale the codebook was prepared for, " + std::to_string(book.scale));
    // Scores q~.c~ stay below 1e37 (Cauchy-Schwarz), far from the lowest-float log weights of
    // hard assignment (see keys()) and from float overflow.
    const double bound = book.scale * q_norm * book.max_norm;
    if (!(bound <= 1e37))
      throw_range("q, codebook", "too large: scale * max|q_i| * max|c_y| = " + std::to_string(bound) +
                                     " exceeds 1e37, the float32 range of the scores; scale the inputs down");
    assignment = options.assignment;
    temperature = options.temperature;
  }

  const ScaledCodebook& book;
  Assignment assignment;
  double temperature;

  // x c~^T through the GEMM, c~ packed once (Eigen's product is much slower in wasm).
  Matrix scores(const Matrix& x) const {
    const Matrix& c = book.codebook;
    Matrix s(x.rows(), c.rows());
    gemm::gemm_packed(x.rows(), c.rows(), c.cols(), x.data(), x.outerStride(), 1, book.packed.data(), s.data(),
                      s.outerStride(), false);
    return s;
  }

  FactoredFeatures queries(const Matrix& x) const { return {Vector::Zero(x.rows()), scores(x), Matrix()}; }

  FactoredFeatures keys(const Matrix& y) const {
    const Index n = y.rows(), c = book.codebook.rows();
    // -|y - c|^2/2 = y.c - |c|^2/2 - |y|^2/2; the last term is a row term.
    Matrix e = scores(y);
    e.rowwise() -= book.half_sq.transpose();
    FactoredFeatures f;
    switch (assignment) {
      case Assignment::gaussian:
        f.row_log = -0.5f * y.rowwise().squaredNorm();
        f.exponent = std::move(e);
        break;
      case Assignment::soft: {  // log softmax of e / T (the row term cancels)
        // Shift by the row max before dividing by T, in double: e / T alone overflows for small
        // T. Entries below the lowest float (weights exp(-3.4e38) = 0 exactly) are clamped to it
        // so that the engine sees finite logs; non-finite e (overflowed inputs) stays non-finite.
        const Vector top = e.rowwise().maxCoeff();
        e.colwise() -= top;
        const double t = temperature;
        e = e.unaryExpr([t](float x) {  // std::max keeps a NaN first argument
          return static_cast<float>(std::max(static_cast<double>(x) / t,
                                             static_cast<double>(std::numeric_limits<float>::lowest())));
        });
        // log sum_y exp(e_jy), e_jy <= 0: the library's vector exp (Eigen's runs one float at a time in wasm)
        Vector log_sum(n);
        FloatBuffer row(static_cast<std::size_t>(c));
        for (Index j = 0; j < n; ++j) {
          std::copy_n(&e(j, 0), c, row.data());
          log_sum(j) = std::log(vec::exp_shifted(row.data(), c, 0.0f));
        }
        e.colwise() -= log_sum;
        f.row_log = Vector::Zero(n);
        f.exponent = std::move(e);
        break;
      }
      case Assignment::hard: {
        if (!detail::all_finite(e))  // no nearest codeword among overflowed distances
          throw_range("k", "not finite or too large for float32 distances to the codebook (k.c or |c|^2 "
                           "overflows 3.4e38); scale the inputs down");
        // One-hot responsibilities as log weights: 0 for the nearest codeword, the lowest float
        // (exp gives exactly 0) elsewhere. As logs rather than 0/1 values, codewords that no key
        // uses get the lowest column shift, so a query's scores against them cannot outweigh,
        // and underflow, the codewords that carry the keys.
        f.row_log = Vector::Zero(n);
        f.exponent = Matrix::Constant(n, c, std::numeric_limits<float>::lowest());
        Index best = 0;
        for (Index j = 0; j < n; ++j) {
          e.row(j).maxCoeff(&best);  // max of y.c - |c|^2/2 = nearest codeword
          f.exponent(j, best) = 0.0f;
        }
        break;
      }
    }
    return f;
  }
};

}  // namespace

namespace {

void check_heads(const std::vector<ConstMatrixRef>& qs, ConstMatrixRef k, ConstMatrixRef v,
                 const std::vector<MatrixRef>& outs, const CodebookOptions& options, StateStep* step) {
  if (qs.empty() || qs.size() != outs.size()) throw_range("q", "expected one output per query head");
  for (std::size_t h = 0; h < qs.size(); ++h) {
    detail::check_head(qs[h], k, &v, options.causal);
    detail::check_out(outs[h], qs[h].rows(), v.cols());
    if (qs[h].rows() != qs[0].rows()) throw_range("q", "expected the same L in every query head");
  }
  if (step && !options.causal) throw_range("causal", "a carried prefix state needs causal attention");
}

// The codebook made ready for the call, its checks first in the order the prepared form makes them.
ScaledCodebook scaled(ConstMatrixRef raw, const std::vector<ConstMatrixRef>& qs, const CodebookOptions& options) {
  for (const ConstMatrixRef& q : qs) check_codebook(raw, q);
  check_temperature(options);
  return ScaledCodebook(raw, resolve_scale(options, raw.cols()));
}

void run(const ScaledCodebook& book, const std::vector<ConstMatrixRef>& qs, ConstMatrixRef k, ConstMatrixRef v,
         const std::vector<MatrixRef>& outs, const CodebookOptions& options, StateStep* step) {
  const CodebookFactors factors(book, qs, options);
  const float root = book.root;
  const Index c = book.codebook.rows();
  std::vector<QueryHead> heads;
  for (std::size_t h = 0; h < qs.size(); ++h)
    heads.push_back({[&, h](Index i0, Index n) { return factors.queries(root * qs[h].middleRows(i0, n)); }, outs[h]});
  const bool finite =
      factored_attention(heads,
                         masked_keys([&](Index j0, Index n) { return factors.keys(root * k.middleRows(j0, n)); },
                                     options.key_mask, c),
                         c, v, options.causal, options.chunk, step);
  if (!finite)
    for (const MatrixRef& out : outs) detail::check_result(out, "q, k, v, codebook");
}

}  // namespace

void codebook_attention(const ScaledCodebook& codebook, const std::vector<ConstMatrixRef>& qs, ConstMatrixRef k,
                        ConstMatrixRef v, const std::vector<MatrixRef>& outs, const CodebookOptions& options,
                        StateStep* step) {
  check_heads(qs, k, v, outs, options, step);
  run(codebook, qs, k, v, outs, options, step);
}

void codebook_attention(ConstMatrixRef codebook, const std::vector<ConstMatrixRef>& qs, ConstMatrixRef k,
                        ConstMatrixRef v, const std::vector<MatrixRef>& outs, const CodebookOptions& options,
                        StateStep* step) {
  check_heads(qs, k, v, outs, options, step);
  run(scaled(codebook, qs, options), qs, k, v, outs, options, step);
}

void codebook_attention(ConstMatrixRef codebook, const std::vector<ConstMatrixRef>& qs, ConstMatrixRef k,
                        ConstMatrixRef v, const std::vector<MatrixRef>& outs, const CodebookOptions& options) {
  codebook_attention(codebook, qs, k, v, outs, options, nullptr);
}

void codebook_attention(ConstMatrixRef codebook, ConstMatrixRef q, ConstMatrixRef k,
                        ConstMatrixRef v, MatrixRef out, const CodebookOptions& options) {
  codebook_attention(codebook, std::vector<ConstMatrixRef>{q}, k, v, std::vector<MatrixRef>{out}, options);
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
  const std::vector<ConstMatrixRef> qs{q};
  const ScaledCodebook book = scaled(codebook, qs, options);
  const CodebookFactors factors(book, qs, options);
  FactoredFeatures keys = factors.keys(book.root * k);
  if (options.key_mask) mask_key_factors(keys, options.key_mask, 0, codebook.rows());
  factored_attention_matrix(factors.queries(book.root * q), std::move(keys), codebook.rows(), out, options.causal);
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
