// NEST's tsodyks_synapse: short-term depression and facilitation (Tsodyks, Uziel & Markram 2000),
// as NEST 3.10 computes it (models/tsodyks_synapse.h, send()). Each synapse keeps the release
// probability u, the recovered resources x and the active resources y (its state, three doubles,
// starting at the projection's u0, x0, y0); its weight never changes. At a pre-synaptic spike at
// t_spike, h = t_spike - t_last (ms; t_last, the source's previous spike, starts at 0):
//   Puu = tau_fac == 0 ? 0 : exp(-h / tau_fac), Pyy = exp(-h / tau_psc),
//   Pzz = expm1(-h / tau_rec), Pxy = (Pzz tau_rec - (Pyy - 1) tau_psc) / (tau_psc - tau_rec),
//   z = 1 - x - y; u *= Puu; x += Pxy y - Pzz z; y *= Pyy; u += U (1 - u);
//   delta = u x; x -= delta; y += delta; the spike is delivered with weight * delta.
// The same operations in the same order on the same operands, so the state is NEST's bit for bit.
// Times are NEST's: t = steps * tics_per_step * (1 / tics_per_ms) (its Time::get_ms with 1000
// tics per ms), so h is the difference NEST takes. The propagators depend on h alone, the same
// for every synapse of a segment: they are computed once per segment (at_spike).
#include <cmath>
#include <memory>
#include <string>

#include "synapses/segment_delivery.hpp"
#include "synapses/synapse_rule.hpp"

namespace ranvier::tsodyks {

struct Parameters {
  double U, tau_psc_ms, tau_rec_ms, tau_fac_ms, u0, x0, y0;
  explicit Parameters(const PlasticitySpec& p)
      : U(rule_parameter(p, "U")), tau_psc_ms(rule_parameter(p, "tau_psc_ms")),
        tau_rec_ms(rule_parameter(p, "tau_rec_ms")), tau_fac_ms(rule_parameter(p, "tau_fac_ms")),
        u0(rule_parameter(p, "u0")), x0(rule_parameter(p, "x0")), y0(rule_parameter(p, "y0")) {}
};

struct Rule {
  static constexpr uint32_t kState = 3;          // u, x, y
  static constexpr bool kSegmentTrace = false;
  static constexpr bool kReadsTarget = false;
  static constexpr bool kFixedWeight = true;     // delivered: weight * u x
  Parameters p;
  int64_t tics_per_step;                         // NEST's time grid: 1000 tics per ms
  struct Propagators {
    double puu, pyy, pzz, pxy;
  };
  double ms(int64_t step) const { return (1.0 / 1000.0) * double(step * tics_per_step); }
  Propagators at_spike(const PreSpike& pre) const {
    const double h = ms(pre.step) - ms(pre.step - pre.since_last);
    Propagators q;
    q.puu = p.tau_fac_ms == 0.0 ? 0.0 : std::exp(-h / p.tau_fac_ms);
    q.pyy = std::exp(-h / p.tau_psc_ms);
    q.pzz = std::expm1(-h / p.tau_rec_ms);
    q.pxy = (q.pzz * p.tau_rec_ms - (q.pyy - 1.0) * p.tau_psc_ms) / (p.tau_psc_ms - p.tau_rec_ms);
    return q;
  }
  template <class Target>
  double update(double w, const Target&, const Propagators& q, double* s) const {
    double u = s[0], x = s[1], y = s[2];
    const double z = 1.0 - x - y;
    u *= q.puu;
    x += q.pxy * y - q.pzz * z;
    y *= q.pyy;
    u += p.U * (1.0 - u);
    const double delta = u * x;
    x -= delta;
    y += delta;
    s[0] = u;
    s[1] = x;
    s[2] = y;
    return delta * w;
  }
  template <class Target>
  double facilitated(double w, const Target&, const PreSpike&, const double*) const {
    return w;
  }
};

void check(const PlasticitySpec& spec, const std::string& where) {
  const Parameters p(spec);
  if (!(p.U >= 0 && p.U <= 1)) throw std::invalid_argument(where + "U must lie in [0, 1]");
  if (!(p.tau_psc_ms > 0)) throw std::invalid_argument(where + "tau_psc_ms must be positive");
  if (!(p.tau_rec_ms > 0)) throw std::invalid_argument(where + "tau_rec_ms must be positive");
  if (!(p.tau_fac_ms >= 0)) throw std::invalid_argument(where + "tau_fac_ms must be at least 0");
  if (p.tau_psc_ms == p.tau_rec_ms)
    throw std::invalid_argument(where + "tau_psc_ms must differ from tau_rec_ms (the propagator divides by their difference)");
  if (!(p.u0 >= 0 && p.u0 <= 1)) throw std::invalid_argument(where + "u0 must lie in [0, 1]");
  if (!(p.x0 >= 0 && p.y0 >= 0 && p.x0 + p.y0 <= 1))
    throw std::invalid_argument(where + "x0 and y0 must be at least 0 with x0 + y0 <= 1");
}

std::unique_ptr<PlasticDelivery> make(const PlasticitySpec& spec, const RuleBuild& b) {
  const double tics = b.h * 1000.0;
  if (std::abs(tics - std::round(tics)) > 1e-6 * tics)
    throw std::invalid_argument("tsodyks: the resolution must be a whole number of microseconds (NEST's time grid)");
  return compiled(Rule{Parameters(spec), int64_t(std::llround(tics))});
}

void initial_state(const PlasticitySpec& spec, const SynapseId&, double* s) {
  const Parameters p(spec);
  s[0] = p.u0;
  s[1] = p.x0;
  s[2] = p.y0;
}

// The weights' sign, which the front end gives as a parameter (they are all of one sign).
bool negative(const PlasticitySpec& spec) { return rule_parameter(spec, "weight_sign") < 0; }

extern const SynapseRule rule;
const SynapseRule rule{"tsodyks", true, check, make, 3, negative, false, false, initial_state};

}  // namespace ranvier::tsodyks
