// Errors out as values (internal to the bindings). No exception may unwind through wasm frames
// into JS (it leaks the shadow stack in Emscripten 3.1.6), so every entry point catches
// everything and returns either its result or { error, message }, which web/heap.js turns into a
// TypeError or RangeError (coreError, web/errors.js).
#pragma once

#include <emscripten/val.h>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace favor_wasm {

// A broken promise between web/heap.js and the bindings (a bad heap pointer or header): a bug in
// this package, reported to JS as a plain Error rather than read on into an abort.
struct InternalError : std::logic_error {
  using std::logic_error::logic_error;
};

struct ErrorValue {
  const char* kind;  // "TypeError", "RangeError" or "Error"
  std::string message;
};

// { error: kind, message } for JS.
emscripten::val error(const ErrorValue& e);

// The exception being handled, as an error value.
ErrorValue current_error();

// fn()'s value, or the error it threw as a value.
template <class Fn>
emscripten::val guarded(Fn&& fn) {
  try {
    return fn();
  } catch (...) {
    return error(current_error());
  }
}

// Keeps the error of a call that returns a tensor pointer of 0, until last_error() takes it.
void keep_last_error(ErrorValue e);

// Calls that make a tensor return its data pointer (a plain number, no val to build), or 0 after
// an error, which last_error() then returns as { error, message }.
template <class Fn>
double guarded_tensor(Fn&& fn) {
  try {
    return static_cast<double>(reinterpret_cast<std::uintptr_t>(fn()));
  } catch (...) {
    keep_last_error(current_error());
    return 0.0;
  }
}

// The error kept by the last call that returned 0 (lastError() in JS), and forgets it.
emscripten::val last_error();

}  // namespace favor_wasm
