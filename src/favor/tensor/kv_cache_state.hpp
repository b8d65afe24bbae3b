// The causal state of exact attention: per key/value head a cache of the keys and values so far
// (masked keys are not kept), growing with the length.
#pragma once

#include <memory>
#include <optional>

#include "favor/tensor/state_impl.hpp"

namespace favor {

std::unique_ptr<StateImpl> make_kv_cache_state(std::optional<double> scale);

}  // namespace favor
