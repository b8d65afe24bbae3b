#include "favor/tensor/shape.hpp"

#include <cmath>
#include <limits>

#include "favor/error.hpp"
#include "favor/kernels/vector_math.hpp"

namespace favor {

std::string dims_string(const std::vector<Index>& dims) {
  std::string s = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

void check_rank(const std::vector<Index>& dims, const std::string& argument, const char* layout) {
  if (dims.size() < 2)
    throw_range(argument, std::string("expected dims ") + layout + " (rank >= 2), got " + dims_string(dims));
  for (Index d : dims)
    if (d < 1) throw_range(argument, "expected every dim >= 1, got " + dims_string(dims));
}

Index element_count(const std::vector<Index>& dims, const std::string& argument) {
  Index n = 1;
  for (Index d : dims) {
    if (d < 0) throw_range(argument, "expected dims >= 0, got " + dims_string(dims));
    if (d != 0 && n > std::numeric_limits<Index>::max() / d)
      throw_range(argument, "dims " + dims_string(dims) + " hold more elements than can be addressed");
    n *= d;
  }
  return n;
}

void check_finite(const float* data, Index count, const std::string& argument) {
  if (vec::all_finite(data, count)) return;
  for (Index i = 0; i < count; ++i)
    if (!std::isfinite(data[i]))
      throw_range(argument, "expected finite values, found " + std::to_string(data[i]) + " at index " +
                                std::to_string(i));
}

void check_values(const ConstTensorView& t, const std::string& argument) {
  if (!t.data) throw_type(argument, "has no data");
  check_finite(t.data, element_count(t.dims, argument), argument);
}

std::vector<Index> leading(const std::vector<Index>& dims) {
  return {dims.begin(), dims.end() - std::min<std::ptrdiff_t>(2, static_cast<std::ptrdiff_t>(dims.size()))};
}

Index heads(const std::vector<Index>& dims) {
  Index h = 1;
  for (std::size_t i = 0; i + 2 < dims.size(); ++i) h *= dims[i];
  return h;
}

}  // namespace favor
