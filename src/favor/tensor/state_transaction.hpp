// An append as one transaction over a causal state's heads (CausalState::append's strong
// guarantee): every head is prepared and run before any of them commits.
#pragma once

#include "favor/tensor/state_impl.hpp"

namespace favor {

// prepare() and run(), then commit(); on any error rollback() and rethrow: the state is unchanged.
void append_transaction(StateImpl& state, const AppendInput& in);

}  // namespace favor
