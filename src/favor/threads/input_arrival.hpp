// Inputs that arrive while a call already runs (internal).
//
// Why: the wasm bindings copy a call's inputs from JavaScript arrays into the heap, and only the
// calling thread can (the arrays are not shared with the helper threads). Copied before the call,
// that time is serial and caps how far threads speed a large call up, most on a server whose
// single core copies slowly (docs/design.md §12). Copied piece by piece on the calling thread
// while the helpers start on the pieces already there (a CallerTask), it overlaps the call's work.
//
// The contract: between an InputArrival's construction and its destruction, code that reads the
// inputs' floats first calls await_input on them. A read covered by an await made earlier on the
// same thread, or before a region that has since been joined, needs none of its own.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "favor/types.hpp"

namespace favor {

// Floats [offset, offset + count) of input `input` of a call.
struct InputPiece {
  int input = 0;
  Index offset = 0;
  Index count = 0;
};

// How a call's threads read a key/value head's inputs: whole (exact and codebook attention read
// all of them before they start on the head; a causal head folds a wave of segments' keys, up to
// all of them, before it sweeps their queries), or by slices (a bidirectional fold reads the keys
// and values slice by slice as they come, then the queries).
enum class HeadReading { whole, by_slices };

// The order in which the inputs of an attention call (q [..., Hq, L, d], k [..., Hkv, S, d],
// v [..., Hkv, S, dv]; inputs 0, 1, 2) arrive: in slices of `rows` rows, a key/value head's keys
// and values together, then its queries (the heads of q that read head kv are the kv-th of Hkv
// equal parts of q), in the order `threads` threads start on them (a region deals each thread a
// contiguous range of indices first, home_range): every helper's first, then every helper's
// second, ...; the calling thread's own, which it takes once it has copied them all, last. With
// one key/value head those indices are its slices. With several they are the heads, and a head's
// slices come in order; heads read by slices come slice by slice across each such pass of heads.
// Expects valid dims (checked by the caller beforehand).
std::vector<InputPiece> attention_input_order(const std::vector<Index>& q, const std::vector<Index>& k,
                                              const std::vector<Index>& v, Index rows, int threads,
                                              HeadReading reading);

class InputArrival {
 public:
  // Input i lives at inputs[i] (inputs_counts[i] floats); `pieces` arrive in order, each copied
  // by copy(piece) on the thread that makes this, which may throw. Every float of every input is
  // in exactly one piece. Only one arrival lives at a time in a process.
  InputArrival(std::vector<float*> inputs, std::vector<Index> counts, std::vector<InputPiece> pieces,
               std::function<void(const InputPiece&)> copy);
  ~InputArrival();
  InputArrival(const InputArrival&) = delete;
  InputArrival& operator=(const InputArrival&) = delete;

  // Copies every piece not yet in (on the thread that made this; elsewhere it waits for them).
  void copy_all();
  // Blocks until floats [begin, end) of the inputs are in: on the thread that made this, copies
  // the pieces up to the last one they need; on another, waits for that thread to. Once a copy
  // has thrown, this throws (favor::Error naming q, k, v) on every thread, for every range.
  void await(const float* begin, const float* end);

 private:
  void copy_until(Index piece_count);
  void check_not_failed() const;
  Index needed(const float* begin, const float* end) const;  // pieces to have [begin, end) in

  std::vector<float*> inputs_;
  std::vector<Index> counts_;
  std::vector<InputPiece> pieces_;
  std::function<void(const InputPiece&)> copy_;
  // For each input, its pieces' order in `pieces_`, sorted by offset.
  std::vector<std::vector<std::pair<Index, Index>>> by_offset_;  // (offset + count, order)
  std::thread::id copier_;
  std::atomic<Index> done_{0};
  std::atomic<bool> failed_{false};
  std::atomic<int> waiting_{0};
  std::mutex mutex_;
  std::condition_variable arrived_;
};

// Blocks until the floats [data, data + count) are in, where they belong to the live
// InputArrival's inputs (see InputArrival::await); returns at once otherwise.
void await_input(const float* data, Index count);

// Waits for all of the live InputArrival's inputs (copying them on its thread); returns at once
// without one.
void await_all_inputs();

}  // namespace favor
