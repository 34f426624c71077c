// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3",
// SC'11): a counter-based generator. The same function runs in every backend,
// so a (seed, counter) pair gives the same bits everywhere.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define TIDE_HD __host__ __device__
#else
#define TIDE_HD
#endif

namespace tide::philox {

struct Block {
  std::uint32_t v[4];
};

/// The full generator: a 128-bit counter and a 64-bit key (Random123's
/// philox4x32_10(ctr, key)).
TIDE_HD inline Block philox4x32_10(Block counter, std::uint32_t key0, std::uint32_t key1) {
  constexpr std::uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
  constexpr std::uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
  std::uint32_t c0 = counter.v[0], c1 = counter.v[1], c2 = counter.v[2], c3 = counter.v[3];
  std::uint32_t k0 = key0, k1 = key1;
  for (int round = 0; round < 10; ++round) {
    std::uint64_t p0 = static_cast<std::uint64_t>(kMul0) * c0;
    std::uint64_t p1 = static_cast<std::uint64_t>(kMul1) * c2;
    std::uint32_t hi0 = static_cast<std::uint32_t>(p0 >> 32), lo0 = static_cast<std::uint32_t>(p0);
    std::uint32_t hi1 = static_cast<std::uint32_t>(p1 >> 32), lo1 = static_cast<std::uint32_t>(p1);
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    k0 += kWeyl0;
    k1 += kWeyl1;
  }
  return {{c0, c1, c2, c3}};
}

/// What tide's random ops use: the counter's low two words hold `counter`
/// (the high two are zero) and the key holds `seed`.
TIDE_HD inline Block philox4x32_10(std::uint64_t counter, std::uint64_t seed) {
  Block c{{static_cast<std::uint32_t>(counter), static_cast<std::uint32_t>(counter >> 32), 0u, 0u}};
  return philox4x32_10(c, static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32));
}

/// Uniform in [0, 1) with 32 random bits, computed in double.
TIDE_HD inline double to_unit(std::uint32_t x) { return x * (1.0 / 4294967296.0); }

}  // namespace tide::philox
