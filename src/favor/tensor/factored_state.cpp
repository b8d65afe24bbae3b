#include "favor/tensor/factored_state.hpp"

#include <algorithm>
#include <utility>

#include "favor/engine/factored_attention.hpp"
#include "favor/parallel.hpp"
#include "favor/threads/thread_plan.hpp"
#include "favor/tensor/work.hpp"
#include "favor/engine/prefix_state.hpp"
#include "favor/tensor.hpp"

namespace favor {

namespace {

// Rows (query and key rows of every head) up to which a FAVOR+ append makes the features of all
// its heads in one product: a decoding step's rows (8 heads: 16) then share one pass over W in
// full register tiles, instead of a product of one row per head and side. Beyond it (a prefill)
// they are made block by block, so that their memory stays O(chunk).
constexpr Index kStackedFeatureRows = 128;

// An append's key/value heads split among threads: `count` parts of `per_part` heads (the last
// may have fewer, or none), on `threads` of the pool's threads (parallel when more than 1). One
// part (a single key/value head, or heads not worth a thread each) runs on the caller, its inner
// loops on the threads the whole append is worth (`inner`): a prefill takes them all, a small
// step none.
struct Parts {
  int threads = 1, inner = 1;
  Index count = 1, per_part = 0, heads = 0;

  std::pair<Index, Index> heads_of(Index part) const {  // [kv0, kv1)
    const Index kv0 = part * per_part;
    return {kv0, std::min(heads, kv0 + per_part)};
  }
  template <class F>
  void each(const F& fn) const {
    const ThreadLimit limit(threads > 1 ? threads : inner);
    if (threads == 1) return fn(0);
    parallel_for(count, fn);
  }
};

class FactoredState final : public StateImpl {
 public:
  explicit FactoredState(const FactoredMethod& method) : method_(method) {}

  // A step per head (StateStep): the carried states change for good only at commit().
  void prepare(const AppendInput& in) override {
    const HeadGroups& g = in.groups;
    const Index M = method_.map ? method_.map->num_features() : (*method_.books)[0].codebook.rows();
    group_rows_ = (g.group() + 1) * in.n;
    const double dv = static_cast<double>(in.dv);
    const double head_work = method_.map ? favor_work(*method_.map, group_rows_, dv)
                                         : factored_work(group_rows_, M, static_cast<double>(in.d), dv);
    parts_.threads = threads_for_parts(g.kv_heads, head_work);
    parts_.inner = threads_for_work(static_cast<double>(g.kv_heads) * head_work);
    parts_.count = parts_.threads > 1 ? std::min<Index>(g.kv_heads, parts_.threads) : 1;
    parts_.per_part = (g.kv_heads + parts_.count - 1) / parts_.count;
    parts_.heads = g.kv_heads;
    // Small FAVOR+ appends: the features of every head's query and key rows in one product per
    // part, rows stacked by key/value head (its query heads', then its keys), as favor_attention
    // takes them.
    const bool stack = method_.map && method_.map->symmetric() && g.kv_heads * group_rows_ <= kStackedFeatureRows;
    stacked_.resize(stack ? static_cast<std::size_t>(parts_.count) : 0);
    if (in.first) states_.assign(static_cast<std::size_t>(g.kv_heads), empty_prefix_state(M, in.dv));
    steps_ = std::vector<StateStep>(states_.begin(), states_.end());
  }

  // Each part its features (or the lender's), then its heads, each head's previous step committed
  // first.
  void run(const AppendInput& in) override {
    const FactoredState* lender = std::exchange(lender_, nullptr);
    const bool borrowed = lender && !stacked_.empty() && lender->stacked_.size() == stacked_.size();
    const std::vector<FactoredFeatures>& features = borrowed ? lender->stacked_ : stacked_;
    parts_.each([&](Index part) {
      if (!stacked_.empty() && !borrowed) stack_features(in, part);
      const auto [kv0, kv1] = parts_.heads_of(part);
      for (Index kv = kv0; kv < kv1; ++kv) {
        commit_deferred(kv);
        run_head(in, kv, features);
      }
    });
  }

  void lend_features_to(FactoredState& borrower) const { borrower.lender_ = this; }

  // Commits cannot fail (they add what each head computed to its state), and they are deferred:
  // each head's is made where its state is next used, by the next append's run on the thread that
  // runs the head (as a rule the one that ran this step). Committed in a region of their own, a
  // decode step took two regions, a fork and a join of every thread each; committed here, on
  // this thread, the helpers' blocks went to this thread's cache of freed blocks (the pthreads
  // build's), and the helpers' next allocations missed theirs and took dlmalloc's lock (16-35
  // a step at 8-16 heads). The append counts from here on: the deferred commits are its own.
  void commit(const AppendInput&) override {
    deferred_.swap(steps_);
    std::vector<StateStep>().swap(steps_);
  }

  // The previous append's commits first, of the heads this one did not reach (all of them when
  // prepare() failed): this one's steps undo only what they did after them.
  void rollback(const AppendInput& in) override {
    const Index heads = static_cast<Index>(std::max(steps_.size(), deferred_.size()));
    for (Index kv = 0; kv < heads; ++kv) {
      commit_deferred(kv);
      if (kv < static_cast<Index>(steps_.size())) steps_[static_cast<std::size_t>(kv)].rollback();
    }
    std::vector<StateStep>().swap(deferred_);
    if (in.first) states_.clear();
    std::vector<FactoredFeatures>().swap(stacked_);
    std::vector<StateStep>().swap(steps_);
  }

  std::size_t state_bytes() override {
    for (Index kv = 0; kv < static_cast<Index>(deferred_.size()); ++kv) commit_deferred(kv);
    std::size_t floats = 0;
    for (const PrefixState& p : states_)
      floats += static_cast<std::size_t>(p.kv.size() + p.k_sum.size() + p.shift.size() + p.pending_kf.size() +
                                         p.pending_v.size());
    return 4 * floats;
  }

  void reset() override {
    std::vector<StateStep>().swap(deferred_);
    states_.clear();
    states_.shrink_to_fit();
  }

  // An independent copy between appends, the deferred commits made first.
  std::unique_ptr<FactoredState> clone() {
    auto copy = std::make_unique<FactoredState>(method_);
    copy->states_ = committed();
    return copy;
  }

  // The sum of the parts' keys, in order (merged_factored_state).
  static std::unique_ptr<StateImpl> merged(const std::vector<FactoredState*>& parts) {
    auto sum = std::make_unique<FactoredState>(parts[0]->method_);
    for (FactoredState* p : parts) p->committed();
    for (std::size_t kv = 0; kv < parts[0]->states_.size(); ++kv) {
      std::vector<const PrefixState*> heads;
      for (const FactoredState* p : parts) heads.push_back(&p->states_[kv]);
      sum->states_.push_back(summed_states(heads));
    }
    return sum;
  }

 private:
  // The per-head states, the deferred commits made first.
  const std::vector<PrefixState>& committed() {
    for (Index kv = 0; kv < static_cast<Index>(deferred_.size()); ++kv) commit_deferred(kv);
    std::vector<StateStep>().swap(deferred_);
    return states_;
  }

  void stack_features(const AppendInput& in, Index part) {
    const HeadGroups& g = in.groups;
    const Index n = in.n;
    const auto [kv0, kv1] = parts_.heads_of(part);
    if (kv0 >= kv1) return;
    Matrix x((kv1 - kv0) * group_rows_, in.d);
    for (Index kv = kv0; kv < kv1; ++kv) {
      const Index row0 = (kv - kv0) * group_rows_, first = g.first_query_head(kv);
      for (Index i = 0; i < g.group(); ++i) x.middleRows(row0 + i * n, n) = in.q_head(first + i);
      x.middleRows(row0 + g.group() * n, n) = in.k_head(kv);
    }
    AttentionOptions o;
    o.scale = method_.scale;
    stacked_[static_cast<std::size_t>(part)] = favor_factors(*method_.map, x, o);
  }

  void run_head(const AppendInput& in, Index kv, const std::vector<FactoredFeatures>& features) {
    const auto [qs, outs] = query_group(in.groups, kv, in.q, in.out);
    StateStep* step = &steps_[static_cast<std::size_t>(kv)];
    if (method_.map) {
      FavorOptions o;
      o.causal = true;
      o.scale = method_.scale;
      o.chunk = method_.chunk;
      o.key_mask = in.mask(kv);
      const Index part = kv / parts_.per_part;
      favor_attention(*method_.map, qs, in.k_head(kv), in.v_head(kv), outs, o, step,
                      features.empty() ? nullptr : &features[static_cast<std::size_t>(part)],
                      (kv - part * parts_.per_part) * group_rows_);
    } else {
      CodebookOptions o;
      o.causal = true;
      o.scale = method_.scale;
      o.chunk = method_.chunk;
      o.key_mask = in.mask(kv);
      o.assignment = method_.assignment;
      o.temperature = method_.temperature;
      const std::vector<ScaledCodebook>& books = *method_.books;
      codebook_attention(books[books.size() > 1 ? static_cast<std::size_t>(kv) : 0], qs, in.k_head(kv),
                         in.v_head(kv), outs, o, step);
    }
  }

  // Head kv's step of the last append, if it has not been committed yet (a second commit of a
  // step does nothing).
  void commit_deferred(Index kv) {
    if (kv < static_cast<Index>(deferred_.size())) deferred_[static_cast<std::size_t>(kv)].commit();
  }

  FactoredMethod method_;
  std::vector<PrefixState> states_;
  std::vector<StateStep> deferred_;  // the last append's steps, committed head by head (commit())
  // An append's:
  std::vector<StateStep> steps_;
  Parts parts_;
  Index group_rows_ = 0;                   // the query and key rows of a key/value head
  std::vector<FactoredFeatures> stacked_;  // per part, when its features are made in one product
  const FactoredState* lender_ = nullptr;  // whose stacked_ the next run reads (lend_features)
};

}  // namespace

std::unique_ptr<StateImpl> make_factored_state(const FactoredMethod& method) {
  return std::make_unique<FactoredState>(method);
}

std::unique_ptr<StateImpl> clone_factored_state(StateImpl& state) {
  return static_cast<FactoredState&>(state).clone();
}

std::unique_ptr<StateImpl> merged_factored_state(const std::vector<StateImpl*>& parts) {
  std::vector<FactoredState*> states;
  for (StateImpl* p : parts) states.push_back(static_cast<FactoredState*>(p));
  return FactoredState::merged(states);
}

void lend_features(const StateImpl& lender, StateImpl& borrower) {
  static_cast<const FactoredState&>(lender).lend_features_to(static_cast<FactoredState&>(borrower));
}

}  // namespace favor
