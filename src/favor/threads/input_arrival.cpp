#include "favor/threads/input_arrival.hpp"

#include <algorithm>
#include <limits>

#include "favor/error.hpp"
#include "favor/tensor/shape.hpp"
#include "favor/threads/thread_plan.hpp"

namespace favor {

namespace {

std::atomic<InputArrival*> g_arrival{nullptr};

// 0 .. n-1 in the order `threads` threads start on them when a region deals each its contiguous
// range first (home_range), in passes: every helper's first index, then every helper's second,
// ...; last, the calling thread's range (busy copying, it starts on it once it has copied all),
// one index a pass. With fewer indices than threads, the caller's one goes in the first pass: a
// helper with none of its own takes it at once.
std::vector<std::vector<Index>> home_passes(Index n, int threads) {
  threads = std::max(1, threads);
  std::vector<std::vector<Index>> passes;
  const Index own = home_range(n, threads, 0).second;
  for (Index j = 0, placed = 0; placed < n - own; ++j) {
    passes.emplace_back();
    for (int t = threads - 1; t >= 1; --t)
      if (const auto [begin, end] = home_range(n, threads, t); begin + j < end) passes.back().push_back(begin + j);
    placed += static_cast<Index>(passes.back().size());
  }
  for (Index i = 0; i < own; ++i) {
    if (n < threads && !passes.empty()) passes.front().push_back(i);
    else passes.push_back({i});
  }
  return passes;
}

}  // namespace

std::vector<InputPiece> attention_input_order(const std::vector<Index>& q, const std::vector<Index>& k,
                                              const std::vector<Index>& v, Index rows, int threads,
                                              HeadReading reading) {
  const Index kv_heads = heads(k), S = k[k.size() - 2];
  const Index query_rows = heads(q) / kv_heads * q[q.size() - 2];  // a key/value head's query heads' rows
  const Index d = q.back(), dv = v.back();
  rows = std::max<Index>(1, rows);
  const Index key_slices = (S + rows - 1) / rows, query_slices = (query_rows + rows - 1) / rows;
  std::vector<InputPiece> pieces;
  const auto keys = [&](Index h, Index s) {
    const Index r = s * rows, n = std::min(rows, S - r);
    pieces.push_back({1, (h * S + r) * d, n * d});
    pieces.push_back({2, (h * S + r) * dv, n * dv});
  };
  const auto queries = [&](Index h, Index s) {
    const Index r = s * rows;
    pieces.push_back({0, (h * query_rows + r) * d, std::min(rows, query_rows - r) * d});
  };
  if (kv_heads == 1) {
    // One head: its loops are the call's regions, whose threads start on their home ranges.
    for (const auto& pass : home_passes(key_slices, threads))
      for (const Index s : pass) keys(0, s);
    for (const auto& pass : home_passes(query_slices, threads))
      for (const Index s : pass) queries(0, s);
    return pieces;
  }
  // Several: a head is an index of the call's region, and its loops are regions inside it, whose
  // indices its threads take in order, so a head's slices come in order. A head read whole comes
  // whole. Heads read by slices come a pass at a time, slice by slice: each thread has the first
  // slice of its head once the pass's other heads have theirs, not once the heads before its own
  // are in whole.
  for (const auto& pass : home_passes(kv_heads, threads)) {
    const std::size_t width = reading == HeadReading::whole ? 1 : pass.size();
    for (std::size_t g = 0; g < pass.size(); g += width) {
      const auto group = [&](Index slices, const auto& piece) {
        for (Index s = 0; s < slices; ++s)
          for (std::size_t i = g; i < g + width; ++i) piece(pass[i], s);
      };
      group(key_slices, keys);
      group(query_slices, queries);
    }
  }
  return pieces;
}

InputArrival::InputArrival(std::vector<float*> inputs, std::vector<Index> counts, std::vector<InputPiece> pieces,
                           std::function<void(const InputPiece&)> copy)
    : inputs_(std::move(inputs)),
      counts_(std::move(counts)),
      pieces_(std::move(pieces)),
      copy_(std::move(copy)),
      by_offset_(inputs_.size()),
      copier_(std::this_thread::get_id()) {
  for (std::size_t p = 0; p < pieces_.size(); ++p) {
    const InputPiece& piece = pieces_[p];
    by_offset_[static_cast<std::size_t>(piece.input)].emplace_back(piece.offset + piece.count, static_cast<Index>(p));
  }
  for (auto& list : by_offset_) std::sort(list.begin(), list.end());
  InputArrival* none = nullptr;
  if (!g_arrival.compare_exchange_strong(none, this)) throw_type("inputs", "another call's inputs are still arriving");
}

InputArrival::~InputArrival() { g_arrival.store(nullptr); }

void InputArrival::copy_until(Index piece_count) {
  for (Index p = done_.load(std::memory_order_relaxed); p < piece_count; ++p) {
    try {
      copy_(pieces_[static_cast<std::size_t>(p)]);
    } catch (...) {
      // Every wait ends, and every await from now on throws: no thread waits for a piece that
      // will never come.
      failed_.store(true);
      done_.store(static_cast<Index>(pieces_.size()));
      { std::lock_guard<std::mutex> lock(mutex_); }
      arrived_.notify_all();
      throw;
    }
    // Sequentially consistent, as is the waiter's count then read: one of the two sees the other.
    done_.store(p + 1);
    if (waiting_.load()) {
      { std::lock_guard<std::mutex> lock(mutex_); }
      arrived_.notify_all();
    }
  }
}

void InputArrival::check_not_failed() const {
  if (failed_.load()) throw_range("q, k, v", "could not be copied into the WebAssembly heap");
}

void InputArrival::copy_all() { await(nullptr, nullptr); }

Index InputArrival::needed(const float* begin, const float* end) const {
  if (!begin) return static_cast<Index>(pieces_.size());
  Index last = -1;
  for (std::size_t i = 0; i < inputs_.size(); ++i) {
    const float* base = inputs_[i];
    if (end <= base || begin >= base + counts_[i]) continue;
    const Index b = std::max<Index>(0, begin - base), e = std::min<Index>(counts_[i], end - base);
    // Pieces ending after b, in offset order, up to the first that starts at or after e.
    const auto& list = by_offset_[i];
    for (auto it = std::upper_bound(list.begin(), list.end(), std::make_pair(b, std::numeric_limits<Index>::max()));
         it != list.end(); ++it) {
      const InputPiece& piece = pieces_[static_cast<std::size_t>(it->second)];
      if (piece.offset >= e) break;
      if (piece.offset + piece.count > b) last = std::max(last, it->second);
    }
  }
  return last + 1;
}

void InputArrival::await(const float* begin, const float* end) {
  const Index need = needed(begin, end);
  if (done_.load(std::memory_order_acquire) >= need) return check_not_failed();
  if (std::this_thread::get_id() == copier_) {
    copy_until(need);
    return;
  }
  ++waiting_;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    arrived_.wait(lock, [&] { return done_.load() >= need; });
  }
  --waiting_;
  check_not_failed();
}

void await_input(const float* data, Index count) {
  if (InputArrival* a = g_arrival.load(std::memory_order_acquire)) a->await(data, data + count);
}

void await_all_inputs() {
  if (InputArrival* a = g_arrival.load(std::memory_order_acquire)) a->copy_all();
}

}  // namespace favor
