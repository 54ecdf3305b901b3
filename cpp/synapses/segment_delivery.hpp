// The delivery of one plastic segment, generic over the rule: the loop over the segment's record
// (core/plasticity.hpp), the reading of each target's spike history, and the input. A rule file
// supplies a class (a "Rule") and instantiates RuleDelivery<Rule> for it:
//
//   struct Rule {
//     static constexpr uint32_t kState;        // doubles of state per synapse (SynapseRule::synapse_state)
//     static constexpr bool kSegmentTrace;     // the segment's K+ decays and grows by 1 at each spike
//     StepDecay decay_plus;                    // exp(-k h / tau_plus)
//     // The weight after a delivered spike, and the synapse's state updated.
//     template <class Target> double update(double w, const Target&, const PreSpike&, double* state) const;
//     // The weight with the facilitation of `Target`'s spikes alone (a weight read between spikes).
//     template <class Target> double facilitated(double w, const Target&, const PreSpike&, const double* state) const;
//   };
//
// `Target` is one of the views below: the target's spikes that reached the synapse since its
// previous pre-synaptic spike (count(), and pairing(j) = exp(-(t_last - (t_j + d)) / tau_plus) of
// the j-th), and at this spike (t_pre - d, the delay being dendritic) the target's trace K-
// (k_minus()) and the exponential of its last spike alone (nearest(): nearest-neighbour rules);
// post_step(j), the j-th spike's own step (rules that keep their own traces: NESTML's).
// Each delivery builds the cheapest view that holds: most read only the target's 32 hot bytes.
// A rule that declares kTripletTrace gets the views with triplet(j) (WithTriplet) besides.
// The compiler sees the rule and the view: every case compiles to its own straight code.
//
// Optional members of a Rule, each with the default that the STDP rules take by omitting it:
//   static constexpr bool kReadsTarget = false;   // the update reads nothing of the target (its
//       spikes, traces): delivery reads no history line and fetches none ahead, calls update with
//       NoTargetSpike{}, and the targets keep no history for the rule (build_post_history);
//       weight_up_to_date is the stored weight. Default: true.
//   static constexpr bool kFixedWeight = true;    // update returns the efficacy to deliver (the
//       stored weight scaled by the synapse's state, as short-term plasticity does); the stored
//       weight never changes. Default: false (update's value is stored and delivered).
//   Shared at_spike(const PreSpike&) const;       // what every synapse of the segment shares at
//       this spike (propagators over the interval since the previous one), computed once per
//       segment and passed to update in place of PreSpike. Target-free rules only.
//   bool transmits(const Shared&, const double* state) const;   // whether the synapse transmits
//       this spike: where false, it is neither updated nor added to the input (it still counts
//       among the synapses the spike reached: synaptic events). Target-free rules only.
//       Default: every synapse does.
// A synapse's state starts as SynapseRule::initial_state fills it (zeros without one).
#pragma once
#include <algorithm>
#include <cstdint>
#include <memory>

#include "core/plasticity.hpp"
#include "synapses/synapse_rule.hpp"

namespace ranvier {

// The pre-synaptic side of a delivery: the segment's K+ after the source's previous spike, and
// the steps since that spike (t_pre - t_last).
struct PreSpike {
  double k_plus;
  int64_t since_last;
  int64_t step = 0;       // t_pre itself, for rules whose arithmetic takes absolute times
  int64_t delay = 0;      // the segment's (dendritic) delay d, steps: a target spike reaches the synapse d later
};

// The target has never spiked.
struct NoTargetSpike {
  static constexpr uint32_t count() { return 0; }
  static double pairing(uint32_t) { return 0.0; }
  static double k_minus() { return 0.0; }
  static double nearest() { return 0.0; }
  static int64_t post_step(uint32_t) { return 0; }
};

// No target spike since the synapse's previous spike: its last one gives K-.
struct NoNewTargetSpike {
  double k, near;
  static constexpr uint32_t count() { return 0; }
  static double pairing(uint32_t) { return 0.0; }
  double k_minus() const { return k; }
  double nearest() const { return near; }
  static int64_t post_step(uint32_t) { return 0; }
};

// Only the target's last spike since the synapse's previous spike.
struct LastTargetSpike {
  double pair, k, near;
  int64_t step;
  static constexpr uint32_t count() { return 1; }
  double pairing(uint32_t) const { return pair; }
  double k_minus() const { return k; }
  double nearest() const { return near; }
  int64_t post_step(uint32_t) const { return step; }
};

// Any other case: the target's history, its spikes in (t1, t2] being spikes[lo, hi).
struct TargetSpikes {
  const PostSpike* spikes;
  size_t lo, hi, before;               // before: the last spike strictly before t2, + 1 (0: none)
  int64_t t2, d, t_last;
  const StepDecay* decay_plus;
  const StepDecay* decay_minus;
  uint32_t count() const { return uint32_t(hi - lo); }
  double pairing(uint32_t j) const { return (*decay_plus)(spikes[lo + j].step + d - t_last); }
  double nearest() const { return before ? (*decay_minus)(t2 - spikes[before - 1].step) : 0.0; }
  double k_minus() const { return before ? spikes[before - 1].k_minus * nearest() : 0.0; }
  int64_t post_step(uint32_t j) const { return spikes[lo + j].step; }
};

// A view with the target's triplet trace (PostHistory::TripletTrace) for the rules that read it
// (Rule::kTripletTrace): triplet(j), the trace just after the j-th spike of count().
template <class View>
struct WithTriplet : View {
  const double* k_triplet;
  double triplet(uint32_t j) const { return k_triplet[j]; }
};

template <class Rule>
constexpr bool reads_triplet = requires { Rule::kTripletTrace; };

// Rule::kReadsTarget and Rule::kFixedWeight where the rule declares them, else their defaults.
template <class Rule>
consteval bool reads_target_of() {
  if constexpr (requires { Rule::kReadsTarget; }) return Rule::kReadsTarget;
  else return true;
}
template <class Rule>
constexpr bool reads_target = reads_target_of<Rule>();
template <class Rule>
consteval bool fixed_weight_of() {
  if constexpr (requires { Rule::kFixedWeight; }) return Rule::kFixedWeight;
  else return false;
}
template <class Rule>
constexpr bool fixed_weight = fixed_weight_of<Rule>();

// Rule::at_spike(pre) where the rule defines it, else pre itself.
template <class Rule>
inline auto shared_at(const Rule& rule, const PreSpike& pre) {
  if constexpr (requires { rule.at_spike(pre); }) return rule.at_spike(pre);
  else return pre;
}

// Whether the rule defines transmits(shared, state).
template <class Rule, class Shared>
constexpr bool gated = requires(const Rule& rule, const Shared& shared, const double* s) { rule.transmits(shared, s); };

// rule.update on the view, given the triplet trace of its spikes (the first at index `first` of
// the target's) when the rule reads it; other rules see the view alone.
template <class Rule, class View>
inline double update_on(const Rule& rule, double w, const View& view, const PreSpike& pre, double* s,
                        const PostHistory& history, uint32_t target, size_t first) {
  if constexpr (reads_triplet<Rule>) {
    return rule.update(w, WithTriplet<View>{view, history.triplet.k[target].data() + first}, pre, s);
  } else {
    return rule.update(w, view, pre, s);
  }
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

// One segment: every synapse's update, then the segment's pre-synaptic trace. The target's
// history is read only when it spiked since the synapse's previous spike (t1 below): otherwise
// its last spike and trace (PostHistory::Hot) say everything. Target lines are fetched a few
// synapses ahead, and the history tails of those that need it a few synapses after that.
//
// A rule that reads no target (Rule::kReadsTarget false) takes deliver_target_free instead: the
// same walk over the record with no history read.
template <class Rule>
uint32_t deliver_target_free(const Rule& rule, PlasticStore& st, uint32_t h, int64_t t_pre,
                             PendingEfficacies& out, double scale) {
  const uint32_t count = st.count(h);
  std::byte* record = st.record(st.seg_record[h]);
  SegmentTrace& trace = PlasticStore::trace_of(record);
  const uint32_t* neuron = PlasticStore::targets_of(record);
  double* weight = PlasticStore::weights_of(record, count);
  double* state = weight + count;
  const PreSpike pre{trace.k_plus, t_pre - trace.last, t_pre, st.seg_delay[h]};
  const auto shared = shared_at(rule, pre);
  const uint32_t column = uint32_t(st.column_offset);
  PendingEfficacy* to = out.room(count);
  for (uint32_t i = 0; i < count; ++i) {
    double* s = state + i * Rule::kState;
    if constexpr (gated<Rule, decltype(shared)>) {
      if (!rule.transmits(shared, s)) continue;
    }
    const double w = rule.update(weight[i], NoTargetSpike{}, shared, s);
    if constexpr (!fixed_weight<Rule>) weight[i] = w;
    *to++ = {neuron[i] + column, to_fixed(w, scale)};
  }
  out.written_to(to);
  if constexpr (Rule::kSegmentTrace) trace.k_plus = pre.k_plus * rule.decay_plus(pre.since_last) + 1.0;
  trace.last = t_pre;
  return count;
}

template <class Rule>
uint32_t deliver_segment(const Rule& rule, PlasticStore& st, uint32_t h, int64_t t_pre, PostHistory& history,
                         PendingEfficacies& out, double scale) {
  const StepDecay& decay_minus = *st.decay_minus;
  const StepDecay& decay_plus = rule.decay_plus;
  const int64_t d = st.seg_delay[h];
  const uint32_t count = st.count(h);
  std::byte* record = st.record(st.seg_record[h]);
  SegmentTrace& trace = PlasticStore::trace_of(record);
  const uint32_t* neuron = PlasticStore::targets_of(record);
  double* weight = PlasticStore::weights_of(record, count);
  double* state = weight + count;
  const int64_t t_last = trace.last;        // the previous one's
  const PreSpike pre{trace.k_plus, t_pre - t_last, t_pre, d};
  // Post-synaptic spikes reach the synapse d later: those in (t_last - d, t_pre - d] pair with
  // t_last (facilitation); K- just before t_pre - d depresses.
  const int64_t t1 = t_last - d, t2 = t_pre - d;
  PostHistory::Hot* hot = history.hot.data();
  const PostHistory::Where* where = history.where.data();
  const uint32_t column = uint32_t(st.column_offset);
  PendingEfficacy* to = out.room(count);
  constexpr uint32_t kTail = 4;             // synapses ahead: their history's tail
  for (uint32_t i = 0; i < count; ++i) {
    if (i + kTail < count) {
      const PostHistory::Hot& ahead = hot[neuron[i + kTail]];
      if (ahead.any() && ahead.last > t1 && (ahead.last >= t2 || ahead.previous > t1)) {
        const PostHistory::Where& at = where[neuron[i + kTail]];
        __builtin_prefetch(at.spikes + at.size - 1, 1);
      }
    }
    PostHistory::Hot& n = hot[neuron[i]];
    double* s = state + i * Rule::kState;
    double w = weight[i];
    if (n.any() && n.last <= t1) {          // no target spike since t1: nothing to read or count
      const double nearest = decay_minus(t2 - n.last);
      w = update_on(rule, w, NoNewTargetSpike{n.k_minus * nearest, nearest}, pre, s, history, neuron[i], 0);
    } else if (n.any() && n.last < t2 && n.previous <= t1) {   // only the last target spike since t1
      ++n.last_reads;
      const double nearest = decay_minus(t2 - n.last);
      const LastTargetSpike last{decay_plus(n.last + d - t_last), n.k_minus * nearest, nearest, n.last};
      if constexpr (reads_triplet<Rule>) {
        w = update_on(rule, w, last, pre, s, history, neuron[i], history.triplet.k[neuron[i]].size() - 1);
      } else {
        w = rule.update(w, last, pre, s);
      }
    } else if (n.any()) {
      const PostHistory::Where& at = where[neuron[i]];
      size_t lo, hi;
      spikes_between(at, t1, t2, lo, hi);
      for (size_t j = lo; j < hi; ++j) ++at.spikes[j].reads;
      const TargetSpikes spikes{at.spikes, lo, hi, last_before(at, hi, t2), t2, d, t_last, &decay_plus, &decay_minus};
      w = update_on(rule, w, spikes, pre, s, history, neuron[i], lo);
    } else {                                // the target has not spiked: K- is 0
      w = update_on(rule, w, NoTargetSpike{}, pre, s, history, neuron[i], 0);
    }
    if constexpr (!fixed_weight<Rule>) weight[i] = w;
    to[i] = {neuron[i] + column, to_fixed(w, scale)};
  }
  out.written_to(to + count);
  if constexpr (Rule::kSegmentTrace) trace.k_plus = pre.k_plus * decay_plus(pre.since_last) + 1.0;
  trace.last = t_pre;
  return count;
}

// Synapse k of segment h brought up to `now`: the facilitation by the target's spikes in
// (t_last - d, now - d].
template <class Rule>
double weight_up_to_date(const Rule& rule, const PlasticStore& st, uint32_t h, uint32_t k, const PostHistory& history,
                         int64_t now) {
  const PostHistory::Where& n = history.where[st.target(h, k)];
  const SegmentTrace& trace = st.trace(h);
  const int64_t d = st.seg_delay[h], t_last = trace.last, t2 = now - d;
  size_t lo, hi;
  spikes_between(n, t_last - d, t2, lo, hi);
  const TargetSpikes spikes{n.spikes, lo, hi, 0, t2, d, t_last, &rule.decay_plus, st.decay_minus};
  const PreSpike pre{trace.k_plus, now - t_last, now, d};
  if constexpr (reads_triplet<Rule>) {
    const double* k_triplet = history.triplet.k[st.target(h, k)].data() + lo;
    return rule.facilitated(st.weight(h, k), WithTriplet<TargetSpikes>{spikes, k_triplet}, pre, st.state(h, k));
  } else {
    return rule.facilitated(st.weight(h, k), spikes, pre, st.state(h, k));
  }
}

// A rule compiled for the engine.
template <class Rule>
class RuleDelivery final : public PlasticDelivery {
 public:
  explicit RuleDelivery(Rule rule) : rule_(std::move(rule)) {}
  uint64_t deliver(PlasticStore& store, uint64_t source, int64_t t_pre, PostHistory& history, PendingRing& pending,
                   double scale) const override {
    uint64_t events = 0;
    const uint32_t h0 = store.row_head[source], h1 = store.row_head[source + 1];
    // The targets' lines (hot, where) are fetched two segments ahead: the row's segments are
    // short (a few synapses), so a fetch inside one would come too late.
    constexpr uint32_t kAhead = 2;
    auto fetch_targets = [&](uint32_t h) {
      const uint32_t* neuron = PlasticStore::targets_of(store.record(store.seg_record[h]));
      for (uint32_t k = 0, n = store.count(h); k < n; ++k) {
        __builtin_prefetch(&history.hot[neuron[k]]);
        __builtin_prefetch(&history.where[neuron[k]]);
      }
    };
    if constexpr (reads_target<Rule>)
      for (uint32_t h = h0; h < std::min(h1, h0 + kAhead); ++h) fetch_targets(h);
    for (uint32_t h = h0; h < h1; ++h) {
      if constexpr (reads_target<Rule>) {
        if (h + kAhead < h1) fetch_targets(h + kAhead);
        events += deliver_segment(rule_, store, h, t_pre, history, pending.at(store.seg_delay[h]), scale);
      } else {
        events += deliver_target_free(rule_, store, h, t_pre, pending.at(store.seg_delay[h]), scale);
      }
    }
    return events;
  }
  double weight_up_to_date(const PlasticStore& store, uint32_t h, uint32_t k, const PostHistory& history,
                           int64_t now) const override {
    if constexpr (reads_target<Rule>) {
      return ranvier::weight_up_to_date(rule_, store, h, k, history, now);
    } else {
      return store.weight(h, k);           // no target spike changes it
    }
  }

 private:
  Rule rule_;
};

template <class Rule>
std::unique_ptr<PlasticDelivery> compiled(Rule rule) {
  return std::make_unique<RuleDelivery<Rule>>(std::move(rule));
}

}  // namespace ranvier
