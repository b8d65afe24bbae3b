#include "favor/tensor/windowed_state.hpp"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "favor/tensor/shape.hpp"

namespace favor {

namespace {

constexpr Index kBlocks = 4;  // blocks per window

// The states of the last block starts, oldest first (kBlocks at most, one more while an append
// starts a block). Shared: an append that stays in one block runs on the states themselves (each
// rolls back on its own if the append fails).
using Ring = std::vector<std::shared_ptr<StateImpl>>;

// Rows [a, a + s) of each head of a [..., rows, cols] tensor, as a tensor of their own (copied
// from `from`, or uninitialized for an output).
struct Rows {
  std::vector<float> data;
  std::vector<Index> dims;

  Rows(const float* from, const std::vector<Index>& whole, Index a, Index s) : dims(whole) {
    const Index rows = whole[whole.size() - 2], cols = whole.back(), h = heads(whole);
    dims[dims.size() - 2] = s;
    data.resize(static_cast<std::size_t>(h * s * cols));
    if (from)
      for (Index i = 0; i < h; ++i) std::copy_n(from + (i * rows + a) * cols, s * cols, data.data() + i * s * cols);
  }
  ConstTensorView view() const { return {data.data(), dims}; }
  TensorView view() { return {data.data(), dims}; }
  // Back into rows [a, a + s) of each head of `whole`.
  void copy_to(const TensorView& whole, Index a) const {
    const Index rows = whole.dims[whole.dims.size() - 2], cols = whole.dims.back(), s = dims[dims.size() - 2];
    for (Index i = 0; i < heads(dims); ++i)
      std::copy_n(data.data() + i * s * cols, s * cols, whole.data + (i * rows + a) * cols);
  }
};

class WindowedState final : public StateImpl {
 public:
  WindowedState(const FactoredMethod& method, Index window) : method_(method), block_(window / kBlocks) {
    live_.reserve(kBlocks + 1), next_.reserve(kBlocks + 1);  // the same memory at every step
  }

  // An append that reaches a second block runs on copies of the states, which replace them at
  // commit: its first block's piece commits to them before the next piece can run.
  void prepare(const AppendInput& in) override {
    next_.clear();
    for (const auto& s : live_) next_.push_back(in_one_block(in.n) ? s : std::shared_ptr<StateImpl>(clone_factored_state(*s)));
  }

  void run(const AppendInput& in) override {
    if (in_one_block(in.n)) return append_piece(next_, length_, in);
    std::vector<const std::uint8_t*> masks(in.masks.size());
    for (Index a = 0; a < in.n;) {
      const Index s = std::min(in.n - a, block_ - (length_ + a) % block_);
      const Rows q(in.q.data, in.q.dims, a, s), k(in.k.data, in.k.dims, a, s), v(in.v.data, in.v.dims, a, s);
      Rows out(nullptr, in.out.dims, a, s);
      for (std::size_t i = 0; i < masks.size(); ++i) masks[i] = in.masks[i] ? in.masks[i] + a : nullptr;
      const ConstTensorView qv = q.view(), kv = k.view(), vv = v.view();
      const TensorView ov = out.view();
      append_piece(next_, length_ + a, AppendInput{qv, kv, vv, ov, in.groups, masks, s, in.d, in.dv, false});
      out.copy_to(in.out, a);
      a += s;
    }
  }

  void commit(const AppendInput& in) override {
    live_.swap(next_);
    next_.clear();
    length_ += in.n;
  }

  void rollback(const AppendInput&) override { next_.clear(); }

  std::size_t state_bytes() override {
    std::size_t bytes = 0;
    for (const auto& s : live_) bytes += s->state_bytes();
    return bytes;
  }

  void reset() override {
    live_.clear(), next_.clear();  // (their room kept)
    length_ = 0;
  }

 private:
  // Positions [position, position + in.n), all in one block, appended to every state of the
  // ring (a new one first at a block's start, the oldest beyond kBlocks dropped): the oldest
  // writes the outputs, and the others read its features of the rows. Every state is prepared
  // and run before any commits; on an error those reached roll back, and the states are as they
  // were.
  void append_piece(Ring& ring, Index position, const AppendInput& in) {
    if (position % block_ == 0) {
      ring.push_back(make_factored_state(method_));
      if (static_cast<Index>(ring.size()) > kBlocks) ring.erase(ring.begin());
    }
    std::vector<float> scratch;
    if (ring.size() > 1) scratch.resize(static_cast<std::size_t>(heads(in.out.dims) * in.n * in.dv));
    const TensorView elsewhere{scratch.data(), in.out.dims};
    std::vector<AppendInput> inputs;
    inputs.reserve(ring.size());
    const bool fresh = position % block_ == 0;
    for (std::size_t i = 0; i < ring.size(); ++i)
      inputs.push_back(AppendInput{in.q, in.k, in.v, i == 0 ? in.out : elsewhere, in.groups, in.masks, in.n, in.d,
                                   in.dv, fresh && i + 1 == ring.size()});
    std::size_t reached = 0;
    try {
      for (std::size_t i = 0; i < ring.size(); ++i) reached = i + 1, ring[i]->prepare(inputs[i]);
      for (std::size_t i = 0; i < ring.size(); ++i) {
        if (i > 0) lend_features(*ring[0], *ring[i]);
        ring[i]->run(inputs[i]);
      }
    } catch (...) {
      for (std::size_t i = 0; i < reached; ++i) ring[i]->rollback(inputs[i]);
      throw;
    }
    for (std::size_t i = 0; i < ring.size(); ++i) ring[i]->commit(inputs[i]);
  }

  // Whether the next n positions all fall in the block of the next one.
  bool in_one_block(Index n) const { return length_ % block_ + n <= block_; }

  FactoredMethod method_;
  Index block_;
  Index length_ = 0;  // positions appended
  Ring live_;
  Ring next_;  // an append's
};

}  // namespace

std::unique_ptr<StateImpl> make_windowed_state(const FactoredMethod& method, Index window) {
  return std::make_unique<WindowedState>(method, window);
}

}  // namespace favor
