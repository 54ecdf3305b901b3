// NEST's quantal_stp_synapse (PyNN's MultiQuantalSynapse): n release sites, each available or
// depleted. At a pre-synaptic spike, after the first, the release probability u becomes
// U + u (1 - U) exp(-dt / tau_fac) (0 for tau_fac 0), and each depleted site has recovered with
// probability 1 - exp(-dt / tau_rec), dt being the time since the previous spike; then each
// available site releases with probability u, and the spike is delivered with weight x the sites
// released (nothing where none did), which are depleted. The weight never changes.
//
// The draws are Ranvier's own, as in bernoulli.cpp: Philox of make_counter(target gid,
// Purpose::release, projection, index onto the target << 8 | block, the spike's step), n uniforms
// per spike (one per site: the depleted ones' recovery, then the available ones' release, as NEST
// orders them), 4 per block. The synapse's target gid and index are its state with u, the sites
// available and the previous spike's step, so any decomposition, and a resumed run, release the
// same. NEST draws from its own generators: the two agree in distribution, not spike for spike.
// The first spike finds u0 and a0 (NEST's u and a) as they were set.
#include <cmath>
#include <memory>
#include <string>

#include "base/philox.hpp"
#include "synapses/segment_delivery.hpp"
#include "synapses/synapse_rule.hpp"

namespace ranvier::quantal_stp {

constexpr int kMaxSites = 1024;                    // 256 blocks of 4 uniforms per spike

struct Rule {
  // target gid, index onto it, u, sites available, the previous spike's step (-1: none yet)
  static constexpr uint32_t kState = 5;
  static constexpr bool kSegmentTrace = false;
  static constexpr bool kReadsTarget = false;
  static constexpr bool kFixedWeight = true;
  double U, tau_rec_ms, tau_fac_ms, h;
  int n;
  Key key;
  uint32_t projection;
  struct Spike {
    int64_t step;                                  // the pre-synaptic spike's
  };
  Spike at_spike(const PreSpike& pre) const { return {pre.step}; }

  template <class Target>
  double update(double w, const Target&, const Spike& spike, double* s) const {
    const uint64_t target = uint64_t(s[0]);
    const uint32_t index = uint32_t(s[1]);
    uint32_t block = 0, pos = 4;
    Counter words{};
    auto uniform = [&] {
      if (pos == 4) {
        words = philox4x32_10(make_counter(target, Purpose::release, projection, (index << 8) | block++,
                                           uint32_t(spike.step)), key);
        pos = 0;
      }
      return to_uniform(words[pos++]);
    };
    double u = s[2];
    int available = int(s[3]);
    if (s[4] >= 0) {                               // not the synapse's first spike
      const double dt = double(spike.step - int64_t(s[4])) * h;
      const double recovery = 1.0 - std::exp(-dt / tau_rec_ms);
      const double u_decay = tau_fac_ms < 1e-10 ? 0.0 : std::exp(-dt / tau_fac_ms);
      u = U + u * (1.0 - U) * u_decay;
      for (int depleted = n - available; depleted > 0; --depleted)
        if (uniform() < recovery) ++available;
    }
    int released = 0;
    for (int i = available; i > 0; --i)
      if (uniform() < u) ++released;
    s[2] = u;
    s[3] = double(available - released);
    s[4] = double(spike.step);
    return released * w;
  }
  template <class Target>
  double facilitated(double w, const Target&, const PreSpike&, const double*) const {
    return w;
  }
};

void check(const PlasticitySpec& spec, const std::string& where) {
  const double U = rule_parameter(spec, "U"), u0 = rule_parameter(spec, "u0"), n = rule_parameter(spec, "n");
  if (!(U >= 0 && U <= 1)) throw std::invalid_argument(where + "U must lie in [0, 1]");
  if (!(u0 >= 0 && u0 <= 1)) throw std::invalid_argument(where + "u0 must lie in [0, 1]");
  const double a0 = rule_parameter(spec, "a0");
  if (!(a0 >= 0 && a0 <= n && a0 == std::floor(a0))) throw std::invalid_argument(where + "a0 must be a whole number from 0 to n");
  if (!(rule_parameter(spec, "tau_rec_ms") > 0)) throw std::invalid_argument(where + "tau_rec_ms must be positive");
  if (!(rule_parameter(spec, "tau_fac_ms") >= 0)) throw std::invalid_argument(where + "tau_fac_ms must be at least 0");
  if (!(n >= 1 && n <= kMaxSites && n == std::floor(n)))
    throw std::invalid_argument(where + "n must be a whole number of release sites from 1 to " +
                                std::to_string(kMaxSites));
}

std::unique_ptr<PlasticDelivery> make(const PlasticitySpec& spec, const RuleBuild& b) {
  return compiled(Rule{rule_parameter(spec, "U"), rule_parameter(spec, "tau_rec_ms"), rule_parameter(spec, "tau_fac_ms"),
                       b.h, int(rule_parameter(spec, "n")), key_from_seed(b.seed), b.projection});
}

void initial_state(const PlasticitySpec& spec, const SynapseId& id, double* s) {
  if (id.index >= (1u << 24)) throw std::invalid_argument("quantal_stp: more than 2^24 synapses between one pair");
  s[0] = double(id.target);
  s[1] = double(id.index);
  s[2] = rule_parameter(spec, "u0");
  s[3] = rule_parameter(spec, "a0");
  s[4] = -1.0;
}

bool negative(const PlasticitySpec& spec) { return rule_parameter(spec, "weight_sign") < 0; }

extern const SynapseRule rule;
const SynapseRule rule{"quantal_stp", true, check, make, 5, negative, false, false, initial_state};

}  // namespace ranvier::quantal_stp
