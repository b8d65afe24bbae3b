// The causal state of exact attention: per key/value head a cache of the keys and values so far
// (masked keys are not kept), growing with the length; with a window (> 0) only the most recent
// `window` kept keys, for sliding-window attention (CausalStateOptions::window).
#pragma once

#include <memory>
#include <optional>

#include "favor/tensor/state_impl.hpp"

namespace favor {

std::unique_ptr<StateImpl> make_kv_cache_state(std::optional<double> scale, Index window = 0);

}  // namespace favor
