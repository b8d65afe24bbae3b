// Fuzzing the codebook tools (k-means, assignments).
#include "fuzz.hpp"

namespace fuzz {

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

}  // namespace fuzz
