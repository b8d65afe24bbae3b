#include "heap.hpp"

#include <emscripten/em_js.h>
#include <emscripten/em_macros.h>

#include <cmath>
#include <cstdlib>
#include <new>

#include <favor/error.hpp>
#include <favor/parallel.hpp>
#include <favor/tensor/shape.hpp>

#include "error_values.hpp"

// The array a result of `count` floats will be copied out into (web/heap.js takeTensor), made
// with its pages written once, so that the system maps them in now. Called on the calling thread
// while the helper threads compute (CallerTask); never throws: without memory for it now, the
// result gets its array after the call.
EM_JS(void, prepare_result_array, (double count), {
  try {
    const data = new Float32Array(count);
    for (let i = 0; i < count; i += 1024) data[i] = 0;  // one store per 4 KiB page
    Module.favorResultArray = data;
  } catch {
    Module.favorResultArray = undefined;
  }
});

// Copies floats [offset, offset + count) of the call's input `input` (web/heap.js, its tensors
// still arriving) to `to` in the heap; false if that failed (a JS exception must not cross the
// wasm frames). Called on the calling thread only (InputArrival).
EM_JS(bool, copy_arriving_input, (int input, double offset, double count, float* to), {
  try {
    Module.favorArriving(input, offset, count, to >>> 0);
    return true;
  } catch {
    return false;
  }
});

namespace favor_wasm {

namespace {
constexpr std::size_t kLine = 64;

// Bytes before an output's data that hold its dims (dims_before): whole cache lines, so that the
// data starts on one. web/api.js frees data - header_bytes(rank) after copying the output out.
std::size_t header_bytes(std::size_t rank) { return (8 * (rank + 1) + kLine - 1) / kLine * kLine; }
}  // namespace

// JS writes every pointer and header (web/heap.js), so a bad one is this package's bug, not the
// caller's: it is refused as an internal error rather than read (a pointer of 0 would read its
// dims at -8 and abort the instance).
std::vector<favor::Index> dims_before(std::uintptr_t data) {
  if (data < 8 || data % 4)
    throw InternalError("a tensor's heap pointer " + std::to_string(data) + " is null or misaligned");
  const auto invalid = [data] {
    throw InternalError("the tensor at heap pointer " + std::to_string(data) + " has no valid dims before it");
  };
  // A rank (at most 64) or a dim (at most 2^53 - 1) is a whole number in its range.
  const auto check = [&](double x, double most) {
    if (!(x >= 0 && x <= most && x == std::floor(x))) invalid();
  };
  const double* rank_at = reinterpret_cast<const double*>(data) - 1;
  check(*rank_at, 64);
  const auto rank = static_cast<std::size_t>(*rank_at);
  if (data < 8 * (rank + 1)) invalid();  // its dims would start below address 0
  const double* first = rank_at - rank;
  std::vector<favor::Index> dims(rank);
  for (std::size_t i = 0; i < rank; ++i) {
    check(first[i], 9007199254740991.0);
    dims[i] = static_cast<favor::Index>(first[i]);
  }
  return dims;
}

favor::ConstTensorView view(std::uintptr_t ptr) {
  return {reinterpret_cast<const float*>(ptr), dims_before(ptr)};
}

favor::ConstMaskView mask_view(std::uintptr_t ptr) {
  if (!ptr) return {};
  return {reinterpret_cast<const std::uint8_t*>(ptr), dims_before(ptr)};
}

float* allocate_output(const std::vector<favor::Index>& dims, const char* what) {
  double bytes = 4.0;
  for (favor::Index d : dims) bytes *= static_cast<double>(d);
  const std::size_t header = header_bytes(dims.size());
  if (bytes + static_cast<double>(header) > kMaxAllocationBytes)
    favor::throw_range(what, "the result would take " + std::to_string(bytes / 1073741824.0) +
                                 " GiB, more than one WebAssembly allocation can hold (2 GiB)");
  // On a cache line, as the inputs (web/api.js): malloc only guarantees 8 bytes here.
  const std::size_t size = (static_cast<std::size_t>(bytes) + kLine - 1) / kLine * kLine;
  auto* block = static_cast<unsigned char*>(std::aligned_alloc(kLine, header + (size ? size : kLine)));
  if (!block) throw std::bad_alloc();
  auto* out = reinterpret_cast<float*>(block + header);
  double* first = reinterpret_cast<double*>(out) - 1 - dims.size();  // dims, then the rank
  for (std::size_t i = 0; i < dims.size(); ++i) first[i] = static_cast<double>(dims[i]);
  first[dims.size()] = static_cast<double>(dims.size());
  return out;
}

void free_output(float* out, std::size_t rank) {
  std::free(reinterpret_cast<unsigned char*>(out) - header_bytes(rank));
}

void check_out_length(const std::vector<favor::Index>& dims, double size, double out_length) {
  if (!std::isnan(out_length) && out_length != size)
    favor::throw_range("out", "expected a Float32Array of " + std::to_string(static_cast<long long>(size)) +
                                  " floats (the output's dims " + favor::dims_string(dims) + "), got one of " +
                                  std::to_string(static_cast<long long>(out_length)) +
                                  (out_length == 0 ? " (empty or detached)" : ""));
}

std::function<void()> caller_part(double size, bool fresh, favor::InputArrival* arriving) {
  if (!fresh && !arriving) return {};
  return [size, fresh, arriving] {
    if (arriving) arriving->copy_all();
    if (fresh) prepare_result_array(size);
  };
}

std::unique_ptr<favor::InputArrival> arriving_inputs(bool arriving, const favor::ConstTensorView& q,
                                                     const favor::ConstTensorView& k, const favor::ConstTensorView& v,
                                                     favor::HeadReading reading) {
  if (!arriving) return nullptr;
  // A bidirectional fold's segment (linear_attention.cpp kFoldSegmentRows): a thread's first
  // segment is in once a slice of each of the others' is.
  constexpr favor::Index kRows = 1024;
  std::vector<float*> data{const_cast<float*>(q.data), const_cast<float*>(k.data), const_cast<float*>(v.data)};
  return std::make_unique<favor::InputArrival>(
      data,
      std::vector<favor::Index>{favor::element_count(q.dims, "q"), favor::element_count(k.dims, "k"),
                                favor::element_count(v.dims, "v")},
      favor::attention_input_order(q.dims, k.dims, v.dims, kRows, favor::max_threads(), reading),
      [data](const favor::InputPiece& p) {
        if (!copy_arriving_input(p.input, static_cast<double>(p.offset), static_cast<double>(p.count),
                                 data[static_cast<std::size_t>(p.input)] + p.offset))
          favor::throw_range("q, k, v", "could not be copied into the WebAssembly heap");
      });
}

}  // namespace favor_wasm
