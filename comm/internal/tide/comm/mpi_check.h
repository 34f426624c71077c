// One check macro for MPI calls: the expression, file:line, MPI's error text
// and the rank, as a tide::CommError. Used by comm/ and launch/ (the code
// that calls MPI); it needs <mpi.h>, so it is not in the umbrella header.
#pragma once

#include <mpi.h>

#include <string>

#include <tide/comm/types.h>

namespace tide::detail {

/// MPI's text for an error code.
inline std::string mpi_error_text(int code) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(code, text, &len);
  return text;
}

[[noreturn]] inline void mpi_fail(int code, const char* expr, const char* file, int line) {
  const std::string text = mpi_error_text(code);
  int rank = -1, initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  throw CommError(std::string(expr) + " failed at " + file + ":" + std::to_string(line) + " on rank " +
                  std::to_string(rank) + ": " + text);
}

}  // namespace tide::detail

#define TIDE_MPI_CHECK(expr)                                                    \
  do {                                                                          \
    int tide_mpi_rc_ = (expr);                                                  \
    if (tide_mpi_rc_ != MPI_SUCCESS) ::tide::detail::mpi_fail(tide_mpi_rc_, #expr, __FILE__, __LINE__); \
  } while (0)
