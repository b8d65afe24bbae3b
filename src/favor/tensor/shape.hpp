// Dims of row-major tensors [..., rows, cols]: checks that name the argument, and the helpers the
// tensor-level calls share (internal).
#pragma once

#include <string>
#include <vector>

#include "favor/types.hpp"

namespace favor {

std::string dims_string(const std::vector<Index>& dims);

// Throws favor::Error(range) naming `argument` unless dims has rank >= 2 and every dim >= 1.
void check_rank(const std::vector<Index>& dims, const std::string& argument, const char* layout);

// The product of dims; throws if a dim is negative or the count overflows Index.
Index element_count(const std::vector<Index>& dims, const std::string& argument);

// Throws favor::Error(range) naming `argument` if any value is NaN or +-Infinity.
void check_finite(const float* data, Index count, const std::string& argument);

// Throws favor::Error(type) if data is null, then checks every value is finite.
void check_values(const ConstTensorView& t, const std::string& argument);

// The leading (batch/head) dims: all but the last two.
std::vector<Index> leading(const std::vector<Index>& dims);
// The product of the leading dims.
Index heads(const std::vector<Index>& dims);

}  // namespace favor
