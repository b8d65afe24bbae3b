// The causal state of FAVOR+ and codebook attention: per key/value head a prefix state
// (prefix_state.hpp) of the keys so far, the same memory at every length.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "favor/codebook.hpp"
#include "favor/engine/codebook_state.hpp"
#include "favor/feature_map.hpp"
#include "favor/tensor/state_impl.hpp"

namespace favor {

// The map or codebooks are read where they are: they outlive the state.
struct FactoredMethod {
  const FeatureMap* map = nullptr;                     // favor
  const std::vector<ScaledCodebook>* books = nullptr;  // codebook: one per key/value head, or one for all
  std::optional<double> scale;
  Index chunk = 0;
  Assignment assignment = Assignment::hard;
  double temperature = 1.0;
};

std::unique_ptr<StateImpl> make_factored_state(const FactoredMethod& method);
// An independent copy, between appends, of a state make_factored_state made.
std::unique_ptr<StateImpl> clone_factored_state(StateImpl& state);
// Several FAVOR+ states of one method fed the same appends (a sliding window's, windowed_state.cpp)
// make the features of its rows once: `borrower`'s next run, of the append `lender` has just run,
// reads lender's features where lender made them in one product (a decoding step's rows), the
// bits it would have made itself.
void lend_features(const StateImpl& lender, StateImpl& borrower);
// The state of the keys of all `parts` (states make_factored_state made, of one method and the
// same heads, none empty), in order: per key/value head their sums added at the larger shift per
// feature. The parts are read only.
std::unique_ptr<StateImpl> merged_factored_state(const std::vector<StateImpl*>& parts);

}  // namespace favor
