// Tensors in the wasm heap as web/heap.js lays them out (internal to the bindings): inputs and
// outputs are heap pointers whose dims stand just before their data, and an output is allocated
// here and freed by JS once it has copied it out.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <favor/tensor.hpp>
#include <favor/types.hpp>
#include <favor/threads/caller_task.hpp>
#include <favor/threads/input_arrival.hpp>

namespace favor_wasm {

// One wasm allocation cannot reach 2 GiB (see docs/toolchain.md §3).
constexpr double kMaxAllocationBytes = 2147483647.0 - 65536.0;

// A tensor's dims, read from before its data: its rank as a double at data - 8, its dims as the
// `rank` doubles before that (web/api.js writes them for its inputs, allocate_output for
// outputs). A pointer alone then describes a tensor: reading a JS dims array through Embind's val
// took a crossing per element and per property, much of a small call's time.
// Throws InternalError where data is 0, misaligned, or has no rank and dims there.
std::vector<favor::Index> dims_before(std::uintptr_t data);

favor::ConstTensorView view(std::uintptr_t ptr);

// A key mask (bytes) from JS: ptr 0 means none.
favor::ConstMaskView mask_view(std::uintptr_t ptr);

// A float buffer of `dims` owned by JS from here on, its dims written before it (dims_before).
float* allocate_output(const std::vector<favor::Index>& dims, const char* what);

// Frees an output allocate_output made (when the call that made it fails).
void free_output(float* out, std::size_t rank);

// Throws unless the caller's options.out (its length; NaN: none) fits an output of `size` floats
// of `dims`.
void check_out_length(const std::vector<favor::Index>& dims, double size, double out_length);

// The calling thread's part while the helpers compute (CallerTask): the inputs still arriving
// copied in, and, where the result gets a fresh array (no options.out), that array made. Empty
// where there is neither.
std::function<void()> caller_part(double size, bool fresh, favor::InputArrival* arriving);

// With `arriving`, q, k and v hold only their dims yet: their data is copied in while the call
// runs (web/heap.js call, favor/threads/input_arrival.hpp), in pieces of a fold segment's rows,
// in the order the call's threads read them (`reading`).
std::unique_ptr<favor::InputArrival> arriving_inputs(bool arriving, const favor::ConstTensorView& q,
                                                     const favor::ConstTensorView& k, const favor::ConstTensorView& v,
                                                     favor::HeadReading reading = favor::HeadReading::whole);

// Runs `compute(out)` into a freshly allocated output of `dims`, freeing it on failure.
// out_length: the length of the caller's options.out (NaN: none), checked against the output's
// size before anything is computed or changed (a causal state's append included); JS copies the
// result into it.
template <class Compute>
float* with_output(const std::vector<favor::Index>& dims, double out_length, Compute&& compute,
                   favor::InputArrival* arriving = nullptr) {
  double size = 1.0;
  for (favor::Index d : dims) size *= static_cast<double>(d);
  check_out_length(dims, size, out_length);
  float* out = allocate_output(dims, "output");
  const favor::CallerTask prepare(caller_part(size, std::isnan(out_length), arriving));
  try {
    compute(favor::TensorView{out, dims});
  } catch (...) {
    free_output(out, dims.size());
    throw;
  }
  return out;
}

}  // namespace favor_wasm
