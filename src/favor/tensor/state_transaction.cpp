#include "favor/tensor/state_transaction.hpp"

namespace favor {

void append_transaction(StateImpl& state, const AppendInput& in) {
  try {
    state.prepare(in);
    state.run(in);
  } catch (...) {
    state.rollback(in);
    throw;
  }
  state.commit(in);
}

}  // namespace favor
