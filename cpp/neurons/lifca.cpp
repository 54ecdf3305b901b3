#include "neurons/lifca.hpp"

#include <cmath>

#include "neurons/membrane_simd.hpp"

namespace ranvier::lifca {

Propagators::Propagators(const Parameters& p, double h) {
  P22 = std::exp(-h / p.tau_m_ms);
  Pc = std::exp(-h / p.tau_c_ms);
  const double rate_diff = 1.0 / p.tau_m_ms - 1.0 / p.tau_c_ms;
  const double P21_c = std::abs(rate_diff) < 1e-14 ? h * P22 : (Pc - P22) / rate_diff;
  gP21 = p.g_c * P21_c;
  dc_term = p.dc * p.tau_m_ms * (1.0 - P22);
  theta = p.theta_mV;
  reset = p.reset_mV;
  alpha = p.alpha_c;
  refractory = int32_t(p.refractory_steps);
}

namespace {

void steps_scalar(const Propagators& p, double scale, const int32_t* __restrict in, double* __restrict V,
                  double* __restrict C, int32_t* __restrict R, uint8_t* __restrict fired, uint64_t n) {
  for (uint64_t k = 0; k < n; ++k) fired[k] = step(p, double(in[k]) * scale, V[k], C[k], R[k]);
}

#if defined(__AVX2__)
void steps_avx2(const Propagators& p, double scale, const int32_t* __restrict in, double* __restrict V,
                double* __restrict C, int32_t* __restrict R, uint8_t* __restrict fired, uint64_t n) {
  uint64_t k = 0;
  const __m256d P22 = _mm256_set1_pd(p.P22), Pc = _mm256_set1_pd(p.Pc), gP21 = _mm256_set1_pd(p.gP21);
  const __m256d dc = _mm256_set1_pd(p.dc_term), theta = _mm256_set1_pd(p.theta), reset = _mm256_set1_pd(p.reset);
  const __m256d alpha = _mm256_set1_pd(p.alpha), sc = _mm256_set1_pd(scale);
  const __m128i zero = _mm_setzero_si128(), refractory = _mm_set1_epi32(p.refractory);
  for (; k + 4 <= n; k += 4) {
    const __m256d v0 = _mm256_loadu_pd(V + k), c0 = _mm256_loadu_pd(C + k);
    const __m128i r = _mm_loadu_si128(reinterpret_cast<const __m128i*>(R + k));
    const __m256d input = _mm256_mul_pd(_mm256_cvtepi32_pd(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + k))), sc);
    const __m256d v = _mm256_add_pd(_mm256_sub_pd(_mm256_add_pd(_mm256_mul_pd(v0, P22), dc), _mm256_mul_pd(gP21, c0)), input);
    const __m256d cn = _mm256_mul_pd(c0, Pc);
    const __m256d active = _mm256_castsi256_pd(_mm256_cvtepi32_epi64(_mm_cmpeq_epi32(r, zero)));
    const __m256d spike = _mm256_and_pd(active, _mm256_cmp_pd(v, theta, _CMP_GE_OQ));
    _mm256_storeu_pd(V + k, _mm256_blendv_pd(reset, v, _mm256_andnot_pd(spike, active)));
    _mm256_storeu_pd(C + k, _mm256_blendv_pd(cn, _mm256_add_pd(cn, alpha), spike));
    refractory_and_spikes4(r, spike, refractory, R + k, fired + k);
  }
  for (; k < n; ++k) fired[k] = step(p, double(in[k]) * scale, V[k], C[k], R[k]);
}
#endif

#if defined(RANVIER_HAVE_AVX512_KERNELS)
RANVIER_AVX512 void steps_avx512(const Propagators& p, double scale, const int32_t* __restrict in,
                                 double* __restrict V, double* __restrict C, int32_t* __restrict R,
                                 uint8_t* __restrict fired, uint64_t n) {
  uint64_t k = 0;
  const __m512d P22 = _mm512_set1_pd(p.P22), Pc = _mm512_set1_pd(p.Pc), gP21 = _mm512_set1_pd(p.gP21);
  const __m512d dc = _mm512_set1_pd(p.dc_term), theta = _mm512_set1_pd(p.theta), reset = _mm512_set1_pd(p.reset);
  const __m512d alpha = _mm512_set1_pd(p.alpha), sc = _mm512_set1_pd(scale);
  const __m256i zero = _mm256_setzero_si256(), refractory = _mm256_set1_epi32(p.refractory);
  for (; k + 8 <= n; k += 8) {
    const __m512d v0 = _mm512_loadu_pd(V + k), c0 = _mm512_loadu_pd(C + k);
    const __m256i r = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(R + k));
    const __m512d input = _mm512_mul_pd(_mm512_cvtepi32_pd(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + k))), sc);
    const __m512d v = _mm512_add_pd(_mm512_sub_pd(_mm512_add_pd(_mm512_mul_pd(v0, P22), dc), _mm512_mul_pd(gP21, c0)), input);
    const __m512d cn = _mm512_mul_pd(c0, Pc);
    const __mmask8 active = _mm256_cmpeq_epi32_mask(r, zero);
    const __mmask8 spike = _mm512_mask_cmp_pd_mask(active, v, theta, _CMP_GE_OQ);
    _mm512_storeu_pd(V + k, _mm512_mask_blend_pd(__mmask8(active & ~spike), reset, v));
    _mm512_storeu_pd(C + k, _mm512_mask_add_pd(cn, spike, cn, alpha));
    refractory_and_spikes8(r, spike, refractory, R + k, fired + k);
  }
  for (; k < n; ++k) fired[k] = step(p, double(in[k]) * scale, V[k], C[k], R[k]);
}
#endif

constexpr const char* kInitialStates[] = {"reset", "uniform", nullptr};

void check(const PopulationSpec& spec, double) {
  require_parameters(spec, kPerNeuron);     // every parameter may vary per neuron
  check_per_neuron(spec, kPerNeuron);
  check_initial(spec, kInitialStates);
}

void initialize(const PopulationSpec& spec, const Key& key, double, const NeuronColumns& s) {
  const bool uniform = spec.initial == "uniform";
  const NeuronParameters v(spec, key);
  if (spec.per_neuron.empty()) {
    const double reset = parameter(spec, "reset_mV"), theta = parameter(spec, "theta_mV");
    for (uint64_t k = 0; k < s.n; ++k) s.V[k] = uniform ? uniform_potential(key, s.gid[k], reset, theta) : reset;
    return;
  }
  for (uint64_t k = 0; k < s.n; ++k) {
    const uint64_t g = s.gid[k];
    s.V[k] = v.varies(kInitialV) ? v(kInitialV, g)
             : uniform          ? uniform_potential(key, g, v("reset_mV", g), v("theta_mV", g))
                                : v("reset_mV", g);
  }
}

std::unique_ptr<PopulationUpdate> make_update(const PopulationSpec& spec, const ModelContext& ctx,
                                              const NeuronColumns& s) {
  MembraneUpdate<Parameters, Propagators>::Kernels kernels{steps_scalar, nullptr, nullptr};
#if defined(__AVX2__)
  kernels.avx2 = steps_avx2;
#endif
#if defined(RANVIER_HAVE_AVX512_KERNELS)
  kernels.avx512 = steps_avx512;
#endif
  return membrane_update<Parameters, Propagators, step>(spec, ctx, s, kernels);
}

}  // namespace

const NeuronModel model{"lifca", check, initialize, make_update};

}  // namespace ranvier::lifca
