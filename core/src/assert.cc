// TIDE_INTERNAL_ASSERT's failure path (see <tide/core/assert.h>).
#include <tide/core/assert.h>

#include <cstdio>
#include <cstdlib>

#include <tide/core/error.h>

namespace tide::detail {

void internal_assert_failed(const char* cond, const char* file, int line, const char* msg) noexcept {
  const int rank = process_rank();
  if (rank >= 0)
    std::fprintf(stderr, "tide: internal error on rank %d at %s:%d: %s (check failed: %s); this is a bug in tide\n", rank,
                 file, line, msg, cond);
  else
    std::fprintf(stderr, "tide: internal error at %s:%d: %s (check failed: %s); this is a bug in tide\n", file, line, msg,
                 cond);
  std::fflush(stderr);
  std::abort();
}

}  // namespace tide::detail
