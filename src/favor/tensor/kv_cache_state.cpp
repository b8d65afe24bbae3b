#include "favor/tensor/kv_cache_state.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "favor/engine/exact_block.hpp"
#include "favor/engine/validate.hpp"
#include "favor/exact_attention.hpp"
#include "favor/kernels/attention_kernel.hpp"
#include "favor/kernels/gemm.hpp"
#include "favor/parallel.hpp"
#include "favor/threads/thread_plan.hpp"

namespace favor {

namespace {

using kernel::kStrip;

// Positions rounded up to whole strips, and the floats of that many packed keys.
Index whole_strips(Index positions) { return gemm::strips(positions) * kStrip; }
Index key_floats(Index positions, Index d) { return whole_strips(positions) * d; }

// One key/value head's cache of exact attention: the kept positions in slots [first, first +
// count) of keys (d) and values (dv), in buffers of `capacity` slots. Keys are kept in packed
// strips (kernel::Keys), so that a decode step reads them straight into the score GEMM; slot s of
// the values is row s, slot s of the keys is kernel::packed_slot(s). Without a window, first is 0
// and the buffers grow by doubling. With one, the oldest positions leave at commit (first moves
// up) and the kept ones slide back to the buffers' start when the new ones would not fit after
// them, so that decode steps run in the same buffers for good.
struct KeyValueCache {
  FloatBuffer keys, values;
  Index first = 0, count = 0, capacity = 0;  // capacity: a whole number of strips
};

// The slots a windowed cache keeps for good: the window's strips and two more, so that after a
// slide (which keeps the first kept slot's offset in its strip, < kStrip) at least kStrip + 1
// decode steps fit before the next one. Without a window (or one no buffer could hold), no bound.
Index steady_capacity(Index window) {
  constexpr Index kUnbounded = std::numeric_limits<Index>::max();
  if (window == 0 || window > kUnbounded / 4) return kUnbounded;
  return whole_strips(window) + 2 * kStrip;
}

// The kept slots moved down by `from` (a whole number of strips, at most first): strips below the
// first kept slot's are free. The positions the cache holds do not change.
void slide(KeyValueCache& c, Index from, Index d, Index dv) {
  if (from == 0) return;
  const Index used = c.first + c.count - from;
  std::memmove(c.keys.data(), c.keys.data() + from * d, sizeof(float) * static_cast<std::size_t>(key_floats(used, d)));
  std::memmove(c.values.data(), c.values.data() + from * dv, sizeof(float) * static_cast<std::size_t>(used * dv));
  c.first -= from;
}

// Room for n more positions in slots [first + count, first + count + n), the kept ones unchanged.
void make_room(KeyValueCache& c, Index n, Index d, Index dv, Index window) {
  const Index from = c.first - c.first % kStrip;   // free whole strips below the kept positions
  const Index need = c.first - from + c.count + n;  // slots needed once they are dropped
  const Index steady = steady_capacity(window);
  // A windowed cache left larger by a long append goes back to (about) its steady size; within a
  // factor 2 it stays as it is, so that appends of similar lengths do not reallocate each time.
  const bool shrink = window != 0 && c.capacity / 2 > std::max(steady, whole_strips(need));
  if (!shrink && c.first + c.count + n <= c.capacity) return;
  if (!shrink && need <= c.capacity) return slide(c, from, d, dv);
  // Doubling keeps appends amortized O(n) (up to a window's steady size); near the heap's end,
  // just what is needed.
  Index capacity = shrink ? std::max(steady, whole_strips(need))
                          : whole_strips(std::max(need, std::min(2 * c.capacity, steady)));
  FloatBuffer keys, values;
  try {
    keys.reserve(static_cast<std::size_t>(key_floats(capacity, d)));
    values.reserve(static_cast<std::size_t>(capacity * dv));
  } catch (...) {  // std::bad_alloc or std::length_error: the doubled capacity does not fit
    FloatBuffer().swap(keys), FloatBuffer().swap(values);
    if (need <= c.capacity) return slide(c, from, d, dv);  // (a smaller buffer: keep this one)
    capacity = whole_strips(need);
    keys.reserve(static_cast<std::size_t>(key_floats(capacity, d)));
    values.reserve(static_cast<std::size_t>(capacity * dv));
  }
  const Index used = c.first + c.count - from;
  keys.assign(c.keys.begin() + from * d, c.keys.begin() + from * d + key_floats(used, d));
  values.assign(c.values.begin() + from * dv, c.values.begin() + (from + used) * dv);
  keys.resize(static_cast<std::size_t>(key_floats(capacity, d)));  // zeros: the padding of the last strip
  values.resize(static_cast<std::size_t>(capacity * dv));
  c.keys.swap(keys), c.values.swap(values);
  c.capacity = capacity;
  c.first -= from;
}

// Windowed: the first slot each new query row sees (keys before it are out of its window). Row i
// sees the kept positions and the new unmasked ones up to itself; of those, the `window` last.
// A row that sees at most `window` keys starts at the first kept slot.
std::vector<Index> window_starts(const KeyValueCache& c, const std::uint8_t* mask, Index n, Index window) {
  std::vector<Index> starts(static_cast<std::size_t>(n));
  std::vector<Index> fresh;  // the slots of the new unmasked keys so far
  fresh.reserve(static_cast<std::size_t>(n));
  const Index end = c.first + c.count;
  for (Index i = 0; i < n; ++i) {
    if (!mask || mask[i]) fresh.push_back(end + i);
    const Index seen = c.count + static_cast<Index>(fresh.size());
    const Index drop = seen - window;  // the oldest keys the row sees no more
    starts[static_cast<std::size_t>(i)] =
        drop <= 0 ? c.first : drop < c.count ? c.first + drop : fresh[static_cast<std::size_t>(drop - c.count)];
  }
  return starts;
}

class KvCacheState final : public StateImpl {
 public:
  KvCacheState(std::optional<double> scale, Index window) : scale_(scale), window_(window) {}

  // Room for the new positions in every head, and the new keys and values written past each
  // cache's kept ones: nothing counts until commit(). A head grown (or slid back) before a later
  // one fails keeps its room; the positions it holds are the same.
  void prepare(const AppendInput& in) override {
    const Index n = in.n, d = in.d, dv = in.dv, heads = in.groups.kv_heads;
    if (in.first) caches_.resize(static_cast<std::size_t>(heads));
    for (KeyValueCache& c : caches_) make_room(c, n, d, dv, window_);
    visible_.resize(static_cast<std::size_t>(heads));
    if (window_) starts_.resize(static_cast<std::size_t>(heads));
    for (Index kv = 0; kv < heads; ++kv) {
      KeyValueCache& c = caches_[static_cast<std::size_t>(kv)];
      const Index end = c.first + c.count;
      for (Index j = 0; j < n; ++j) kernel::put_packed_key(c.keys.data(), d, end + j, in.k_head(kv).data() + j * d);
      std::copy_n(in.v_head(kv).data(), n * dv, c.values.data() + end * dv);
      const std::uint8_t* m = in.mask(kv);
      if (m) {
        std::vector<std::uint8_t>& vis = visible_[static_cast<std::size_t>(kv)];
        vis.assign(static_cast<std::size_t>(c.count), 1);
        vis.insert(vis.end(), m, m + n);
      }
      if (window_) starts_[static_cast<std::size_t>(kv)] = window_starts(c, m, n, window_);
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
      const std::vector<std::uint8_t>& vis = visible_[static_cast<std::size_t>(kv)];  // over slots [first, ...)
      const Eigen::Map<const Matrix> q = in.q_head(h);
      Eigen::Map<Matrix> out(in.out.data + h * n * dv, n, dv);
      const Index end = c.first + c.count;  // the first new slot
      // The keys from slot `from` (a strip's first) to `stop` as the kernels read them.
      const auto keys = [&](Index from, Index stop) { return kernel::Keys::packed(c.keys.data() + from * d, stop - from, d); };
      const auto values = [&](Index from, Index stop) {
        return Eigen::Map<const Matrix>(c.values.data() + from * dv, stop - from, dv);
      };
      // The key mask of slots [from, stop): none before `start`, then the append's.
      std::vector<std::uint8_t> mask;
      const auto mask_of = [&](Index from, Index start, Index stop) -> const std::uint8_t* {
        if (from == start) return vis.empty() ? nullptr : vis.data() + (start - c.first);
        mask.assign(static_cast<std::size_t>(start - from), 0);
        if (vis.empty()) mask.resize(static_cast<std::size_t>(stop - from), 1);
        else mask.insert(mask.end(), vis.begin() + (start - c.first), vis.begin() + (stop - c.first));
        return mask.data();
      };

      // The rows whose window holds every kept key (all of them without a window, or while the
      // keys fit in it): one causal call, from the first kept slot's strip. With the cache at
      // slot 0 (always, until a window drops keys) it is the unbounded cache's call.
      Index rows = n;
      if (window_) {
        const std::vector<Index>& starts = starts_[static_cast<std::size_t>(kv)];
        rows = std::find_if(starts.begin(), starts.end(), [&](Index s) { return s != c.first; }) - starts.begin();
      }
      if (rows > 0) {
        const Index from = c.first - c.first % kStrip, stop = end + rows;
        AttentionOptions oh = o;
        oh.key_mask = mask_of(from, c.first, stop);
        detail::exact_attention(q.topRows(rows), keys(from, stop), values(from, stop), out.topRows(rows), oh);
      }
      if (rows == n) return;
      // The other rows one at a time, each on its own window of keys, from the strip of its first.
      const std::vector<Index>& starts = starts_[static_cast<std::size_t>(kv)];
      const float scale = static_cast<float>(resolve_scale(o, d));
      detail::ExactScratch scratch;
      for (Index i = rows; i < n; ++i) {
        const Index start = starts[static_cast<std::size_t>(i)], from = start - start % kStrip, stop = end + i + 1;
        const std::uint8_t* m = mask_of(from, start, stop);
        const detail::Visibility visible{false, 0, m, detail::first_attending_key(m, stop - from)};
        detail::exact_query_block(q, keys(from, stop), values(from, stop), scale, visible, i, 1, out, scratch);
      }
      detail::check_result(out, "q, k, v");
    };
    const Index seen = caches_[0].count + n;
    const Index visible = window_ ? std::min(seen, window_) : seen;
    const double head_work = static_cast<double>(n * visible * (d + dv));
    const int threads = threads_for_parts(g.query_heads, head_work);
    // Heads not split among threads run in turn, each one's query blocks on the threads the whole
    // append is worth: a prefill takes them all, a decode step none.
    const ThreadLimit limit(threads > 1 ? threads : threads_for_work(static_cast<double>(g.query_heads) * head_work));
    if (threads == 1) {
      for (Index h = 0; h < g.query_heads; ++h) run_head(h);
    } else {
      parallel_for(g.query_heads, run_head);
    }
  }

  // The new unmasked positions join each cache (masked keys are absent for good); with a window,
  // the oldest leave it beyond `window` kept ones.
  void commit(const AppendInput& in) override {
    const Index n = in.n, d = in.d, dv = in.dv;
    for (Index kv = 0; kv < in.groups.kv_heads; ++kv) {
      KeyValueCache& c = caches_[static_cast<std::size_t>(kv)];
      const std::uint8_t* m = in.mask(kv);
      const Index end = c.first + c.count;
      Index kept = end;
      for (Index j = 0; j < n; ++j) {
        if (m && !m[j]) continue;
        if (kept != end + j) {
          kernel::move_packed_key(c.keys.data(), d, end + j, kept);
          std::memmove(c.values.data() + kept * dv, c.values.data() + (end + j) * dv, sizeof(float) * dv);
        }
        ++kept;
      }
      c.count = kept - c.first;
      if (window_ && c.count > window_) c.first += c.count - window_, c.count = window_;
    }
    std::vector<std::vector<std::uint8_t>>().swap(visible_);
    std::vector<std::vector<Index>>().swap(starts_);
  }

  // The slots past each cache's kept ones never counted.
  void rollback(const AppendInput& in) override {
    if (in.first) std::vector<KeyValueCache>().swap(caches_);
    std::vector<std::vector<std::uint8_t>>().swap(visible_);
    std::vector<std::vector<Index>>().swap(starts_);
  }

  std::size_t state_bytes() override {
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
  Index window_;  // 0: unbounded
  std::vector<KeyValueCache> caches_;
  std::vector<std::vector<std::uint8_t>> visible_;  // an append's: each head's key mask over its kept and new keys
  std::vector<std::vector<Index>> starts_;          // an append's, windowed: each head's window_starts
};

}  // namespace

std::unique_ptr<StateImpl> make_kv_cache_state(std::optional<double> scale, Index window) {
  return std::make_unique<KvCacheState>(scale, window);
}

}  // namespace favor
