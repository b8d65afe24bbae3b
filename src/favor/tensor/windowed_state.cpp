#include "favor/tensor/windowed_state.hpp"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "favor/tensor/shape.hpp"

namespace favor {

namespace {

constexpr Index kBlocks = 4;  // blocks per window

// The window's states (shared: an append that stays in one block runs on them, each rolling back
// on its own if the append fails). `window` holds the keys of the window's blocks so far and
// answers the queries. `blocks` holds each block after the window's oldest on its own (none in
// the first block, then up to 3, the current block's last): when a block starts, the sum of the 3
// before it becomes the window's state, and the oldest block leaves the window with the old one.
struct Ring {
  std::shared_ptr<StateImpl> window;
  std::vector<std::shared_ptr<StateImpl>> blocks;
};

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
    live_.blocks.reserve(kBlocks), next_.blocks.reserve(kBlocks);  // the same memory at every step
  }

  // An append that reaches a second block runs on copies of the states it changes in place (the
  // window's and the current block's), which replace them at commit: its first block's piece
  // commits to them before the next piece can run.
  void prepare(const AppendInput& in) override {
    next_.window = live_.window;
    next_.blocks.assign(live_.blocks.begin(), live_.blocks.end());
    if (in_one_block(in.n)) return;
    if (next_.window) next_.window = clone_factored_state(*next_.window);
    if (!next_.blocks.empty()) next_.blocks.back() = clone_factored_state(*next_.blocks.back());
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
    std::swap(live_, next_);
    clear(next_);
    length_ += in.n;
  }

  void rollback(const AppendInput&) override { clear(next_); }

  std::size_t state_bytes() override {
    std::size_t bytes = live_.window ? live_.window->state_bytes() : 0;
    for (const auto& s : live_.blocks) bytes += s->state_bytes();
    return bytes;
  }

  void reset() override {
    clear(live_), clear(next_);
    length_ = 0;
  }

 private:
  static void clear(Ring& ring) {
    ring.window.reset();
    ring.blocks.clear();  // (its room kept)
  }

  // Positions [position, position + in.n), all in one block: to the window's state, which writes
  // the outputs, and to the current block's, which reads the window's features of the rows (its
  // outputs to scratch). At a block start the ring moves on first. Both are prepared and run
  // before either commits; on an error those reached roll back, and the states are as they were.
  void append_piece(Ring& ring, Index position, const AppendInput& in) {
    const bool fresh_window = !ring.window, fresh_block = position % block_ == 0 && position > 0;
    if (fresh_window) {
      ring.window = make_factored_state(method_);
    } else if (fresh_block) {
      if (static_cast<Index>(ring.blocks.size()) == kBlocks - 1) {
        std::vector<StateImpl*> parts;
        for (const auto& b : ring.blocks) parts.push_back(b.get());
        ring.window = merged_factored_state(parts);
        ring.blocks.erase(ring.blocks.begin());
      }
      ring.blocks.push_back(make_factored_state(method_));
    }
    std::vector<float> scratch;
    const bool both = !ring.blocks.empty();
    if (both) scratch.resize(static_cast<std::size_t>(heads(in.out.dims) * in.n * in.dv));
    const TensorView elsewhere{scratch.data(), in.out.dims};
    StateImpl* states[2] = {ring.window.get(), both ? ring.blocks.back().get() : nullptr};
    const AppendInput inputs[2] = {
        AppendInput{in.q, in.k, in.v, in.out, in.groups, in.masks, in.n, in.d, in.dv, fresh_window},
        AppendInput{in.q, in.k, in.v, elsewhere, in.groups, in.masks, in.n, in.d, in.dv, fresh_block}};
    const int count = both ? 2 : 1;
    int reached = 0;
    try {
      for (int i = 0; i < count; ++i) reached = i + 1, states[i]->prepare(inputs[i]);
      states[0]->run(inputs[0]);
      if (both) lend_features(*states[0], *states[1]), states[1]->run(inputs[1]);
    } catch (...) {
      for (int i = 0; i < reached; ++i) states[i]->rollback(inputs[i]);
      throw;
    }
    for (int i = 0; i < count; ++i) states[i]->commit(inputs[i]);
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
