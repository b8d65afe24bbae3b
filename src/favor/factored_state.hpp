// The causal state of FAVOR+ and codebook attention: per key/value head a prefix state
// (prefix_state.hpp) of the keys so far, the same memory at every length.
#pragma once

#include <optional>
#include <vector>

#include "codebook.hpp"
#include "feature_map.hpp"
#include "prefix_state.hpp"
#include "state_impl.hpp"

namespace favor {

struct FactoredMethod {
  const FeatureMap* map = nullptr;                     // favor
  const std::vector<ScaledCodebook>* books = nullptr;  // codebook: one per key/value head, or one for all
  std::optional<double> scale;
  Index chunk = 0;
  Assignment assignment = Assignment::hard;
  double temperature = 1.0;
};

class FactoredState final : public StateImpl {
 public:
  // The method's map or codebooks are read where they are (they outlive the state).
  explicit FactoredState(const FactoredMethod& method) : method_(method) {}
  // A step per head (StateStep): the carried states change for good only at commit().
  void prepare(const AppendInput& in) override;
  void run(const AppendInput& in) override;
  void commit(const AppendInput& in) override;
  void rollback(const AppendInput& in) override;
  std::size_t state_bytes() const override;
  void reset() override;

 private:
  // The key/value heads split among threads: `count` parts of `per_part` heads (the last one may
  // have fewer, or none), on the pool's threads when parallel.
  struct Parts {
    bool parallel = false;
    Index count = 1, per_part = 0, heads = 0;
    std::pair<Index, Index> heads_of(Index part) const;  // [kv0, kv1)
    template <class F>
    void each(const F& fn) const;
  };
  void stack_features(const AppendInput& in, Index part);
  void run_head(const AppendInput& in, Index kv);

  FactoredMethod method_;
  std::vector<PrefixState> states_;
  // An append's:
  std::vector<StateStep> steps_;
  Parts parts_;
  Index group_rows_ = 0;                 // the query and key rows of a key/value head
  std::vector<FactoredFeatures> stacked_;  // per part, when its features are made in one product
};

}  // namespace favor
