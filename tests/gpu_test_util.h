// Shared by the GPU tests: each skips, with the reason, where this process
// has no CUDA device (a machine without a GPU, or a build without CUDA).
#pragma once

#include <gtest/gtest.h>

#include <tide/core/device.h>

#define TIDE_REQUIRE_GPU()                                                                    \
  do {                                                                                        \
    if (!::tide::cuda_built())                                                                \
      GTEST_SKIP() << "tide was built without the CUDA backend (no nvcc found at configure)"; \
    if (::tide::cuda_device_count() == 0)                                                     \
      GTEST_SKIP() << "no CUDA device: cudaGetDeviceCount reports none or fails here";        \
  } while (0)
