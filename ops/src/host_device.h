// TIDE_HOST_DEVICE marks a function that both the host compiler and nvcc's
// device pass compile: the functors in elementwise_functors.h and
// reduce_functors.h are written once and run in CPU loops and CUDA kernels.
#pragma once

#if defined(__CUDACC__)
#define TIDE_HOST_DEVICE __host__ __device__
#else
#define TIDE_HOST_DEVICE
#endif
