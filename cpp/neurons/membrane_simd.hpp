// What the membrane models with a refractory counter (lifca, psc_exp) share: the end of a
// vectorised step (refractory counters, reset to `refractory` on a spike, else counted down to
// zero, and one byte per lane in `fired`), the homogeneous update that runs the chosen kernel,
// and the per-neuron update of populations whose parameters vary.
#pragma once
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "base/simd.hpp"
#include "neurons/neuron_model.hpp"
#if defined(__x86_64__)
#include <immintrin.h>  // also for the AVX-512 kernels, compiled by target attribute in any build
#endif

namespace ranvier {

#if defined(__AVX2__)
// 4 lanes: the spike mask is 4 x 64 bits, the counters 4 x 32 bits.
inline void refractory_and_spikes4(__m128i r, __m256d spike, __m128i refractory, int32_t* R, uint8_t* fired) {
  const __m256i even = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
  const __m128i spike32 = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(_mm256_castpd_si256(spike), even));
  const __m128i counted = _mm_add_epi32(r, _mm_cmpgt_epi32(r, _mm_setzero_si128()));  // r - (r > 0)
  _mm_storeu_si128(reinterpret_cast<__m128i*>(R), _mm_blendv_epi8(counted, refractory, spike32));
  const uint32_t bits = uint32_t(_mm256_movemask_pd(spike));
#if defined(__BMI2__)
  const uint32_t bytes = _pdep_u32(bits, 0x01010101u);  // bit i -> byte i
#else
  const uint32_t bytes = (bits & 1) | (bits & 2) << 7 | (bits & 4) << 14 | (bits & 8) << 21;
#endif
  std::memcpy(fired, &bytes, 4);
}
#endif

#if defined(RANVIER_HAVE_AVX512_KERNELS)
// 8 lanes: the spike mask is a mask register.
RANVIER_AVX512 inline void refractory_and_spikes8(__m256i r, __mmask8 spike, __m256i refractory, int32_t* R,
                                                  uint8_t* fired) {
  const __m256i counted = _mm256_add_epi32(r, _mm256_cmpgt_epi32(r, _mm256_setzero_si256()));  // r - (r > 0)
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(R), _mm256_mask_blend_epi32(spike, counted, refractory));
  const uint64_t bytes = _pdep_u64(uint64_t(spike), 0x0101010101010101ull);  // bit i -> byte i
  std::memcpy(fired, &bytes, 8);
}
#endif

// A membrane model's update (columns V, c, refractory): its propagators and the one kernel the
// SIMD level chose among its scalar, AVX2 and AVX-512 versions (null where not built).
template <class Parameters, class Propagators>
class MembraneUpdate final : public PopulationUpdate {
 public:
  using Kernel = void (*)(const Propagators&, double scale, const int32_t* __restrict in, double* __restrict V,
                          double* __restrict C, int32_t* __restrict R, uint8_t* __restrict fired, uint64_t n);
  struct Kernels {
    Kernel scalar, avx2, avx512;
  };
  MembraneUpdate(const PopulationSpec& spec, const ModelContext& ctx, const Kernels& k)
      : p_(Parameters::of(spec, ctx.h), ctx.h), kernel_(choose(ctx.simd, k)) {}
  void step(const StepInput& in, const NeuronColumns& s, uint8_t* fired) const override {
    kernel_(p_, in.input_scale, in.input, s.V, s.c, s.refractory, fired, s.n);
  }

 private:
  static Kernel choose(SimdLevel level, const Kernels& k) {
    if (level == SimdLevel::avx512 && k.avx512) return k.avx512;
    if (level != SimdLevel::scalar && k.avx2) return k.avx2;
    return k.scalar;
  }
  Propagators p_;
  Kernel kernel_;
};

// A membrane model's update where parameters vary per neuron: one set of propagators per neuron
// of the range (table[k] for neuron k), and the model's scalar step. The vector kernels do the
// scalar step's operations in its order, so a neuron's trajectory is the one it would have in a
// homogeneous population of its parameters.
template <class Propagators, bool (*Step)(const Propagators&, double, double&, double&, int32_t&)>
class PerNeuronMembraneUpdate final : public PopulationUpdate {
 public:
  explicit PerNeuronMembraneUpdate(std::vector<Propagators> table) : table_(std::move(table)) {}
  void step(const StepInput& in, const NeuronColumns& s, uint8_t* fired) const override {
    const Propagators* p = table_.data();
    for (uint64_t k = 0; k < s.n; ++k)
      fired[k] = Step(p[k], double(in.input[k]) * in.input_scale, s.V[k], s.c[k], s.refractory[k]);
  }

 private:
  std::vector<Propagators> table_;
};

// The per-neuron propagators of a range: Parameters::of_neuron(values, gid, h) for each neuron.
template <class Parameters, class Propagators>
std::vector<Propagators> propagator_table(const PopulationSpec& spec, const ModelContext& ctx, const NeuronColumns& s) {
  const NeuronParameters values(spec, ctx.key);
  std::vector<Propagators> table;
  table.reserve(s.n);
  for (uint64_t k = 0; k < s.n; ++k) table.emplace_back(Parameters::of_neuron(values, s.gid[k], ctx.h), ctx.h);
  return table;
}

// A membrane model's update of a range: the kernel the SIMD level chooses where the population
// has one set of parameters, the per-neuron table and the scalar step where they vary.
template <class Parameters, class Propagators, bool (*Step)(const Propagators&, double, double&, double&, int32_t&)>
std::unique_ptr<PopulationUpdate> membrane_update(const PopulationSpec& spec, const ModelContext& ctx,
                                                  const NeuronColumns& s,
                                                  const typename MembraneUpdate<Parameters, Propagators>::Kernels& kernels) {
  if (parameters_vary(spec))
    return std::make_unique<PerNeuronMembraneUpdate<Propagators, Step>>(propagator_table<Parameters, Propagators>(spec, ctx, s));
  return std::make_unique<MembraneUpdate<Parameters, Propagators>>(spec, ctx, kernels);
}

}  // namespace ranvier
