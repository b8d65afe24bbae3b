// What a causal state keeps per key/value head, behind one interface: the key/value cache of exact
// attention (kv_cache_state.hpp), the prefix states of FAVOR+ and codebook attention
// (factored_state.hpp), or FAVOR+'s over a sliding window (windowed_state.hpp). An append runs
// as a transaction over it (state_transaction.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "favor/tensor.hpp"
#include "favor/tensor/head_groups.hpp"
#include "favor/types.hpp"

namespace favor {

// One append's inputs, checked against each other and against the state: q [..., Hq, n, d],
// k [..., Hkv, n, d], v [..., Hkv, n, dv], out [..., Hq, n, dv].
struct AppendInput {
  const ConstTensorView& q;
  const ConstTensorView& k;
  const ConstTensorView& v;
  const TensorView& out;
  const HeadGroups& groups;
  const std::vector<const std::uint8_t*>& masks;  // a key mask row per key/value head, or none
  Index n, d, dv;
  bool first;  // the state's first append: its heads are made by it, and dropped if it fails

  Eigen::Map<const Matrix> q_head(Index h) const { return head(q, h); }
  Eigen::Map<const Matrix> k_head(Index kv) const { return head(k, kv); }
  Eigen::Map<const Matrix> v_head(Index kv) const { return head(v, kv); }
  const std::uint8_t* mask(Index kv) const { return masks.empty() ? nullptr : masks[static_cast<std::size_t>(kv)]; }

 private:
  static Eigen::Map<const Matrix> head(const ConstTensorView& t, Index h) {
    const Index rows = t.dims[t.dims.size() - 2], cols = t.dims.back();
    return Eigen::Map<const Matrix>(t.data + h * rows * cols, rows, cols);
  }
};

// The steps of an append: prepare() and run() may throw, and then rollback() leaves the state as it
// was before prepare(); otherwise commit() makes the append count. Neither of those two fails.
// commit() may leave the work of it to each head's next use of its state (the next append's run
// or rollback, state_bytes): the append counts all the same.
class StateImpl {
 public:
  virtual ~StateImpl() = default;
  // What can fail before any output is written: room for the new positions, the per-head steps.
  virtual void prepare(const AppendInput& in) = 0;
  // Every head's outputs into in.out; what it changes in the state, rollback() undoes.
  virtual void run(const AppendInput& in) = 0;
  virtual void commit(const AppendInput& in) = 0;
  virtual void rollback(const AppendInput& in) = 0;
  virtual std::size_t state_bytes() = 0;  // of the per-head state, once what was deferred is done
  virtual void reset() = 0;               // forget every head
};

}  // namespace favor
