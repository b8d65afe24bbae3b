// The causal state of exact attention: per key/value head a cache of the keys and values so far
// (masked keys are not kept), growing with the length.
#pragma once

#include <optional>
#include <vector>

#include "state_impl.hpp"

namespace favor {

class KvCacheState final : public StateImpl {
 public:
  explicit KvCacheState(std::optional<double> scale) : scale_(scale) {}
  // Room for the new positions in every head (the only allocation that can fail), and the new
  // keys and values written past each cache's count: nothing counts until commit().
  void prepare(const AppendInput& in) override;
  void run(const AppendInput& in) override;
  // The new unmasked positions join each cache (masked keys are absent for good).
  void commit(const AppendInput& in) override;
  void rollback(const AppendInput& in) override;
  std::size_t state_bytes() const override;
  void reset() override;

 private:
  // One key/value head's cache: positions [0, count) of keys (d) and values (dv), in buffers of
  // `capacity` positions that grow by doubling. Keys are kept in packed strips (kernel::Keys), so
  // that a decode step reads them straight into the score GEMM.
  struct Cache {
    FloatBuffer keys, values;
    Index count = 0, capacity = 0;  // capacity: a whole number of strips
  };
  static void make_room(Cache& c, Index n, Index d, Index dv);

  std::optional<double> scale_;
  std::vector<Cache> caches_;
  std::vector<std::vector<std::uint8_t>> visible_;  // an append's key mask per head over old and new keys
};

}  // namespace favor
