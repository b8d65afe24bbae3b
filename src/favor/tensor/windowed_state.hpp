// FAVOR+ over a sliding window, one piece at a time (CausalStateOptions::window with method
// 'favor'): positions in blocks of window / 4, each query seeing the keys of its own block up to
// itself and of the 3 blocks before it. Sums of features cannot drop a key again (subtracting
// would cancel catastrophically), so the state keeps, per key/value head, one prefix state of the
// window's keys, which answers the queries, and one of each block after the window's oldest; when
// a block starts, the sums of the 3 before it, merged, become the window's state. Every append
// goes to two states (the window's and the current block's, which reads the window's features of
// the rows): a step costs less than 2 of the unwindowed state's, and the memory is 4 of its states
// once 3 blocks have passed.
#pragma once

#include <memory>

#include "favor/tensor/factored_state.hpp"

namespace favor {

// window: a multiple of 4 (checked by the caller).
std::unique_ptr<StateImpl> make_windowed_state(const FactoredMethod& method, Index window);

}  // namespace favor
