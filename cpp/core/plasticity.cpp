// STDP: building the plastic stores and target histories, and the update at each delivery
// (see plasticity.hpp for the semantics). The arithmetic follows NEST's expression for expression
// (the same divisions, products and clipping), so weights agree to rounding.
#include "core/plasticity.hpp"

#include <algorithm>
#include <stdexcept>

namespace ranvier {

namespace {

// NEST's facilitate_ / depress_: the stdp* rules in units of w_max, and the power law in
// absolute units. The shape is a template parameter, so the common cases compile to their own
// loops: mu 0 (additive) and 1 (multiplicative) take no pow (pow(x, 0) = 1 and pow(x, 1) = x
// exactly, so no bit changes), any other mu takes pow as NEST does.
enum class Shape { additive, multiplicative, general, power_law };

template <Shape S>
struct WeightDependence {
  const PlasticitySpec& p;
  double up(double w, double k_plus) const {
    if constexpr (S == Shape::power_law) {
      return w + (p.lambda * std::pow(w, p.mu) * k_plus);
    } else {
      const double x = 1.0 - (w / p.w_max);
      const double f = S == Shape::additive ? 1.0 : S == Shape::multiplicative ? x : std::pow(x, p.mu_plus);
      const double norm_w = (w / p.w_max) + (p.lambda * f * k_plus);
      return norm_w < 1.0 ? norm_w * p.w_max : p.w_max;
    }
  }
  double down(double w, double k_minus) const {
    if constexpr (S == Shape::power_law) {
      const double new_w = w - (p.lambda * p.alpha * w * k_minus);
      return new_w > 0.0 ? new_w : 0.0;
    } else {
      const double x = w / p.w_max;
      const double f = S == Shape::additive ? 1.0 : S == Shape::multiplicative ? x : std::pow(x, p.mu_minus);
      const double norm_w = (w / p.w_max) - (p.alpha * p.lambda * f * k_minus);
      return norm_w > 0.0 ? norm_w * p.w_max : 0.0;
    }
  }
};

SegmentDelivery segment_delivery(const PlasticitySpec& p);   // below, with the segment loop

Shape shape_of(const PlasticitySpec& p) {
  if (p.rule == PlasticityRule::stdp_power_law) return Shape::power_law;
  if (p.mu_plus == 0.0 && p.mu_minus == 0.0) return Shape::additive;
  if (p.mu_plus == 1.0 && p.mu_minus == 1.0) return Shape::multiplicative;
  return Shape::general;
}

// The target's spikes in (t1, t2] (NEST's get_history): spikes[lo, hi).
inline void spikes_between(const PostHistory::Where& n, int64_t t1, int64_t t2, size_t& lo, size_t& hi) {
  size_t i = n.size;
  while (i > n.head && n.spikes[i - 1].step > t2) --i;
  hi = i;
  while (i > n.head && n.spikes[i - 1].step > t1) --i;
  lo = i;
}

// The last spike strictly before t (NEST's get_K_value(s)): its index + 1, or 0 for none.
inline size_t last_before(const PostHistory::Where& n, size_t hi, int64_t t) {
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
  out.seg_trace.assign(out.seg_delay.size(), SegmentTrace());
  out.deliver = segment_delivery(out.rule);
  if (out.rule.rule == PlasticityRule::stdp_nn_pre_centered) out.k_plus.assign(n, 0.0);
  grouped = SynapseStore();
}

void build_post_history(const EngineConfig& cfg, const ThreadNeurons& neurons, std::vector<PlasticStore>& stores,
                        int64_t keep_steps, PostHistory& out) {
  out = PostHistory();
  uint64_t synapses = 0;
  for (const auto& st : stores) synapses += st.size();
  if (!synapses) return;
  out.h = cfg.resolution_ms;
  out.keep_steps = keep_steps;
  out.hot.resize(neurons.size());
  out.where.resize(neurons.size());
  out.cold.resize(neurons.size());
  out.decays.reserve(cfg.populations.size());          // never reallocated: neurons point into it
  for (const auto& pop : cfg.populations) out.decays.emplace_back(cfg.resolution_ms, pop.tau_minus_ms, false);
  for (const auto& range : neurons.ranges)
    for (uint64_t k = range.begin; k < range.end; ++k) out.cold[k].decay = &out.decays[range.population];
  for (auto& st : stores) {
    st.decay_minus = &out.decays[cfg.projections[st.projection].target];
    for (uint32_t k : st.neuron)
      if (++out.cold[k].incoming > kMaxPlasticIncoming)
        throw std::runtime_error("a neuron has more than 2^24 - 1 incoming plastic synapses");
  }
}

namespace {

// One segment: every synapse's update, then the segment's pre-synaptic trace. The target's
// history is read only when it spiked since the synapse's previous spike (t1 below): otherwise
// its last spike and trace (PostHistory::Hot) say everything. Target lines are fetched a few
// synapses ahead, and the history tails of those that need it a few synapses after that.
template <PlasticityRule rule, Shape shape>
uint32_t deliver_segment(PlasticStore& st, const PlasticEntry& e, int64_t step, PostHistory& history, int32_t* row,
                         double scale) {
  const WeightDependence<shape> dep{st.rule};
  const StepDecay& decay_minus = *st.decay_minus;
  const int64_t d = e.delay;
  const int64_t t_pre = step + 1 - d;       // the pre-synaptic spike's time (steps)
  SegmentTrace& trace = st.seg_trace[e.segment];
  const int64_t t_last = trace.last;        // the previous one's
  const double k_plus = trace.k_plus;
  // Post-synaptic spikes reach the synapse d later: those in (t_last - d, t_pre - d] pair with
  // t_last (facilitation); K- just before t_pre - d depresses.
  const int64_t t1 = t_last - d, t2 = t_pre - d;
  const uint32_t first = e.first, end = e.first + e.count;
  const uint32_t* neuron = st.neuron.data();
  PostHistory::Hot* hot = history.hot.data();
  const PostHistory::Where* where = history.where.data();
  constexpr uint32_t kLine = 8, kTail = 4;  // synapses ahead: the target's line, its history's tail
  for (uint32_t i = first; i < std::min(end, first + kLine); ++i) __builtin_prefetch(&hot[neuron[i]]);
  for (uint32_t i = first; i < std::min(end, first + kTail); ++i) __builtin_prefetch(&where[neuron[i]]);
  for (uint32_t i = first; i < end; ++i) {
    if (i + kLine < end) {
      __builtin_prefetch(&hot[neuron[i + kLine]]);
      __builtin_prefetch(&where[neuron[i + kLine]]);
    }
    if (i + kTail < end) {
      const PostHistory::Hot& ahead = hot[neuron[i + kTail]];
      if (ahead.any() && ahead.last > t1 && (ahead.last >= t2 || ahead.previous > t1)) {
        const PostHistory::Where& at = where[neuron[i + kTail]];
        __builtin_prefetch(at.spikes + at.size - 1, 1);
      }
    }
    PostHistory::Hot& n = hot[neuron[i]];
    double w = st.weight[i];
    if (n.any() && n.last <= t1) {          // no target spike since t1: nothing to read or count
      const double nearest = decay_minus(t2 - n.last);
      switch (rule) {  // a constant: one case compiles
        case PlasticityRule::stdp:
        case PlasticityRule::stdp_power_law: w = dep.down(w, n.k_minus * nearest); break;
        case PlasticityRule::stdp_nn_symmetric: w = dep.down(w, nearest); break;
        case PlasticityRule::stdp_nn_pre_centered:
          w = dep.down(w, nearest);
          st.k_plus[i] = st.k_plus[i] * st.decay_plus(t_pre - t_last) + 1.0;
          break;
        case PlasticityRule::stdp_nn_restricted:
        case PlasticityRule::none: break;
      }
    } else if (n.any() && n.last < t2 && n.previous <= t1) {   // only the last target spike since t1
      ++n.last_reads;
      const double nearest = decay_minus(t2 - n.last);
      const double pairing = st.decay_plus(n.last + d - t_last);
      switch (rule) {  // a constant: one case compiles
        case PlasticityRule::stdp:
        case PlasticityRule::stdp_power_law:
          w = dep.up(w, k_plus * pairing);
          w = dep.down(w, n.k_minus * nearest);
          break;
        case PlasticityRule::stdp_nn_symmetric:
          w = dep.up(w, pairing);
          w = dep.down(w, nearest);
          break;
        case PlasticityRule::stdp_nn_pre_centered:
          w = dep.up(w, st.k_plus[i] * pairing);
          w = dep.down(w, nearest);
          st.k_plus[i] = 1.0;               // K+ was reset by the pairing: 0 * decay + 1
          break;
        case PlasticityRule::stdp_nn_restricted:
          w = dep.up(w, pairing);
          w = dep.down(w, nearest);
          break;
        case PlasticityRule::none: break;
      }
    } else if (n.any()) {
      const PostHistory::Where& at = where[neuron[i]];
      PostSpike* spikes = at.spikes;
      size_t lo, hi;
      spikes_between(at, t1, t2, lo, hi);
      for (size_t j = lo; j < hi; ++j) ++spikes[j].reads;
      // K- and exp((t_i - t2) / tau_minus) of the last spike before t2
      const size_t before = last_before(at, hi, t2);
      const double nearest = before ? decay_minus(t2 - spikes[before - 1].step) : 0.0;
      const double k_minus = before ? spikes[before - 1].k_minus * nearest : 0.0;
      // exp(minus_dt / tau_plus), minus_dt = t_last - (t_post + d): a target spike's pairing
      auto decay = [&](size_t j) { return st.decay_plus(spikes[j].step + d - t_last); };
      switch (rule) {  // a constant: one case compiles
        case PlasticityRule::stdp:
        case PlasticityRule::stdp_power_law:
          for (size_t j = lo; j < hi; ++j) w = dep.up(w, k_plus * decay(j));
          w = dep.down(w, k_minus);
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
    } else {                                // the target has not spiked: K- is 0
      switch (rule) {  // a constant: one case compiles
        case PlasticityRule::stdp:
        case PlasticityRule::stdp_power_law:
        case PlasticityRule::stdp_nn_symmetric: w = dep.down(w, 0.0); break;
        case PlasticityRule::stdp_nn_pre_centered:
          w = dep.down(w, 0.0);
          st.k_plus[i] = st.k_plus[i] * st.decay_plus(t_pre - t_last) + 1.0;
          break;
        case PlasticityRule::stdp_nn_restricted:
        case PlasticityRule::none: break;
      }
    }
    st.weight[i] = w;
    row[neuron[i] + st.column_offset] += to_fixed(w, scale);
  }
  if (rule == PlasticityRule::stdp || rule == PlasticityRule::stdp_power_law)
    trace.k_plus = k_plus * st.decay_plus(t_pre - t_last) + 1.0;
  trace.last = t_pre;
  return e.count;
}

// The segment loop of each rule and shape.
template <PlasticityRule rule>
SegmentDelivery for_shape(Shape shape) {
  switch (shape) {
    case Shape::additive: return deliver_segment<rule, Shape::additive>;
    case Shape::multiplicative: return deliver_segment<rule, Shape::multiplicative>;
    case Shape::general: return deliver_segment<rule, Shape::general>;
    case Shape::power_law: return deliver_segment<rule, Shape::power_law>;
  }
  return nullptr;
}

SegmentDelivery segment_delivery(const PlasticitySpec& p) {
  const Shape shape = shape_of(p);
  switch (p.rule) {
    case PlasticityRule::stdp: return for_shape<PlasticityRule::stdp>(shape);
    case PlasticityRule::stdp_nn_symmetric: return for_shape<PlasticityRule::stdp_nn_symmetric>(shape);
    case PlasticityRule::stdp_nn_pre_centered: return for_shape<PlasticityRule::stdp_nn_pre_centered>(shape);
    case PlasticityRule::stdp_nn_restricted: return for_shape<PlasticityRule::stdp_nn_restricted>(shape);
    case PlasticityRule::stdp_power_law: return deliver_segment<PlasticityRule::stdp_power_law, Shape::power_law>;
    case PlasticityRule::none: break;
  }
  throw std::invalid_argument("no delivery for a static projection");
}

}  // namespace

uint64_t deliver_plastic(std::vector<PlasticStore>& stores, const std::vector<PlasticEntry>& due, int64_t step,
                         PostHistory& history, int32_t* row, double scale) {
  // Segments are known in advance: their traces and first synapses are fetched a few ahead.
  constexpr size_t kAhead = 4;
  auto fetch = [&](const PlasticEntry& e) {
    const PlasticStore& st = stores[e.store];
    __builtin_prefetch(&st.neuron[e.first]);
    __builtin_prefetch(&st.weight[e.first], 1);
    __builtin_prefetch(&st.seg_trace[e.segment], 1);
  };
  for (size_t e = 0; e < std::min(due.size(), kAhead); ++e) fetch(due[e]);
  uint64_t events = 0;
  for (size_t e = 0; e < due.size(); ++e) {
    if (e + kAhead < due.size()) fetch(due[e + kAhead]);
    PlasticStore& st = stores[due[e].store];
    events += st.deliver(st, due[e], step, history, row, scale);
  }
  return events;
}

namespace {
template <Shape shape>
double up_to_date(const PlasticStore& st, uint32_t h, uint32_t i, const PostHistory& history, int64_t now) {
  double w = st.weight[i];
  const WeightDependence<shape> dep{st.rule};
  const PostHistory::Where& n = history.where[st.neuron[i]];
  const int64_t d = st.seg_delay[h], t_last = st.seg_trace[h].last;
  size_t lo, hi;
  spikes_between(n, t_last - d, now - d, lo, hi);
  auto decay = [&](size_t j) { return st.decay_plus(n.spikes[j].step + d - t_last); };
  switch (st.rule.rule) {
    case PlasticityRule::stdp:
    case PlasticityRule::stdp_power_law:
      for (size_t j = lo; j < hi; ++j) w = dep.up(w, st.seg_trace[h].k_plus * decay(j));
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
}  // namespace

double weight_up_to_date(const PlasticStore& st, uint32_t h, uint32_t i, const PostHistory& history, int64_t now) {
  if (history.empty()) return st.weight[i];
  switch (shape_of(st.rule)) {
    case Shape::additive: return up_to_date<Shape::additive>(st, h, i, history, now);
    case Shape::multiplicative: return up_to_date<Shape::multiplicative>(st, h, i, history, now);
    case Shape::general: return up_to_date<Shape::general>(st, h, i, history, now);
    case Shape::power_law: return up_to_date<Shape::power_law>(st, h, i, history, now);
  }
  return st.weight[i];
}

}  // namespace ranvier
