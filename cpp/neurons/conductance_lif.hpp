// What NEST's two conductance-based leaky integrate-and-fire models share (iaf_cond_exp.cpp,
// iaf_cond_alpha.cpp): the parameters they read and how they check them, the constants both
// updates use, and the two update classes (one set of constants for the range, or one per
// neuron) around each model's own step. What is a model's own (the shape of its conductances,
// its state vector, its right-hand side and its step) stays in the model's file.
#pragma once
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/spec.hpp"
#include "neurons/neuron_model.hpp"

namespace ranvier::conductance_lif {

// The parameters the models read by the front end's names (potentials relative to rest: the
// front end's absolute ones are taken relative to E_L_mV here), for the population or one neuron
// where parameters vary per neuron.
struct Parameters {
  double g_L_nS, c_m_pF, E_ex_mV, E_in_mV, tau_syn_ex_ms, tau_syn_in_ms, i_e_pA, theta_mV, reset_mV;
  int64_t refractory_steps;
  static Parameters of(const PopulationSpec& p, double h) {
    const double E_L = parameter(p, "E_L_mV");
    return {parameter(p, "g_L_nS"),           parameter(p, "C_m_pF"),
            parameter(p, "E_ex_mV") - E_L,    parameter(p, "E_in_mV") - E_L,
            parameter(p, "tau_syn_ex_ms"),    parameter(p, "tau_syn_in_ms"),
            parameter(p, "I_e_pA"),           parameter(p, "V_th_mV") - E_L,
            parameter(p, "V_reset_mV") - E_L, steps_of(parameter(p, "tau_arp_ms"), h)};
  }
  static Parameters of_neuron(const NeuronParameters& v, uint64_t gid, double h) {
    const double E_L = v("E_L_mV", gid);
    return {v("g_L_nS", gid),         v("C_m_pF", gid),          v("E_ex_mV", gid) - E_L,
            v("E_in_mV", gid) - E_L,  v("tau_syn_ex_ms", gid),   v("tau_syn_in_ms", gid),
            v("I_e_pA", gid),         v("V_th_mV", gid) - E_L,   v("V_reset_mV", gid) - E_L,
            steps_of(v("tau_arp_ms", gid), h)};
  }
};

// The parameters that may vary per neuron (all but those of the initial V).
inline constexpr const char* kPerNeuron[] = {"E_L_mV",        "V_th_mV",       "V_reset_mV", "C_m_pF",
                                             "g_L_nS",        "E_ex_mV",       "E_in_mV",    "tau_syn_ex_ms",
                                             "tau_syn_in_ms", "tau_arp_ms",    "I_e_pA",     nullptr};
// Those of the initial V, besides.
inline constexpr const char* kInitialParameters[] = {"V0_mean_mV", "V0_sd_mV", nullptr};

// The constants of one neuron's update that both models read; a model's own Constants derives
// from this and adds what its right-hand side and its input need.
struct Constants {
  double g_L, c_m, E_ex, E_in, tau_ex, tau_in, i_e, theta, reset, h;
  int32_t refractory;
  Constants(const Parameters& p, double h_ms)
      : g_L(p.g_L_nS),
        c_m(p.c_m_pF),
        E_ex(p.E_ex_mV),
        E_in(p.E_in_mV),
        tau_ex(p.tau_syn_ex_ms),
        tau_in(p.tau_syn_in_ms),
        i_e(p.i_e_pA),
        theta(p.theta_mV),
        reset(p.reset_mV),
        h(h_ms),
        refractory(int32_t(p.refractory_steps)) {}
};

// The end of a step, after the integration and the input, in NEST's order: while refractory V is
// held at the reset and the counter counts down, else V >= theta spikes, resets V and starts the
// refractory period. Returns whether the neuron spiked.
inline bool refractory_or_spike(const Constants& p, double& V, int32_t& r) {
  if (r > 0) {
    --r;
    V = p.reset;
    return false;
  }
  if (V < p.theta) return false;
  r = p.refractory;
  V = p.reset;
  return true;
}

// Refuses a population of `model` whose parameters are missing, vary where they may not, or
// cannot be integrated (a capacitance, leak or time constant that is not positive).
inline void check(const PopulationSpec& spec, double h, const char* model) {
  require_parameters(spec, kPerNeuron);
  require_parameters(spec, kInitialParameters);
  check_per_neuron(spec, kPerNeuron);
  check_initial(spec, kInitialReset);
  const Parameters p = Parameters::of(spec, h);
  if (!(p.g_L_nS > 0 && p.c_m_pF > 0 && p.tau_syn_ex_ms > 0 && p.tau_syn_in_ms > 0))
    throw std::invalid_argument(std::string(model) + " population '" + spec.name +
                                "' needs positive g_L_nS, C_m_pF, tau_syn_ex_ms and tau_syn_in_ms");
}

// The initial V: initial_potentials_absolute (the other state starts at 0).
inline void initialize(const PopulationSpec& spec, const Key& key, double, const NeuronColumns& s) {
  initial_potentials_absolute(spec, key, s);
}

// The updates, for a model that gives its Parameters (with of(spec, h) and of_neuron(values, gid,
// h); this file's for iaf_cond_exp and iaf_cond_alpha, aeif.hpp's for the aeif models), its
// Constants (made from Parameters and h) and
//   static bool step(const Constants&, const StepInput&, const NeuronColumns&, uint64_t k, double scale):
// one time step of neuron k of the range, `scale` turning the input row into nS.
// The homogeneous update: one set of constants for the range.
template <class Model>
class Update final : public PopulationUpdate {
 public:
  Update(const PopulationSpec& spec, const ModelContext& ctx)
      : p_(Model::Parameters::of(spec, ctx.h), ctx.h) {}
  void step(const StepInput& in, const NeuronColumns& s, uint8_t* fired) const override {
    const double scale = in.input_scale;
    for (uint64_t k = 0; k < s.n; ++k) fired[k] = Model::step(p_, in, s, k, scale);
  }

 private:
  typename Model::Constants p_;
};

// Parameters that vary per neuron: one set of constants per neuron of the range, the same step.
template <class Model>
class PerNeuronUpdate final : public PopulationUpdate {
 public:
  PerNeuronUpdate(const PopulationSpec& spec, const ModelContext& ctx, const NeuronColumns& s) {
    const NeuronParameters values(spec, ctx.key);
    table_.reserve(s.n);
    for (uint64_t k = 0; k < s.n; ++k)
      table_.emplace_back(Model::Parameters::of_neuron(values, s.gid[k], ctx.h), ctx.h);
  }
  void step(const StepInput& in, const NeuronColumns& s, uint8_t* fired) const override {
    const double scale = in.input_scale;
    for (uint64_t k = 0; k < s.n; ++k) fired[k] = Model::step(table_[k], in, s, k, scale);
  }

 private:
  std::vector<typename Model::Constants> table_;
};

template <class Model>
std::unique_ptr<PopulationUpdate> make_update(const PopulationSpec& spec, const ModelContext& ctx,
                                              const NeuronColumns& s) {
  if (parameters_vary(spec)) return std::make_unique<PerNeuronUpdate<Model>>(spec, ctx, s);
  return std::make_unique<Update<Model>>(spec, ctx);
}

}  // namespace ranvier::conductance_lif
