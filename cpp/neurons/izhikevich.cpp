// Izhikevich's simple model (NEST's izhikevich; PyNN's Izhikevich):
//   dV/dt = 0.04 V^2 + 5 V + 140 - U + I_e + I,   dU/dt = a (b V - U),
//   V >= V_th: V = c, U += d;
// V in mV (absolute: the model has no resting potential), U and the currents in mV/ms. Input
// jumps V (mV). Integrated per step as NEST 3.10 does: forward Euler (consistent_integration, the
// default), or the published scheme (two half steps of V, then U from the new V); then V's lower
// bound V_min, then the threshold. An injected current acts as NEST's I (its value of the step).
#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/spec.hpp"
#include "neurons/neuron_model.hpp"

namespace ranvier::izhikevich {
namespace {

// State: V (mV, absolute), c = U (traced). a, b, c_mV, d and I_e may vary per neuron: the update
// keeps each neuron's (the range's, in its order), read once when it is made.
struct Constants {
  std::vector<double> a, b, c, d, I_e;
  double V_th, V_min, h;
  bool consistent;
  Constants(const PopulationSpec& p, const ModelContext& ctx, const NeuronColumns& s)
      : V_th(parameter(p, "V_th_mV")), V_min(parameter(p, "V_min_mV")), h(ctx.h),
        consistent(parameter(p, "consistent_integration") != 0.0) {
    const NeuronParameters v(p, ctx.key);
    for (uint64_t k = 0; k < s.n; ++k) {
      a.push_back(v("a", s.gid[k]));
      b.push_back(v("b", s.gid[k]));
      c.push_back(v("c_mV", s.gid[k]));
      d.push_back(v("d_mV_per_ms", s.gid[k]));
      I_e.push_back(v("I_e_pA", s.gid[k]));
    }
  }
};

class Update final : public PopulationUpdate {
 public:
  Update(const PopulationSpec& spec, const ModelContext& ctx, const NeuronColumns& s) : p_(spec, ctx, s) {}
  void step(const StepInput& in, const NeuronColumns& s, uint8_t* fired) const override {
    const double h = p_.h;
    for (uint64_t k = 0; k < s.n; ++k) {
      const double I = in.current ? in.current[k] : 0.0;
      const double spikes = double(in.input[k]) * in.input_scale;
      const double a = p_.a[k], b = p_.b[k], I_e = p_.I_e[k];
      double v = s.V[k], u = s.c[k];
      if (p_.consistent) {
        const double v_old = v, u_old = u;
        v += h * (0.04 * v_old * v_old + 5.0 * v_old + 140.0 - u_old + I + I_e) + spikes;
        u += h * a * (b * v_old - u_old);
      } else {
        v += h * 0.5 * (0.04 * v * v + 5.0 * v + 140.0 - u + I + I_e + spikes);
        v += h * 0.5 * (0.04 * v * v + 5.0 * v + 140.0 - u + I + I_e + spikes);
        u += h * a * (b * v - u);
      }
      v = v < p_.V_min ? p_.V_min : v;
      fired[k] = v >= p_.V_th;
      if (fired[k]) {
        v = p_.c[k];
        u = u + p_.d[k];
      }
      s.V[k] = v;
      s.c[k] = u;
    }
  }

 private:
  Constants p_;
};

const char* const kParameters[] = {"a", "b", "c_mV", "d_mV_per_ms", "I_e_pA", "V_th_mV", "V_min_mV", "consistent_integration",
                                   "V0_mV", "U0_mV_per_ms", nullptr};
const char* const kPerNeuron[] = {"a", "b", "c_mV", "d_mV_per_ms", "I_e_pA", "U0_mV_per_ms", nullptr};   // and V

void check(const PopulationSpec& spec, double) {
  require_parameters(spec, kParameters);
  check_per_neuron(spec, kPerNeuron);
  check_initial(spec, kInitialReset);
  if (!(parameter(spec, "V_min_mV") < parameter(spec, "V_th_mV")))
    throw std::invalid_argument("izhikevich population '" + spec.name + "': V_min_mV must lie below V_th_mV");
}

void initialize(const PopulationSpec& spec, const Key& key, double, const NeuronColumns& s) {
  const NeuronParameters v(spec, key);
  for (uint64_t k = 0; k < s.n; ++k) {
    const uint64_t g = s.gid[k];
    s.V[k] = v.varies(kInitialV) ? v(kInitialV, g) : parameter(spec, "V0_mV");
    s.c[k] = v("U0_mV_per_ms", g);
    s.refractory[k] = 0;
  }
}

std::unique_ptr<PopulationUpdate> make_update(const PopulationSpec& spec, const ModelContext& ctx,
                                              const NeuronColumns& s) {
  return std::make_unique<Update>(spec, ctx, s);
}

}  // namespace

extern const NeuronModel model;   // external linkage: registry.cpp lists it
const NeuronModel model{"izhikevich", check, initialize, make_update,
                        /*split_input=*/false, /*extra_columns=*/0, /*layout=*/nullptr, /*takes_current=*/true};

}  // namespace ranvier::izhikevich
