#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "favor/codebook.hpp"
#include "favor/error.hpp"
#include "favor/features/random.hpp"

namespace favor {

namespace {

double squared_distance(const MatrixD& a, Index i, const MatrixD& b, Index j) {
  return (a.row(i) - b.row(j)).squaredNorm();
}

// k-means++: each next center is a point drawn with probability proportional to its squared
// distance to the nearest center so far.
MatrixD seed_centers(const MatrixD& x, Index clusters, NormalStream& random) {
  const Index n = x.rows();
  MatrixD centers(clusters, x.cols());
  VectorD nearest = VectorD::Constant(n, std::numeric_limits<double>::infinity());
  Index pick = std::min<Index>(n - 1, static_cast<Index>(random.uniform() * static_cast<double>(n)));
  for (Index c = 0; c < clusters; ++c) {
    centers.row(c) = x.row(pick);
    for (Index i = 0; i < n; ++i) nearest(i) = std::min(nearest(i), squared_distance(x, i, centers, c));
    const double total = nearest.sum();
    if (c + 1 == clusters) break;
    if (total > 0.0) {
      double target = random.uniform() * total;
      pick = n - 1;
      for (Index i = 0; i < n; ++i) {
        target -= nearest(i);
        if (target < 0.0 && nearest(i) > 0.0) { pick = i; break; }
      }
    } else {  // every point sits on a center: any point will do
      pick = std::min<Index>(n - 1, static_cast<Index>(random.uniform() * static_cast<double>(n)));
    }
  }
  return centers;
}

}  // namespace

KMeansResult kmeans(ConstMatrixRef points, const KMeansOptions& options) {
  const Index n = points.rows(), clusters = options.clusters;
  if (n < 1 || points.cols() < 1) throw_range("points", "expected [n, d] with n, d >= 1");
  if (clusters < 1 || clusters > n)
    throw_range("clusters", "expected an integer in [1, " + std::to_string(n) + "] (the number of points), got " +
                                std::to_string(clusters));
  if (options.iterations < 0)
    throw_range("iterations", "expected an integer >= 0, got " + std::to_string(options.iterations));
  if (!points.allFinite()) throw_range("points", "expected finite values");

  const MatrixD x = points.cast<double>();
  NormalStream random(options.seed, 2);
  MatrixD centers = seed_centers(x, clusters, random);
  std::vector<Index> assignment(static_cast<std::size_t>(n), -1);
  VectorD distance(n);
  KMeansResult result;

  for (Index iteration = 0;; ++iteration) {
    // Assignment step: a point moves only to a strictly closer center, so the objective with
    // these centers can only go down.
    bool changed = false;
    for (Index i = 0; i < n; ++i) {
      Index& a = assignment[static_cast<std::size_t>(i)];
      double best = a >= 0 ? squared_distance(x, i, centers, a) : std::numeric_limits<double>::infinity();
      for (Index c = 0; c < clusters; ++c) {
        const double dist = squared_distance(x, i, centers, c);
        if (dist < best) { best = dist; a = c; changed = true; }
      }
      distance(i) = best;
    }
    result.objective.push_back(distance.sum());
    if ((!changed && iteration > 0) || iteration == options.iterations) break;

    // Update step: means of the clusters; an empty cluster takes the farthest point.
    MatrixD sums = MatrixD::Zero(clusters, x.cols());
    std::vector<Index> counts(static_cast<std::size_t>(clusters), 0);
    for (Index i = 0; i < n; ++i) {
      sums.row(assignment[static_cast<std::size_t>(i)]) += x.row(i);
      ++counts[static_cast<std::size_t>(assignment[static_cast<std::size_t>(i)])];
    }
    std::vector<Index> order(static_cast<std::size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](Index a, Index b) { return distance(a) > distance(b); });
    std::size_t next_far = 0;
    for (Index c = 0; c < clusters; ++c) {
      if (counts[static_cast<std::size_t>(c)] > 0) {
        centers.row(c) = sums.row(c) / static_cast<double>(counts[static_cast<std::size_t>(c)]);
      } else {
        const Index p = order[next_far++];
        centers.row(c) = x.row(p);
        assignment[static_cast<std::size_t>(p)] = c;  // distance 0 now
      }
    }
  }
  result.centroids = centers.cast<float>();
  result.assignment = std::move(assignment);
  return result;
}

}  // namespace favor
