// TIDE_INTERNAL_ASSERT's failure path (see <tide/core/assert.h>).
#include <tide/core/assert.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include <tide/core/error.h>

namespace tide::detail {

void internal_assert_failed(const char* cond, const char* file, int line, const char* msg) noexcept {
  const int rank = process_rank();
  const std::string where = rank >= 0 ? " on rank " + std::to_string(rank) : std::string();
  std::fprintf(stderr, "tide: internal error%s at %s:%d: %s (check failed: %s); this is a bug in tide\n",
               where.c_str(), file, line, msg, cond);
  std::fflush(stderr);
  std::abort();
}

}  // namespace tide::detail
