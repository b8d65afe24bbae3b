#include "favor/causal_state.hpp"

#include <utility>

#include "favor/error.hpp"
#include "favor/features/factored.hpp"
#include "favor/tensor/factored_state.hpp"
#include "favor/tensor/kv_cache_state.hpp"
#include "favor/tensor/shape.hpp"
#include "favor/tensor/state_transaction.hpp"
#include "favor/tensor/windowed_state.hpp"

namespace favor {

StateMethod parse_state_method(const std::string& name, const std::string& argument) {
  if (name == "exact") return StateMethod::exact;
  if (name == "favor") return StateMethod::favor;
  if (name == "codebook") return StateMethod::codebook;
  throw_range(argument, "expected 'exact', 'favor' or 'codebook', got '" + name + "'");
}

struct CausalState::Impl {
  StateMethod method;
  std::unique_ptr<FeatureMap> map;
  std::vector<ScaledCodebook> books;  // codebook: one per key/value head, or one for all
  std::vector<Index> codebook_dims;  // as given

  bool started = false;
  std::vector<Index> q_dims, k_dims, v_dims;  // with n = 1: the dims every append must have
  Index length = 0;
  std::unique_ptr<StateImpl> state;  // the heads: a key/value cache (exact) or factored states
};

CausalState::CausalState(const CausalStateOptions& o) : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  s.method = o.method;
  if (o.scale && !(std::isfinite(*o.scale) && *o.scale > 0.0))
    throw_range("scale", "expected a finite number > 0, got " + std::to_string(*o.scale));
  if (o.chunk < 0) throw_range("chunk", "expected an integer >= 1 (or 0 for the default)");
  if (o.window < 0) throw_range("window", "expected an integer >= 1 (or 0 for no window), got " + std::to_string(o.window));
  if (o.window != 0 && o.method == StateMethod::codebook)
    throw_type("window", "not an option of method 'codebook' (a sliding window is for methods 'exact' and 'favor')");
  if (o.method == StateMethod::favor && o.window % 4 != 0)
    throw_range("window", "FAVOR+'s window is in blocks of window / 4 positions: expected a multiple of 4, got " +
                              std::to_string(o.window));
  if (o.method == StateMethod::favor) {
    if (!o.map) throw_type("featureMap", "required for method 'favor'");
    if (!o.map->data_independent()) throw_range("featureMap", data_dependent_state_message(*o.map));
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
  if (o.method == StateMethod::exact) {
    s.state = make_kv_cache_state(o.scale, o.window);
  } else {
    FactoredMethod m;
    m.map = s.map.get();
    m.books = &s.books;
    m.scale = o.scale;
    m.chunk = o.chunk;
    m.assignment = o.assignment;
    m.temperature = o.temperature;
    s.state = o.window ? make_windowed_state(m, o.window) : make_factored_state(m);
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
  if (s.map) floats += 2 * static_cast<std::size_t>(s.map->projection().size());  // W and its packed copy
  for (const ScaledCodebook& b : s.books)
    floats += static_cast<std::size_t>(b.codebook.size() + b.half_sq.size()) + b.packed.size();
  return s.state->state_bytes() + 4 * floats;
}

void CausalState::reset() {
  Impl& s = *impl_;
  s.started = false;
  s.length = 0;
  s.q_dims.clear(), s.k_dims.clear(), s.v_dims.clear();
  s.state->reset();
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
  const Index n = q.dims[q.dims.size() - 2];
  // The dims the first append fixes, made before it runs: nothing can fail once it has committed.
  std::vector<Index> q1, k1, v1;
  if (!s.started) q1 = with_rows(q.dims, 1), k1 = with_rows(k.dims, 1), v1 = with_rows(v.dims, 1);
  append_transaction(*s.state, AppendInput{q, k, v, out, g, masks, n, q.dims.back(), v.dims.back(), !s.started});
  if (!s.started) {
    s.q_dims = std::move(q1), s.k_dims = std::move(k1), s.v_dims = std::move(v1);
    s.started = true;
  }
  s.length += n;
}

}  // namespace favor
