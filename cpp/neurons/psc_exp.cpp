#include "neurons/psc_exp.hpp"

#include <cmath>
#include <stdexcept>
#include <vector>

#include "neurons/membrane_simd.hpp"

namespace ranvier::psc_exp {

Propagators::Propagators(const Parameters& p, double h) {
  P22 = std::exp(-h / p.tau_m_ms);
  P11 = std::exp(-h / p.tau_syn_ms);
  P21 = std::abs(p.tau_syn_ms - p.tau_m_ms) < 1e-12
            ? h / p.c_m_pF * P22
            : p.tau_m_ms * p.tau_syn_ms / (p.c_m_pF * (p.tau_syn_ms - p.tau_m_ms)) * (P11 - P22);
  dc_term = p.i_e_pA * p.tau_m_ms / p.c_m_pF * (1.0 - P22);
  theta = p.theta_mV;
  reset = p.reset_mV;
  refractory = int32_t(p.refractory_steps);
}

namespace {

bool same_values(const NeuronValues& a, const NeuronValues& b) {
  return a.values == b.values && a.distribution == b.distribution && a.a == b.a && a.b == b.b && a.tag == b.tag;
}

}  // namespace

// NEST's P21 of one synapse type (IAFPropagatorExp): gamma exp(-h/tau_syn) expm1(h (1/tau_syn -
// 1/tau_m)), gamma = beta / C_m, beta = tau_syn tau_m / (tau_m - tau_syn); where that is not a
// positive normal number (tau_syn at or near tau_m) its limit h / C_m exp(-h/tau_m).
double p21(double tau_syn, double tau_m, double c_m, double h) {
  const double beta = tau_syn * tau_m / (tau_m - tau_syn);
  const double gamma = beta / c_m;
  const double p = gamma * std::exp(-h * (1 / tau_syn)) * std::expm1(h * ((tau_m - tau_syn) / (tau_syn * tau_m)));
  return std::isnormal(p) && p > 0 ? p : h * (1 / c_m) * std::exp(-h * (1 / tau_m));
}

bool splits(const PopulationSpec& p) {
  if (p.injected_current) return true;   // the two-current step reads StepInput::current
  const auto ex = p.per_neuron.find("tau_syn_ex_ms"), in = p.per_neuron.find("tau_syn_in_ms");
  const bool vary_ex = ex != p.per_neuron.end(), vary_in = in != p.per_neuron.end();
  if (vary_ex || vary_in) return !(vary_ex && vary_in && same_values(ex->second, in->second));
  return parameter(p, "tau_syn_ex_ms") != parameter(p, "tau_syn_in_ms");
}

SplitPropagators::SplitPropagators(const SplitParameters& p, double h) {
  P22 = std::exp(-h / p.tau_m_ms);
  P11ex = std::exp(-h / p.tau_syn_ex_ms);
  P11in = std::exp(-h / p.tau_syn_in_ms);
  P21ex = p21(p.tau_syn_ex_ms, p.tau_m_ms, p.c_m_pF, h);
  P21in = p21(p.tau_syn_in_ms, p.tau_m_ms, p.c_m_pF, h);
  P20 = p.tau_m_ms / p.c_m_pF * (1.0 - P22);
  i_e = p.i_e_pA;
  theta = p.theta_mV;
  reset = p.reset_mV;
  refractory = int32_t(p.refractory_steps);
}

namespace {

using Kernel = void (*)(const Propagators&, double scale, const int32_t* __restrict in, double* __restrict V,
                        double* __restrict I, int32_t* __restrict R, uint8_t* __restrict fired, uint64_t n);

void steps_scalar(const Propagators& p, double scale, const int32_t* __restrict in, double* __restrict V,
                  double* __restrict I, int32_t* __restrict R, uint8_t* __restrict fired, uint64_t n) {
  for (uint64_t k = 0; k < n; ++k) fired[k] = step(p, double(in[k]) * scale, V[k], I[k], R[k]);
}

#if defined(__AVX2__)
void steps_avx2(const Propagators& p, double scale, const int32_t* __restrict in, double* __restrict V,
                double* __restrict I, int32_t* __restrict R, uint8_t* __restrict fired, uint64_t n) {
  uint64_t k = 0;
  const __m256d P22 = _mm256_set1_pd(p.P22), P21 = _mm256_set1_pd(p.P21), P11 = _mm256_set1_pd(p.P11);
  const __m256d dc = _mm256_set1_pd(p.dc_term), theta = _mm256_set1_pd(p.theta), reset = _mm256_set1_pd(p.reset);
  const __m256d sc = _mm256_set1_pd(scale);
  const __m128i zero = _mm_setzero_si128(), refractory = _mm_set1_epi32(p.refractory);
  for (; k + 4 <= n; k += 4) {
    const __m256d v0 = _mm256_loadu_pd(V + k), i0 = _mm256_loadu_pd(I + k);
    const __m128i r = _mm_loadu_si128(reinterpret_cast<const __m128i*>(R + k));
    const __m256d input = _mm256_mul_pd(_mm256_cvtepi32_pd(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + k))), sc);
    const __m256d v = _mm256_add_pd(_mm256_add_pd(_mm256_mul_pd(v0, P22), _mm256_mul_pd(i0, P21)), dc);
    const __m128i active32 = _mm_cmpeq_epi32(r, zero);
    const __m256d active = _mm256_castsi256_pd(_mm256_cvtepi32_epi64(active32));
    const __m256d spike = _mm256_and_pd(active, _mm256_cmp_pd(v, theta, _CMP_GE_OQ));
    _mm256_storeu_pd(V + k, _mm256_blendv_pd(_mm256_blendv_pd(v0, v, active), reset, spike));
    _mm256_storeu_pd(I + k, _mm256_add_pd(_mm256_mul_pd(i0, P11), input));
    refractory_and_spikes4(r, spike, refractory, R + k, fired + k);
  }
  for (; k < n; ++k) fired[k] = step(p, double(in[k]) * scale, V[k], I[k], R[k]);
}
#endif

#if defined(RANVIER_HAVE_AVX512_KERNELS)
RANVIER_AVX512 void steps_avx512(const Propagators& p, double scale, const int32_t* __restrict in,
                                 double* __restrict V, double* __restrict I, int32_t* __restrict R,
                                 uint8_t* __restrict fired, uint64_t n) {
  uint64_t k = 0;
  const __m512d P22 = _mm512_set1_pd(p.P22), P21 = _mm512_set1_pd(p.P21), P11 = _mm512_set1_pd(p.P11);
  const __m512d dc = _mm512_set1_pd(p.dc_term), theta = _mm512_set1_pd(p.theta), reset = _mm512_set1_pd(p.reset);
  const __m512d sc = _mm512_set1_pd(scale);
  const __m256i zero = _mm256_setzero_si256(), refractory = _mm256_set1_epi32(p.refractory);
  for (; k + 8 <= n; k += 8) {
    const __m512d v0 = _mm512_loadu_pd(V + k), i0 = _mm512_loadu_pd(I + k);
    const __m256i r = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(R + k));
    const __m512d input = _mm512_mul_pd(_mm512_cvtepi32_pd(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + k))), sc);
    const __m512d v = _mm512_add_pd(_mm512_add_pd(_mm512_mul_pd(v0, P22), _mm512_mul_pd(i0, P21)), dc);
    const __mmask8 active = _mm256_cmpeq_epi32_mask(r, zero);
    const __mmask8 spike = _mm512_mask_cmp_pd_mask(active, v, theta, _CMP_GE_OQ);
    _mm512_storeu_pd(V + k, _mm512_mask_blend_pd(spike, _mm512_mask_blend_pd(active, v0, v), reset));
    _mm512_storeu_pd(I + k, _mm512_add_pd(_mm512_mul_pd(i0, P11), input));
    refractory_and_spikes8(r, spike, refractory, R + k, fired + k);
  }
  for (; k < n; ++k) fired[k] = step(p, double(in[k]) * scale, V[k], I[k], R[k]);
}
#endif

// Two currents, one set of propagators for the range.
class SplitUpdate final : public PopulationUpdate {
 public:
  SplitUpdate(const PopulationSpec& spec, const ModelContext& ctx) : p_(SplitParameters::of(spec, ctx.h), ctx.h) {}
  void step(const StepInput& in, const NeuronColumns& s, uint8_t* fired) const override {
    const double scale = in.input_scale;
    for (uint64_t k = 0; k < s.n; ++k)
      fired[k] = step_split(p_, double(in.input[k]) * scale, double(in.inhibitory[k]) * scale, s.V[k], s.c[k],
                            s.extra[0][k], s.refractory[k], in.current ? in.current[k] : 0.0);
  }

 private:
  SplitPropagators p_;
};

// Two currents, parameters that vary per neuron: one set of propagators per neuron, the same step.
class SplitPerNeuronUpdate final : public PopulationUpdate {
 public:
  SplitPerNeuronUpdate(const PopulationSpec& spec, const ModelContext& ctx, const NeuronColumns& s)
      : table_(propagator_table<SplitParameters, SplitPropagators>(spec, ctx, s)) {}
  void step(const StepInput& in, const NeuronColumns& s, uint8_t* fired) const override {
    const double scale = in.input_scale;
    for (uint64_t k = 0; k < s.n; ++k)
      fired[k] = step_split(table_[k], double(in.input[k]) * scale, double(in.inhibitory[k]) * scale, s.V[k],
                            s.c[k], s.extra[0][k], s.refractory[k], in.current ? in.current[k] : 0.0);
  }

 private:
  std::vector<SplitPropagators> table_;
};

void check(const PopulationSpec& spec, double) {
  require_parameters(spec, kParameters);
  check_per_neuron(spec, kPerNeuron);
  check_initial(spec, kInitialReset);
  if (!(parameter(spec, "tau_m_ms") > 0 && parameter(spec, "tau_syn_ex_ms") > 0 &&
        parameter(spec, "tau_syn_in_ms") > 0 && parameter(spec, "C_m_pF") > 0))
    throw std::invalid_argument("psc_exp population '" + spec.name +
                                "' needs positive tau_m_ms, tau_syn_ex_ms, tau_syn_in_ms and C_m_pF");
}

NeuronModel::Layout layout(const PopulationSpec& spec) {
  const bool split = splits(spec);
  return {split, split ? 1 : 0};
}

void initialize(const PopulationSpec& spec, const Key& key, double, const NeuronColumns& s) {
  initial_potentials_absolute(spec, key, s);
}

std::unique_ptr<PopulationUpdate> make_update(const PopulationSpec& spec, const ModelContext& ctx,
                                              const NeuronColumns& s) {
  if (splits(spec)) {
    if (parameters_vary(spec)) return std::make_unique<SplitPerNeuronUpdate>(spec, ctx, s);
    return std::make_unique<SplitUpdate>(spec, ctx);
  }
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

const NeuronModel model{"psc_exp", check, initialize, make_update, /*split_input=*/false, /*extra_columns=*/0,
                        /*layout=*/layout, /*takes_current=*/true, /*inhibitory_column=*/0};

}  // namespace ranvier::psc_exp
