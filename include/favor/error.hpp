// The one exception type of the core: it names the offending argument so that bindings can
// turn it into a JS TypeError or RangeError with a useful message.
#pragma once

#include <stdexcept>
#include <string>

namespace favor {

class Error : public std::invalid_argument {
 public:
  enum class Kind { type, range };

  Error(Kind kind, std::string argument, const std::string& expectation)
      : std::invalid_argument(argument + ": " + expectation),
        kind_(kind),
        argument_(std::move(argument)) {}

  Kind kind() const noexcept { return kind_; }
  const std::string& argument() const noexcept { return argument_; }

 private:
  Kind kind_;
  std::string argument_;
};

[[noreturn]] inline void throw_range(const std::string& argument, const std::string& expectation) {
  throw Error(Error::Kind::range, argument, expectation);
}

[[noreturn]] inline void throw_type(const std::string& argument, const std::string& expectation) {
  throw Error(Error::Kind::type, argument, expectation);
}

}  // namespace favor
