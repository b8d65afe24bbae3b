// FAVOR+ over a sliding window, one piece at a time (CausalStateOptions::window with method
// 'favor'): positions in blocks of window / 4, each query seeing the keys of its own block up to
// itself and of the 3 blocks before it. Sums of features cannot drop a key again (subtracting
// would cancel catastrophically), so the state keeps 4 prefix states per key/value head, one
// started at each of the last 4 block starts; the oldest answers the queries, the others are
// ahead of their turn. Every append goes to all of them: a step costs about 4 of the unwindowed
// state's, and the memory is 4 of its states once 3 blocks have passed.
#pragma once

#include <memory>

#include "favor/tensor/factored_state.hpp"

namespace favor {

// window: a multiple of 4 (checked by the caller).
std::unique_ptr<StateImpl> make_windowed_state(const FactoredMethod& method, Index window);

}  // namespace favor
