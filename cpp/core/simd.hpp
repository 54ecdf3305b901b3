// Which vector kernels run: the build targets AVX2 (valgrind, and so the instruction counts of
// bench/instructions.py, cannot run AVX-512); where the CPU has AVX-512 the hottest loops
// (neuron updates, Philox, Poisson counts, the drive's efficacies and event lists) switch to
// versions compiled for it, chosen once per process. They do the same operations in the same
// order, so results are bit-identical either way.
#pragma once
#include <cstdlib>
#include <cstring>

namespace ranvier {

#if defined(__x86_64__) && defined(__GNUC__)
#define RANVIER_HAVE_AVX512_KERNELS 1
#define RANVIER_AVX512 __attribute__((target("avx512f,avx512vl,avx512dq,avx512bw,avx2,bmi2")))
#endif

// True when the CPU has AVX-512 (F, VL, DQ, BW) and BMI2, unless RANVIER_SIMD=avx2 or scalar.
inline bool avx512_kernels() {
#if defined(RANVIER_HAVE_AVX512_KERNELS)
  static const bool chosen = [] {
    const char* simd = std::getenv("RANVIER_SIMD");
    if (simd && (std::strcmp(simd, "avx2") == 0 || std::strcmp(simd, "scalar") == 0)) return false;
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("bmi2");
  }();
  return chosen;
#else
  return false;
#endif
}

// The kernel a neuron model runs, chosen once per population at build. RANVIER_SIMD=scalar
// runs the models' scalar steps (the other loops keep their compiled-in AVX2), to check that
// every vector kernel gives the scalar step's results bit for bit.
enum class SimdLevel { scalar, avx2, avx512 };

inline SimdLevel neuron_simd_level() {
  const char* simd = std::getenv("RANVIER_SIMD");
  if (simd && std::strcmp(simd, "scalar") == 0) return SimdLevel::scalar;
  if (avx512_kernels()) return SimdLevel::avx512;
#if defined(__AVX2__)
  return SimdLevel::avx2;
#else
  return SimdLevel::scalar;
#endif
}

}  // namespace ranvier
