#include "favor/causal_state.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

#include "favor/error.hpp"
#include "favor/exact_attention.hpp"
#include "favor/engine/exact_block.hpp"
#include "favor/kernels/gemm.hpp"
#include "favor/parallel.hpp"
#include "favor/tensor/shape.hpp"
#include "favor/tensor/head_groups.hpp"
#include "favor/engine/factored_attention.hpp"
#include "favor/engine/codebook_state.hpp"

namespace favor {

StateMethod parse_state_method(const std::string& name, const std::string& argument) {
  if (name == "exact") return StateMethod::exact;
  if (name == "favor") return StateMethod::favor;
  if (name == "codebook") return StateMethod::codebook;
  throw_range(argument, "expected 'exact', 'favor' or 'codebook', got '" + name + "'");
}

namespace {

// One key/value head's cache of exact attention: positions [0, count) of keys (d) and values
// (dv), in buffers of `capacity` positions that grow by doubling. Keys are kept in packed strips
// (kernel::Keys), so that a decode step reads them straight into the score GEMM.
struct KeyValueCache {
  FloatBuffer keys, values;
  Index count = 0, capacity = 0;  // capacity: a whole number of strips
};

// Multiply-adds per key/value head (rows x M x (d + dv), rows = new queries and keys) from which a
// FAVOR+ or codebook append runs its heads in parallel: below it a head's work is shorter than
// handing it to another thread. On 2 threads, decoding 8 heads of one query per key/value head
// ran at 0.5-0.9x the single-thread rate at 1,024-4,096 multiply-adds, 1.04x at 8,192, 1.36x at
// 32,768 and 1.43x at 65,536 (M = 256, d = dv = 64); Node 22, relaxed build.
constexpr Index kParallelHeadWork = 16384;

// Rows (query and key rows of every head) up to which a FAVOR+ append makes the features of all
// its heads in one product: a decoding step's rows (8 heads: 16) then share one pass over W in
// full register tiles, instead of a product of one row per head and side. Beyond it (a prefill)
// they are made block by block, so that their memory stays O(chunk).
constexpr Index kStackedFeatureRows = 128;

// Positions rounded up to whole strips, and the floats of that many packed keys.
Index whole_strips(Index positions) { return gemm::strips(positions) * kernel::kStrip; }
Index key_floats(Index positions, Index d) { return whole_strips(positions) * d; }

}  // namespace

struct CausalState::Impl {
  StateMethod method;
  std::optional<double> scale;
  Index chunk;
  std::unique_ptr<FeatureMap> map;
  std::vector<ScaledCodebook> books;  // codebook: one per key/value head, or one for all
  std::vector<Index> codebook_dims;  // as given
  Assignment assignment;
  double temperature;

  bool started = false;
  std::vector<Index> q_dims, k_dims, v_dims;  // with n = 1: the dims every append must have
  HeadGroups groups;
  Index length = 0;
  std::vector<KeyValueCache> caches;  // exact
  std::vector<PrefixState> states;    // favor, codebook

  Index d() const { return k_dims.back(); }
  Index dv() const { return v_dims.back(); }
};

CausalState::CausalState(const CausalStateOptions& o) : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  s.method = o.method;
  if (o.scale && !(std::isfinite(*o.scale) && *o.scale > 0.0))
    throw_range("scale", "expected a finite number > 0, got " + std::to_string(*o.scale));
  s.scale = o.scale;
  if (o.chunk < 0) throw_range("chunk", "expected an integer >= 1 (or 0 for the default)");
  s.chunk = o.chunk;
  s.assignment = o.assignment;
  s.temperature = o.temperature;
  if (o.method == StateMethod::favor) {
    if (!o.map) throw_type("featureMap", "required for method 'favor'");
    if (!o.map->data_independent())
      throw_range("featureMap", "an 'oprf' map without a fixed rho cannot carry a causal state: its parameters "
                                "would depend on keys not seen yet; create it with a rho");
    s.map = std::make_unique<FeatureMap>(*o.map);
  }
  if (o.method == StateMethod::codebook) {
    if (!o.codebook.data) throw_type("codebook", "required for method 'codebook'");
    check_rank(o.codebook.dims, "codebook", "[c, d] or [..., c, d]");
    check_values(o.codebook, "codebook");
    if (!std::isfinite(o.temperature) || o.temperature <= 0.0)
      throw_range("temperature", "expected a finite number > 0, got " + std::to_string(o.temperature));
    const Index c = o.codebook.dims[o.codebook.dims.size() - 2], d = o.codebook.dims.back();
    const Eigen::Map<const Matrix> all(o.codebook.data, heads(o.codebook.dims) * c, d);
    AttentionOptions scaled;
    scaled.scale = o.scale;
    for (Index b = 0; b < heads(o.codebook.dims); ++b)
      s.books.emplace_back(all.middleRows(b * c, c), resolve_scale(scaled, d));
    if (s.books.empty()) throw_range("codebook", "expected at least one codebook, got dims " + dims_string(o.codebook.dims));
    s.codebook_dims = o.codebook.dims;
  }
}

CausalState::~CausalState() = default;
CausalState::CausalState(CausalState&&) noexcept = default;
CausalState& CausalState::operator=(CausalState&&) noexcept = default;

StateMethod CausalState::method() const { return impl_->method; }
Index CausalState::length() const { return impl_->length; }

std::size_t CausalState::state_bytes() const {
  const Impl& s = *impl_;
  std::size_t floats = 0;
  for (const KeyValueCache& c : s.caches) floats += c.keys.capacity() + c.values.capacity();
  for (const PrefixState& p : s.states)
    floats += static_cast<std::size_t>(p.kv.size() + p.k_sum.size() + p.shift.size() + p.pending_kf.size() + p.pending_v.size());
  if (s.map) floats += 2 * static_cast<std::size_t>(s.map->projection().size());  // W and its packed copy
  for (const ScaledCodebook& b : s.books)
    floats += static_cast<std::size_t>(b.codebook.size() + b.half_sq.size()) + b.packed.size();
  return 4 * floats;
}

void CausalState::reset() {
  Impl& s = *impl_;
  s.started = false;
  s.length = 0;
  s.q_dims.clear(), s.k_dims.clear(), s.v_dims.clear();
  s.caches.clear();
  s.caches.shrink_to_fit();
  s.states.clear();
  s.states.shrink_to_fit();
}

namespace {

std::vector<Index> with_rows(std::vector<Index> dims, Index rows) {
  dims[dims.size() - 2] = rows;
  return dims;
}

}  // namespace

std::vector<Index> CausalState::append_dims(const std::vector<Index>& q, const std::vector<Index>& k,
                                            const std::vector<Index>& v) const {
  const Impl& s = *impl_;
  const std::vector<Index> out = attention_output_dims(q, k, v, true);
  const Index n = q[q.size() - 2];
  if (k[k.size() - 2] != n)
    throw_range("k", "expected as many new keys as new queries (n = " + std::to_string(n) + "), got " + dims_string(k));
  if (s.started) {
    if (with_rows(q, 1) != s.q_dims)
      throw_range("q", "expected dims " + dims_string(with_rows(s.q_dims, n)) +
                           " (the leading dims and d fixed by the first append), got " + dims_string(q));
    if (with_rows(k, 1) != s.k_dims)
      throw_range("k", "expected dims " + dims_string(with_rows(s.k_dims, n)) +
                           " (the leading dims and d fixed by the first append), got " + dims_string(k));
    if (with_rows(v, 1) != s.v_dims)
      throw_range("v", "expected dims " + dims_string(with_rows(s.v_dims, n)) +
                           " (the leading dims and dv fixed by the first append), got " + dims_string(v));
  }
  if (s.map && q.back() != s.map->dim())
    throw_range("q", "expected last dim d = " + std::to_string(s.map->dim()) + " (the feature map's dim), got " +
                         dims_string(q));
  if (s.method == StateMethod::codebook) {
    const std::vector<Index>& c = s.codebook_dims;
    if (c.back() != q.back())
      throw_range("codebook", "expected last dim d = " + std::to_string(q.back()) + " (as q), got " + dims_string(c));
    if (c.size() > 2 && leading(c) != leading(k))
      throw_range("codebook", "leading dims " + dims_string(leading(c)) + " do not match k's " +
                                  dims_string(leading(k)) + ": a causal state takes one codebook per key/value "
                                  "head ([..., Hkv, c, d]) or one for all ([c, d])");
  }
  return out;
}

void CausalState::append(const ConstTensorView& q, const ConstTensorView& k, const ConstTensorView& v,
                         const TensorView& out, const ConstMaskView& key_mask) {
  Impl& s = *impl_;
  const std::vector<Index> dims = append_dims(q.dims, k.dims, v.dims);
  if (!out.data || out.dims != dims) throw_range("out", "expected dims " + dims_string(dims));
  const HeadGroups g = head_groups(q.dims, k.dims);
  const auto masks = key_mask_rows(key_mask, k.dims);
  check_values(q, "q"), check_values(k, "k"), check_values(v, "v");
  const Index n = q.dims[q.dims.size() - 2], d = q.dims.back(), dv = v.dims.back();
  const auto head = [](auto* data, const std::vector<Index>& t, Index h) {
    const Index rows = t[t.size() - 2], cols = t.back();
    return std::pair{data + h * rows * cols, std::pair{rows, cols}};
  };
  const auto qhead = [&](Index h) { const auto [p, rc] = head(q.data, q.dims, h); return Eigen::Map<const Matrix>(p, rc.first, rc.second); };
  const auto khead = [&](Index h) { const auto [p, rc] = head(k.data, k.dims, h); return Eigen::Map<const Matrix>(p, rc.first, rc.second); };
  const auto vhead = [&](Index h) { const auto [p, rc] = head(v.data, v.dims, h); return Eigen::Map<const Matrix>(p, rc.first, rc.second); };
  const auto mask_of = [&](Index kv) { return masks.empty() ? nullptr : masks[static_cast<std::size_t>(kv)]; };

  if (s.method == StateMethod::exact) {
    // Room for the new rows in every head first (the only allocation that can fail), written past
    // each cache's count: nothing counts until every head is done.
    std::vector<KeyValueCache> caches = s.started ? std::move(s.caches) : std::vector<KeyValueCache>(static_cast<std::size_t>(g.kv_heads));
    try {
      for (KeyValueCache& c : caches) {
        if (c.count + n <= c.capacity) continue;
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
      std::vector<std::vector<std::uint8_t>> visible(static_cast<std::size_t>(g.kv_heads));
      for (Index kv = 0; kv < g.kv_heads; ++kv) {
        KeyValueCache& c = caches[static_cast<std::size_t>(kv)];
        for (Index j = 0; j < n; ++j) kernel::put_packed_key(c.keys.data(), d, c.count + j, khead(kv).data() + j * d);
        std::copy_n(vhead(kv).data(), n * dv, c.values.data() + c.count * dv);
        if (const std::uint8_t* m = mask_of(kv)) {
          std::vector<std::uint8_t>& vis = visible[static_cast<std::size_t>(kv)];
          vis.assign(static_cast<std::size_t>(c.count), 1);
          vis.insert(vis.end(), m, m + n);
        }
      }
      AttentionOptions o;
      o.causal = true;
      o.scale = s.scale;
      const auto run = [&](Index h) {
        const Index kv = g.kv_of(h);
        const KeyValueCache& c = caches[static_cast<std::size_t>(kv)];
        AttentionOptions oh = o;
        if (!visible[static_cast<std::size_t>(kv)].empty()) oh.key_mask = visible[static_cast<std::size_t>(kv)].data();
        detail::exact_attention(qhead(h), kernel::Keys::packed(c.keys.data(), c.count + n, d),
                                Eigen::Map<const Matrix>(c.values.data(), c.count + n, dv),
                                Eigen::Map<Matrix>(out.data + h * n * dv, n, dv), oh);
      };
      if (g.query_heads >= max_threads()) parallel_for(g.query_heads, run);
      else for (Index h = 0; h < g.query_heads; ++h) run(h);
    } catch (...) {
      if (s.started) s.caches = std::move(caches);  // the rows past each count never counted
      throw;
    }
    // Commit: the new unmasked rows join each cache (masked keys are absent for good).
    for (Index kv = 0; kv < g.kv_heads; ++kv) {
      KeyValueCache& c = caches[static_cast<std::size_t>(kv)];
      const std::uint8_t* m = mask_of(kv);
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
    s.caches = std::move(caches);
  } else {
    const Index M = s.method == StateMethod::favor ? s.map->num_features() : s.books[0].codebook.rows();
    if (!s.started) s.states.assign(static_cast<std::size_t>(g.kv_heads), empty_prefix_state(M, dv));
    // The new states count only once every head has succeeded (StateStep).
    std::vector<StateStep> steps(s.states.begin(), s.states.end());
    const Index group_rows = (g.group() + 1) * n;  // the query and key rows of a key/value head
    const bool parallel = g.kv_heads >= max_threads() && group_rows * M * (d + dv) >= kParallelHeadWork;
    // Small FAVOR+ appends: the features of every head's query and key rows in one product per
    // thread that runs heads, rows stacked by key/value head (its query heads', then its keys), as
    // favor_attention takes them.
    const bool stack = s.method == StateMethod::favor && g.kv_heads * group_rows <= kStackedFeatureRows;
    const Index parts = parallel ? std::min<Index>(g.kv_heads, max_threads()) : 1;
    const Index per_part = (g.kv_heads + parts - 1) / parts;
    // The key/value heads [kv0, kv1) of a part, and fn(part) for every part (on the pool's threads
    // when parallel).
    const auto heads_of = [&](Index part) {
      const Index kv0 = part * per_part;
      return std::pair<Index, Index>{kv0, std::min(g.kv_heads, kv0 + per_part)};
    };
    const auto each_part = [&](const auto& fn) {
      if (parallel) parallel_for(parts, fn);
      else fn(0);
    };
    std::vector<FactoredFeatures> stacked(stack ? static_cast<std::size_t>(parts) : 0);
    const auto stack_features = [&](Index part) {
      const auto [kv0, kv1] = heads_of(part);
      if (kv0 >= kv1) return;
      Matrix x((kv1 - kv0) * group_rows, d);
      for (Index kv = kv0; kv < kv1; ++kv) {
        const Index row0 = (kv - kv0) * group_rows, first = g.first_query_head(kv);
        for (Index i = 0; i < g.group(); ++i) x.middleRows(row0 + i * n, n) = qhead(first + i);
        x.middleRows(row0 + g.group() * n, n) = khead(kv);
      }
      AttentionOptions o;
      o.scale = s.scale;
      stacked[static_cast<std::size_t>(part)] = favor_factors(*s.map, x, o);
    };
    const auto run = [&](Index kv) {
      const auto [qs, outs] = query_group(g, kv, q, out);
      StateStep* step = &steps[static_cast<std::size_t>(kv)];
      if (s.method == StateMethod::favor) {
        FavorOptions o;
        o.causal = true;
        o.scale = s.scale;
        o.chunk = s.chunk;
        o.key_mask = mask_of(kv);
        const Index part = kv / per_part;
        favor_attention(*s.map, qs, khead(kv), vhead(kv), outs, o, step, stack ? &stacked[static_cast<std::size_t>(part)] : nullptr,
                        (kv - part * per_part) * group_rows);
      } else {
        CodebookOptions o;
        o.causal = true;
        o.scale = s.scale;
        o.chunk = s.chunk;
        o.key_mask = mask_of(kv);
        o.assignment = s.assignment;
        o.temperature = s.temperature;
        codebook_attention(s.books[static_cast<std::size_t>(s.codebook_dims.size() > 2 ? kv : 0)], qs, khead(kv),
                           vhead(kv), outs, o, step);
      }
    };
    // Each part its features, then its heads.
    const auto run_part = [&](Index part) {
      if (stack) stack_features(part);
      const auto [kv0, kv1] = heads_of(part);
      for (Index kv = kv0; kv < kv1; ++kv) run(kv);
    };
    try {
      each_part(run_part);
    } catch (...) {
      for (StateStep& step : steps) step.rollback();
      if (!s.started) s.states.clear();
      throw;
    }
    // Commits cannot fail (they add what each head computed to its state). Each part commits its
    // heads in a second region, so on the thread that ran them as a rule: a commit frees what its
    // step allocated, and the pthreads build's caches of freed blocks serve the thread that frees.
    // Committed on this thread, the helpers' blocks went to this thread's cache, and the helpers'
    // next allocations missed theirs and went through dlmalloc's lock (16-35 a step at 8-16 heads).
    each_part([&](Index part) {
      const auto [kv0, kv1] = heads_of(part);
      for (Index kv = kv0; kv < kv1; ++kv) steps[static_cast<std::size_t>(kv)].commit();
      if (stack) stacked[static_cast<std::size_t>(part)] = FactoredFeatures{};
    });
  }
  if (!s.started) {
    s.q_dims = with_rows(q.dims, 1), s.k_dims = with_rows(k.dims, 1), s.v_dims = with_rows(v.dims, 1);
    s.groups = g;
    s.started = true;
  }
  s.length += n;
}

}  // namespace favor
