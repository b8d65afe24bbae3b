// Causal attention one piece at a time (docs/design.md §8): prefill, then decode. Appending a
// sequence in any split gives the outputs of one causal call on the whole sequence, to rounding.
//   exact     a key/value cache that grows with the length (masked keys are not kept), or with
//             a window, keeps only the most recent keys: sliding-window attention
//   favor     per key/value head the prefix state sum phi(k) v^T, sum phi(k) and their shifts:
//             the same memory at every length; with a window, 4 of them (the window's, and one
//             of each block after its oldest)
//   codebook  per key/value head the running per-code sums R^T v, R^T 1 (and their shifts)
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "codebook.hpp"
#include "feature_map.hpp"
#include "linear_attention.hpp"
#include "tensor.hpp"
#include "types.hpp"

namespace favor {

enum class StateMethod { exact, favor, codebook };

struct CausalStateOptions {
  StateMethod method = StateMethod::exact;
  std::optional<double> scale;  // default 1/sqrt(d)
  Index chunk = 0;              // favor/codebook: rows per block, 0 = the default
  // exact: 0 = unbounded (the default), or w >= 1: sliding-window attention. The cache keeps at
  // most w keys per key/value head, and each new query attends to the w most recent kept
  // (unmasked) keys at positions up to and including its own. With w >= the total length the
  // outputs are the unbounded cache's, bit for bit; any split of a sequence gives the outputs of
  // appending it at once, to rounding. Once the cache is full, decode steps (one position per
  // append) keep state_bytes() constant; an append of n positions holds up to w + n of them while
  // it runs.
  // favor: 0 = the whole prefix (the default), or w a multiple of 4: positions in blocks of w / 4
  // (from position 0), each new query seeing the keys of its own block up to itself and of the 3
  // blocks before it (between 3w/4 + 1 and w positions; masked keys are not summed). Outputs
  // equal one causal favor_attention per block of queries over those keys, to rounding, for any
  // split. The state keeps per key/value head a prefix state of the window's keys and one of each
  // block after the window's oldest, merged into the window's when a block starts (4 times the
  // unwindowed state's per-head sums once 3 blocks have passed, constant from then on); each
  // append runs on two of them. codebook with a window, or a negative window, is an error.
  Index window = 0;
  // favor: the map (copied: a later redraw of the original does not reach the state). An 'oprf'
  // map needs a fixed rho, an 'sderf' or 'aderf' map a fit.
  const FeatureMap* map = nullptr;
  // codebook: [c, d] shared, or [..., c, d] with k's leading dims (one per key/value head); copied.
  ConstTensorView codebook;
  Assignment assignment = Assignment::hard;
  double temperature = 1.0;
};

class CausalState {
 public:
  explicit CausalState(const CausalStateOptions& options);
  ~CausalState();
  CausalState(CausalState&&) noexcept;
  CausalState& operator=(CausalState&&) noexcept;

  // Dims of append's output ([..., Hq, n, dv]) after checking q [..., Hq, n, d], k [..., Hkv, n, d],
  // v [..., Hkv, n, dv] against each other and against the dims fixed by the first append.
  std::vector<Index> append_dims(const std::vector<Index>& q, const std::vector<Index>& k,
                                 const std::vector<Index>& v) const;
  // New query i sees every earlier position and the new ones up to itself; the key mask
  // ([..., n], broadcast against k's leading dims) removes new keys for good. Strong guarantee:
  // on any error (bad input, out of memory, a non-finite result) the state is unchanged.
  void append(const ConstTensorView& q, const ConstTensorView& k, const ConstTensorView& v, const TensorView& out,
              const ConstMaskView& key_mask = {});

  Index length() const;           // positions appended (masked ones included)
  std::size_t state_bytes() const;  // bytes the state holds (its copy of the map or codebook included)
  StateMethod method() const;
  // Forget every position (and the dims fixed by the first append).
  void reset();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

StateMethod parse_state_method(const std::string& name, const std::string& argument = "method");

}  // namespace favor
