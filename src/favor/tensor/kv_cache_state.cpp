#include "favor/tensor/kv_cache_state.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "favor/kernels/attention_kernel.hpp"
#include "favor/engine/exact_block.hpp"
#include "favor/kernels/gemm.hpp"
#include "favor/parallel.hpp"
#include "favor/thread_plan.hpp"

namespace favor {

namespace {

// Positions rounded up to whole strips, and the floats of that many packed keys.
Index whole_strips(Index positions) { return gemm::strips(positions) * kernel::kStrip; }
Index key_floats(Index positions, Index d) { return whole_strips(positions) * d; }

// One key/value head's cache of exact attention: positions [0, count) of keys (d) and values
// (dv), in buffers of `capacity` positions that grow by doubling. Keys are kept in packed strips
// (kernel::Keys), so that a decode step reads them straight into the score GEMM.
struct KeyValueCache {
  FloatBuffer keys, values;
  Index count = 0, capacity = 0;  // capacity: a whole number of strips
};

// Room for n more positions.
void make_room(KeyValueCache& c, Index n, Index d, Index dv) {
  if (c.count + n <= c.capacity) return;
  // Doubling keeps appends amortized O(n); near the heap's end, just what is needed.
  Index capacity = whole_strips(std::max(c.count + n, 2 * c.capacity));
  FloatBuffer keys, values;
  try {
    keys.reserve(static_cast<std::size_t>(key_floats(capacity, d)));
    values.reserve(static_cast<std::size_t>(capacity * dv));
  } catch (...) {  // std::bad_alloc or std::length_error: the doubled capacity does not fit
    capacity = whole_strips(c.count + n);
    FloatBuffer().swap(keys), FloatBuffer().swap(values);
    keys.reserve(static_cast<std::size_t>(key_floats(capacity, d)));
    values.reserve(static_cast<std::size_t>(capacity * dv));
  }
  keys.assign(c.keys.begin(), c.keys.begin() + key_floats(c.count, d));
  values.assign(c.values.begin(), c.values.begin() + c.count * dv);
  keys.resize(static_cast<std::size_t>(key_floats(capacity, d)));  // zeros: the padding of the last strip
  values.resize(static_cast<std::size_t>(capacity * dv));
  c.keys.swap(keys), c.values.swap(values);
  c.capacity = capacity;
}

class KvCacheState final : public StateImpl {
 public:
  explicit KvCacheState(std::optional<double> scale) : scale_(scale) {}

  // Room for the new positions in every head, and the new keys and values written past each
  // cache's count: nothing counts until commit(). A head grown before a later one fails keeps its
  // room.
  void prepare(const AppendInput& in) override {
    const Index n = in.n, d = in.d, dv = in.dv, heads = in.groups.kv_heads;
    if (in.first) caches_.resize(static_cast<std::size_t>(heads));
    for (KeyValueCache& c : caches_) make_room(c, n, d, dv);
    visible_.resize(static_cast<std::size_t>(heads));
    for (Index kv = 0; kv < heads; ++kv) {
      KeyValueCache& c = caches_[static_cast<std::size_t>(kv)];
      for (Index j = 0; j < n; ++j) kernel::put_packed_key(c.keys.data(), d, c.count + j, in.k_head(kv).data() + j * d);
      std::copy_n(in.v_head(kv).data(), n * dv, c.values.data() + c.count * dv);
      if (const std::uint8_t* m = in.mask(kv)) {
        std::vector<std::uint8_t>& vis = visible_[static_cast<std::size_t>(kv)];
        vis.assign(static_cast<std::size_t>(c.count), 1);
        vis.insert(vis.end(), m, m + n);
      }
    }
  }

  void run(const AppendInput& in) override {
    const HeadGroups& g = in.groups;
    const Index n = in.n, d = in.d, dv = in.dv;
    AttentionOptions o;
    o.causal = true;
    o.scale = scale_;
    const auto run_head = [&](Index h) {
      const Index kv = g.kv_of(h);
      const KeyValueCache& c = caches_[static_cast<std::size_t>(kv)];
      const std::vector<std::uint8_t>& vis = visible_[static_cast<std::size_t>(kv)];
      AttentionOptions oh = o;
      if (!vis.empty()) oh.key_mask = vis.data();
      detail::exact_attention(in.q_head(h), kernel::Keys::packed(c.keys.data(), c.count + n, d),
                              Eigen::Map<const Matrix>(c.values.data(), c.count + n, dv),
                              Eigen::Map<Matrix>(in.out.data + h * n * dv, n, dv), oh);
    };
    const Index visible = caches_[0].count + n;
    const int threads = threads_for_parts(g.query_heads, static_cast<double>(n * visible * (d + dv)));
    if (threads == 1) {
      for (Index h = 0; h < g.query_heads; ++h) run_head(h);
    } else {
      const ThreadLimit limit(threads);
      parallel_for(g.query_heads, run_head);
    }
  }

  // The new unmasked positions join each cache (masked keys are absent for good).
  void commit(const AppendInput& in) override {
    const Index n = in.n, d = in.d, dv = in.dv;
    for (Index kv = 0; kv < in.groups.kv_heads; ++kv) {
      KeyValueCache& c = caches_[static_cast<std::size_t>(kv)];
      const std::uint8_t* m = in.mask(kv);
      Index kept = c.count;
      for (Index j = 0; j < n; ++j) {
        if (m && !m[j]) continue;
        if (kept != c.count + j) {
          kernel::move_packed_key(c.keys.data(), d, c.count + j, kept);
          std::memmove(c.values.data() + kept * dv, c.values.data() + (c.count + j) * dv, sizeof(float) * dv);
        }
        ++kept;
      }
      c.count = kept;
    }
    std::vector<std::vector<std::uint8_t>>().swap(visible_);
  }

  // The rows past each count never counted.
  void rollback(const AppendInput& in) override {
    if (in.first) std::vector<KeyValueCache>().swap(caches_);
    std::vector<std::vector<std::uint8_t>>().swap(visible_);
  }

  std::size_t state_bytes() const override {
    std::size_t floats = 0;
    for (const KeyValueCache& c : caches_) floats += c.keys.capacity() + c.values.capacity();
    return 4 * floats;
  }

  void reset() override {
    caches_.clear();
    caches_.shrink_to_fit();
  }

 private:
  std::optional<double> scale_;
  std::vector<KeyValueCache> caches_;
  std::vector<std::vector<std::uint8_t>> visible_;  // an append's: each head's key mask over old and new keys
};

}  // namespace

std::unique_ptr<StateImpl> make_kv_cache_state(std::optional<double> scale) {
  return std::make_unique<KvCacheState>(scale);
}

}  // namespace favor
