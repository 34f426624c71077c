// TIDE_VECTOR_CLONES: an AVX2 clone of a vectorised CPU loop beside the
// baseline one, chosen when the program loads (GCC's target_clones, an
// ifunc). Used only where every operation is IEEE-rounded and fma
// contraction is off, so both clones give the same bits. Not under
// sanitizers: ThreadSanitizer crashes in an ifunc resolver, which runs
// before its runtime is up.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__) && \
    !defined(__SANITIZE_ADDRESS__)
#define TIDE_VECTOR_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define TIDE_VECTOR_CLONES
#endif
