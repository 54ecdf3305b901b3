// Which vector kernels run: the build targets AVX2 (valgrind, and so the instruction counts of
// bench/instructions.py, cannot run AVX-512); where the CPU has AVX-512 the hottest loops
// (neuron updates, Philox, Poisson counts, the drive's efficacies and event lists) switch to
// versions compiled for it, chosen once per process. They do the same operations in the same
// order, so results are bit-identical either way. Also the AVX2 helpers that several of those
// loops share (append_lanes, flagged_indices).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace ranvier {

#if defined(__x86_64__) && defined(__GNUC__)
#define RANVIER_HAVE_AVX512_KERNELS 1
#define RANVIER_AVX512 __attribute__((target("avx512f,avx512vl,avx512dq,avx512bw,avx2,bmi2")))
#endif

// The kernel levels, lowest first. A neuron model runs the level's kernel (ModelContext::simd);
// "scalar" runs the models' scalar steps (the other loops keep their compiled-in AVX2), to check
// that every vector kernel gives the scalar step's results bit for bit.
enum class SimdLevel { scalar, avx2, avx512 };

// The best level this build offers on this CPU: AVX-512 where the CPU has AVX-512 (F, VL, DQ,
// BW) and BMI2, else AVX2 (the build's target), else scalar. Detected once.
inline SimdLevel best_simd_level() {
  static const SimdLevel best = [] {
#if defined(RANVIER_HAVE_AVX512_KERNELS)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("bmi2"))
      return SimdLevel::avx512;
#endif
#if defined(__AVX2__)
    return SimdLevel::avx2;
#else
    return SimdLevel::scalar;
#endif
  }();
  return best;
}

// The level the loops outside the neuron models (Philox, the drive's counts and events) run in
// this process. The CPU is the process's, so the choice is too: the engine sets it from its
// configuration (EngineConfig::simd) when it is made; before that, the best level. Every level
// gives the same results bit for bit, so engines of one process never disagree in their spikes.
inline SimdLevel& process_simd_level() {
  static SimdLevel level = best_simd_level();
  return level;
}

inline bool avx512_kernels() {
#if defined(RANVIER_HAVE_AVX512_KERNELS)
  return process_simd_level() == SimdLevel::avx512;
#else
  return false;
#endif
}

inline const char* simd_level_name(SimdLevel level) {
  return level == SimdLevel::avx512 ? "avx512" : level == SimdLevel::avx2 ? "avx2" : "scalar";
}

// "best" or a level's name, as EngineConfig::simd holds it; throws for a name that is not a
// level, or a level above the best this CPU and build offer.
SimdLevel simd_level_named(const std::string& name);

#if defined(__AVX2__)
// For each 8-bit mask, the lanes of its set bits in order: AVX2 has no compress instruction, so
// a permutation from this table (8 KiB) moves the kept lanes to the front.
struct CompressTable {
  alignas(32) uint32_t lanes[256][8];
  constexpr CompressTable() : lanes{} {
    for (uint32_t mask = 0; mask < 256; ++mask) {
      uint32_t k = 0;
      for (uint32_t lane = 0; lane < 8; ++lane)
        if (mask >> lane & 1) lanes[mask][k++] = lane;
    }
  }
};
inline constexpr CompressTable kCompress{};

// Appends base + lane for each set bit of the 8-bit `mask`, in order, at `out` (which has room
// for 8) and returns how many: a table load, an add and a store, no branch per bit (a loop over
// the bits mispredicted its exit where about one group in three has a bit set).
inline size_t append_lanes(uint32_t mask, uint32_t base, uint32_t* __restrict out) {
  const __m256i lanes = _mm256_load_si256(reinterpret_cast<const __m256i*>(kCompress.lanes[mask]));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm256_add_epi32(_mm256_set1_epi32(int(base)), lanes));
  return size_t(__builtin_popcount(mask));
}
#endif

// The indices i < m whose flag (a byte of 0 or 1) is set, ascending, into `out` (room for m + 8);
// returns how many. The flags are read 8 at a time (a variable-size copy only for the last group:
// it cost 30 instructions a group) and their indices appended without a branch per flag (the
// drive's normal tails, the build's redraws: a few in a hundred, in random places).
inline size_t flagged_indices(const uint8_t* __restrict flags, size_t m, uint32_t* __restrict out) {
  size_t n = 0, base = 0;
  auto scan = [&](uint64_t bytes) {
#if defined(__AVX2__) && defined(__BMI2__)
    n += append_lanes(uint32_t(_pext_u64(bytes, 0x0101010101010101ull)), uint32_t(base), out + n);
#else
    for (; bytes; bytes &= bytes - 1) out[n++] = uint32_t(base + size_t(__builtin_ctzll(bytes)) / 8);
#endif
  };
  for (; base + 8 <= m; base += 8) {
    uint64_t bytes;
    std::memcpy(&bytes, flags + base, 8);
    scan(bytes);
  }
  if (base < m) {
    uint64_t bytes = 0;
    std::memcpy(&bytes, flags + base, m - base);
    scan(bytes);
  }
  return n;
}

}  // namespace ranvier
