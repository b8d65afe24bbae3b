// Exits 0 only if FAVOR+ with many features lands near exact attention.
#include <favor/favor.hpp>

#include <cstdio>

int main() {
  favor::Matrix q = 0.3f * favor::Matrix::Random(32, 8), k = 0.3f * favor::Matrix::Random(32, 8);
  favor::Matrix v = favor::Matrix::Random(32, 4);
  favor::FeatureMapOptions options;
  options.dim = 8;
  options.features = 1024;
  const favor::FeatureMap map(options);
  const double error = favor::output_relative_error(favor::exact_attention(q, k, v),
                                                    favor::favor_attention(map, q, k, v));
  std::printf("output relative error %.4f\n", error);
  return error < 0.1 ? 0 : 1;
}
