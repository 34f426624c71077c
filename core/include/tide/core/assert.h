// Internal invariants, kept apart from user errors.
//
//   TIDE_INTERNAL_ASSERT(op.nwaits <= kMaxWaits, "too many waits");
//
// A user error (bad shape, wrong device, misuse of the API) throws a
// tide::Error the caller can catch and act on (<tide/core/error.h>). A
// broken invariant is a bug in tide: no caller can recover from it, so
// TIDE_INTERNAL_ASSERT prints the condition, file:line, the message and the
// rank to stderr and aborts. It is always checked (Release builds too):
// keep it off paths where the check itself would cost.
#pragma once

namespace tide::detail {

/// Prints the failed invariant and aborts the process.
[[noreturn]] void internal_assert_failed(const char* cond, const char* file, int line, const char* msg) noexcept;

}  // namespace tide::detail

#define TIDE_INTERNAL_ASSERT(cond, msg)                                            \
  do {                                                                             \
    if (!(cond)) [[unlikely]]                                                      \
      ::tide::detail::internal_assert_failed(#cond, __FILE__, __LINE__, (msg));    \
  } while (0)

/// For a point no valid state reaches (a switch over every enumerator).
#define TIDE_UNREACHABLE(msg) \
  ::tide::detail::internal_assert_failed("control never reaches here", __FILE__, __LINE__, (msg))
