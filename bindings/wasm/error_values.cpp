#include "error_values.hpp"

#include <cxxabi.h>

#include <new>
#include <stdexcept>
#include <typeinfo>
#include <utility>

#include <favor/error.hpp>

namespace favor_wasm {

using emscripten::val;

namespace {
ErrorValue g_last_error{"Error", ""};
}  // namespace

val error(const ErrorValue& e) {
  val v = val::object();
  v.set("error", e.kind);
  v.set("message", e.message);
  return v;
}

// Looked up by its exact type rather than by typed catch clauses: in the pthreads build, clang
// 14's wasm exceptions match only catch (...) (typed clauses are skipped), while the type of the
// exception in hand is reported correctly.
ErrorValue current_error() {
  const std::type_info* type = abi::__cxa_current_exception_type();
  void* object = abi::__cxa_current_primary_exception();  // the thrown object; counted, released below
  const auto is = [type](const std::type_info& t) { return type && *type == t; };
  ErrorValue e;
  if (is(typeid(favor::Error))) {
    const auto* x = static_cast<const favor::Error*>(object);
    e = {x->kind() == favor::Error::Kind::type ? "TypeError" : "RangeError", x->what()};
  } else if (is(typeid(std::bad_alloc)) || is(typeid(std::bad_array_new_length)) || is(typeid(std::length_error))) {
    e = {"RangeError", "out of memory: the request does not fit in the WebAssembly heap"};
  } else if (is(typeid(InternalError))) {
    e = {"Error", std::string("internal error: ") + static_cast<const InternalError*>(object)->what()};
  } else {
    e = {"Error", std::string("unknown internal error") + (type ? std::string(" (") + type->name() + ")" : "")};
  }
  if (object) abi::__cxa_decrement_exception_refcount(object);
  return e;
}

void keep_last_error(ErrorValue e) { g_last_error = std::move(e); }

val last_error() {
  val e = error(g_last_error);
  g_last_error = {"Error", std::string()};  // the message's memory goes back now
  return e;
}

}  // namespace favor_wasm
