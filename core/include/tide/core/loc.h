// Loc: where in the user's code an op was pushed. Every public call that
// pushes work takes one as its last, defaulted argument (Loc::current()), so
// that an error found later on a backend thread names the user's line.
//
// tide's own type, not std::source_location (which only the compiler can
// make): a frontend in another language makes one from its own frames
// (the Python module names the script's line). The strings are not owned:
// they must outlive every op and error that holds the Loc (the compiler's
// are static; a frontend keeps its own for the life of the process).
#pragma once

#include <cstdint>
#include <source_location>

namespace tide {

class Loc {
 public:
  /// Unknown: format_call_site reads "unknown call site".
  constexpr Loc() noexcept = default;
  constexpr Loc(const char* file, const char* function, std::uint_least32_t line,
                std::uint_least32_t column = 0) noexcept
      : file_(file ? file : ""), function_(function ? function : ""), line_(line), column_(column) {}
  /// The caller's location, when used as a default argument (as
  /// std::source_location::current()).
  static constexpr Loc current(std::source_location here = std::source_location::current()) noexcept {
    return {here.file_name(), here.function_name(), here.line(), here.column()};
  }

  constexpr const char* file_name() const noexcept { return file_; }
  constexpr const char* function_name() const noexcept { return function_; }
  constexpr std::uint_least32_t line() const noexcept { return line_; }
  constexpr std::uint_least32_t column() const noexcept { return column_; }

 private:
  const char* file_ = "";
  const char* function_ = "";
  std::uint_least32_t line_ = 0;
  std::uint_least32_t column_ = 0;
};

}  // namespace tide
