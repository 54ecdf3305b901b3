// STDP: building the plastic stores and target histories, and the update at each delivery
// (see plasticity.hpp for the semantics). The arithmetic follows NEST's expression for expression
// (the same divisions, products and clipping), so weights agree to rounding.
#include "core/plasticity.hpp"

#include <algorithm>
#include <stdexcept>

namespace ranvier {

namespace {

// NEST's facilitate_ / depress_: the stdp* rules in units of w_max (mu 0: additive, 1:
// multiplicative; pow(x, 0) and pow(x, 1) are exact, so the shortcuts change no bit), and the
// power law in absolute units.
struct WeightDependence {
  const PlasticitySpec& p;
  double up(double w, double k_plus) const {
    if (p.rule == PlasticityRule::stdp_power_law) return w + (p.lambda * std::pow(w, p.mu) * k_plus);
    const double x = 1.0 - (w / p.w_max);
    const double f = p.mu_plus == 0.0 ? 1.0 : p.mu_plus == 1.0 ? x : std::pow(x, p.mu_plus);
    const double norm_w = (w / p.w_max) + (p.lambda * f * k_plus);
    return norm_w < 1.0 ? norm_w * p.w_max : p.w_max;
  }
  double down(double w, double k_minus) const {
    if (p.rule == PlasticityRule::stdp_power_law) {
      const double new_w = w - (p.lambda * p.alpha * w * k_minus);
      return new_w > 0.0 ? new_w : 0.0;
    }
    const double x = w / p.w_max;
    const double f = p.mu_minus == 0.0 ? 1.0 : p.mu_minus == 1.0 ? x : std::pow(x, p.mu_minus);
    const double norm_w = (w / p.w_max) - (p.alpha * p.lambda * f * k_minus);
    return norm_w > 0.0 ? norm_w * p.w_max : 0.0;
  }
};

// The target's spikes in (t1, t2] (NEST's get_history): spikes[lo, hi).
inline void spikes_between(const PostHistory::Neuron& n, int64_t t1, int64_t t2, size_t& lo, size_t& hi) {
  size_t i = n.spikes.size();
  while (i > n.head && n.spikes[i - 1].step > t2) --i;
  hi = i;
  while (i > n.head && n.spikes[i - 1].step > t1) --i;
  lo = i;
}

// The last spike strictly before t (NEST's get_K_value(s)): its index + 1, or 0 for none.
inline size_t last_before(const PostHistory::Neuron& n, size_t hi, int64_t t) {
  size_t k = hi;
  while (k > n.head && n.spikes[k - 1].step >= t) --k;
  return k > n.head ? k : 0;
}

inline int32_t to_fixed(double w, double scale) {
  const double f = std::rint(w * scale);
  return int32_t(std::clamp(f, -2147483647.0, 2147483647.0));
}

}  // namespace

void build_plastic_store(const EngineConfig& cfg, uint32_t j, const ThreadNeurons& neurons, SynapseStore& grouped,
                         const std::vector<double>& drawn, PlasticStore& out) {
  out = PlasticStore();
  out.projection = j;
  out.rule = cfg.projections[j].plasticity;
  out.row_head = std::move(grouped.row_head);
  out.seg_first = std::move(grouped.seg_first);
  out.seg_delay = std::move(grouped.seg_delay);
  const uint64_t n = grouped.synapses.size();
  out.neuron.resize(n);
  out.weight.resize(n);
  for (uint64_t i = 0; i < n; ++i) {
    const uint32_t column = grouped.synapses[i].target;
    const uint64_t k = neurons.neuron_of_column(column);
    out.neuron[i] = uint32_t(k);
    out.column_offset = column - k;        // the same for every synapse: one target population
    out.weight[i] = drawn[uint32_t(grouped.synapses[i].weight)];
  }
  // exp(dt / tau_plus) as NEST writes it for each rule: a division, or the power law's product
  // with the inverse
  out.decay_plus = StepDecay(cfg.resolution_ms, out.rule.tau_plus_ms, out.rule.rule != PlasticityRule::stdp_power_law);
  const size_t segments = out.seg_delay.size();
  out.seg_last.assign(segments, 0);
  out.seg_k_plus.assign(segments, 0.0);
  if (out.rule.rule == PlasticityRule::stdp_nn_pre_centered) out.k_plus.assign(n, 0.0);
  grouped = SynapseStore();
}

void build_post_history(const EngineConfig& cfg, const ThreadNeurons& neurons, const std::vector<PlasticStore>& stores,
                        int64_t keep_steps, PostHistory& out) {
  out = PostHistory();
  uint64_t synapses = 0;
  for (const auto& st : stores) synapses += st.size();
  if (!synapses) return;
  out.h = cfg.resolution_ms;
  out.keep_steps = keep_steps;
  out.neurons.resize(neurons.size());
  out.decays.reserve(cfg.populations.size());          // never reallocated: neurons point into it
  for (const auto& pop : cfg.populations) out.decays.emplace_back(cfg.resolution_ms, pop.tau_minus_ms, false);
  for (const auto& range : neurons.ranges)
    for (uint64_t k = range.begin; k < range.end; ++k) out.neurons[k].decay = &out.decays[range.population];
  for (const auto& st : stores)
    for (uint32_t k : st.neuron) ++out.neurons[k].incoming;
}

uint32_t deliver_plastic_segment(PlasticStore& st, uint32_t h, int64_t step, PostHistory& history, int32_t* row,
                                 double scale) {
  const WeightDependence dep{st.rule};
  const PlasticityRule rule = st.rule.rule;
  const int64_t d = st.seg_delay[h];
  const int64_t t_pre = step + 1 - d;       // the pre-synaptic spike's time (steps)
  const int64_t t_last = st.seg_last[h];    // the previous one's
  const double k_plus = st.seg_k_plus[h];
  // Post-synaptic spikes reach the synapse d later: those in (t_last - d, t_pre - d] pair with
  // t_last (facilitation); K- just before t_pre - d depresses.
  const int64_t t1 = t_last - d, t2 = t_pre - d;
  const uint32_t first = st.seg_first[h], end = st.seg_first[h + 1];
  for (uint32_t i = first; i < end; ++i) {
    PostHistory::Neuron& n = history.neurons[st.neuron[i]];
    double w = st.weight[i];
    size_t lo, hi;
    spikes_between(n, t1, t2, lo, hi);
    for (size_t j = lo; j < hi; ++j) ++n.spikes[j].reads;
    const size_t before = last_before(n, hi, t2);
    // exp((t_i - t) / tau_minus) of the last spike before t2, as NEST's archiving node writes it
    const double nearest = before ? (*n.decay)(t2 - n.spikes[before - 1].step) : 0.0;
    // exp(minus_dt / tau_plus), minus_dt = t_last - (t_post + d): a target spike's pairing
    auto decay = [&](size_t j) { return st.decay_plus(n.spikes[j].step + d - t_last); };
    switch (rule) {
      case PlasticityRule::stdp:
      case PlasticityRule::stdp_power_law:
        for (size_t j = lo; j < hi; ++j) w = dep.up(w, k_plus * decay(j));
        w = dep.down(w, before ? n.spikes[before - 1].k_minus * nearest : 0.0);
        break;
      case PlasticityRule::stdp_nn_symmetric:
        for (size_t j = lo; j < hi; ++j) w = dep.up(w, decay(j));
        w = dep.down(w, nearest);
        break;
      case PlasticityRule::stdp_nn_pre_centered: {
        double kp = st.k_plus[i];
        if (lo < hi) {
          w = dep.up(w, kp * decay(lo));
          kp = 0;
        }
        w = dep.down(w, nearest);
        st.k_plus[i] = kp * st.decay_plus(t_pre - t_last) + 1.0;
        break;
      }
      case PlasticityRule::stdp_nn_restricted:
        if (lo < hi) {
          w = dep.up(w, decay(lo));
          w = dep.down(w, nearest);
        }
        break;
      case PlasticityRule::none:
        break;
    }
    st.weight[i] = w;
    row[st.neuron[i] + st.column_offset] += to_fixed(w, scale);
  }
  if (rule == PlasticityRule::stdp || rule == PlasticityRule::stdp_power_law)
    st.seg_k_plus[h] = k_plus * st.decay_plus(t_pre - t_last) + 1.0;
  st.seg_last[h] = t_pre;
  return end - first;
}

double weight_up_to_date(const PlasticStore& st, uint32_t h, uint32_t i, const PostHistory& history, int64_t now) {
  double w = st.weight[i];
  if (history.empty()) return w;
  const WeightDependence dep{st.rule};
  const PostHistory::Neuron& n = history.neurons[st.neuron[i]];
  const int64_t d = st.seg_delay[h], t_last = st.seg_last[h];
  size_t lo, hi;
  spikes_between(n, t_last - d, now - d, lo, hi);
  auto decay = [&](size_t j) { return st.decay_plus(n.spikes[j].step + d - t_last); };
  switch (st.rule.rule) {
    case PlasticityRule::stdp:
    case PlasticityRule::stdp_power_law:
      for (size_t j = lo; j < hi; ++j) w = dep.up(w, st.seg_k_plus[h] * decay(j));
      break;
    case PlasticityRule::stdp_nn_symmetric:
      for (size_t j = lo; j < hi; ++j) w = dep.up(w, decay(j));
      break;
    case PlasticityRule::stdp_nn_pre_centered:
      if (lo < hi) w = dep.up(w, st.k_plus[i] * decay(lo));
      break;
    case PlasticityRule::stdp_nn_restricted:
      if (lo < hi) w = dep.up(w, decay(lo));
      break;
    case PlasticityRule::none:
      break;
  }
  return w;
}

}  // namespace ranvier
