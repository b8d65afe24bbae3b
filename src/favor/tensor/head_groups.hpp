// Which key/value head each query head reads, and each key/value head's mask row (internal):
// the bookkeeping the tensor-level calls and the causal state share.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "favor/tensor.hpp"
#include "favor/types.hpp"

namespace favor {

// Which key/value head each query head reads, from the leading dims of q and k.
struct HeadGroups {
  Index query_heads = 1;  // all query heads (product of q's leading dims)
  Index kv_heads = 1;     // all key/value heads
  Index q_inner = 1;      // Hq: q's last leading dim (1 for rank 2)
  Index kv_inner = 1;     // Hkv
  Index group() const { return q_inner / kv_inner; }
  Index kv_of(Index h) const { return (h / q_inner) * kv_inner + (h % q_inner) / group(); }
  // The query heads of key/value head kv are group() consecutive heads from this one.
  Index first_query_head(Index kv) const { return (kv / kv_inner) * q_inner + (kv % kv_inner) * group(); }
};

// The heads of q and of out that read key/value head kv (q [..., Hq, L, d], out [..., Hq, L, dv]).
struct QueryGroup {
  std::vector<ConstMatrixRef> qs;
  std::vector<MatrixRef> outs;
};
QueryGroup query_group(const HeadGroups& groups, Index kv, const ConstTensorView& q, const TensorView& out);
// Checks that k's leading dims are q's, or q's with the last one divided (Hq a multiple of Hkv);
// names `argument` otherwise.
HeadGroups head_groups(const std::vector<Index>& q, const std::vector<Index>& k, const std::string& argument = "k");

// The mask row (S bytes) of each key/value head of k; checks dims (broadcast against k's leading
// dims, last dim S) and values (0 or 1). Empty when the mask has no data.
std::vector<const std::uint8_t*> key_mask_rows(const ConstMaskView& mask, const std::vector<Index>& k,
                                               const std::string& argument = "keyMask");

}  // namespace favor
