// STDP: building the plastic stores and target histories (see plasticity.hpp for the semantics;
// the update itself is the rule's, cpp/synapses/; it runs as spikes are received, delivery.cpp).
#include "core/plasticity.hpp"

#include <algorithm>
#include <stdexcept>

namespace ranvier {

void build_plastic_store(const EngineConfig& cfg, uint32_t j, const ThreadNeurons& neurons, SynapseStore& grouped,
                         const std::vector<double>& drawn, PlasticStore& out) {
  out = PlasticStore();
  out.projection = j;
  const PlasticitySpec& spec = cfg.projections[j].plasticity;
  const SynapseRule& rule = synapse_rule(spec.rule);
  out.rule = rule.make(spec, RuleBuild{cfg.resolution_ms, cfg.seed, j});
  out.synapse_state = rule.synapse_state;
  out.row_head = std::move(grouped.row_head);
  out.seg_first = std::move(grouped.seg_first);
  out.seg_delay = std::move(grouped.seg_delay);
  const uint64_t segments = out.seg_delay.size();
  out.seg_record.resize(segments);
  uint64_t words = 0;
  for (uint64_t h = 0; h < segments; ++h) {
    if (words > UINT32_MAX) throw std::runtime_error("more than 32 GiB of plastic synapses of one projection on one thread: use more threads or ranks");
    out.seg_record[h] = uint32_t(words);
    words += PlasticStore::record_words(out.count(uint32_t(h)), out.synapse_state);
  }
  if (words > UINT32_MAX) throw std::runtime_error("more than 32 GiB of plastic synapses of one projection on one thread: use more threads or ranks");
  out.records.assign(8 * words, std::byte{0});   // traces start at 0, the rule's state too unless it says
  // Each synapse's index onto its target (SynapseId): build_thread_synapses draws a target's
  // synapses one after the other, so their weights' places in `drawn` are consecutive, in draw
  // order; the index is the place less the first of its target's.
  std::vector<uint32_t> first_drawn;
  if (rule.initial_state) {
    first_drawn.assign(neurons.size(), UINT32_MAX);
    for (const Synapse& s : grouped.synapses) {
      uint32_t& first = first_drawn[neurons.neuron_of_column(s.target)];
      first = std::min(first, uint32_t(s.weight));
    }
  }
  for (uint32_t h = 0; h < segments; ++h) {
    std::byte* r = out.record(out.seg_record[h]);
    out.trace_of(r) = SegmentTrace();
    uint32_t* target = out.targets_of(r);
    double* weight = out.weights_of(r, out.count(h));
    for (uint32_t k = 0, i = out.seg_first[h]; i < out.seg_first[h + 1]; ++k, ++i) {
      const uint32_t column = grouped.synapses[i].target;
      const uint64_t n = neurons.neuron_of_column(column);
      target[k] = uint32_t(n);
      out.column_offset = column - n;        // the same for every synapse: one target population
      weight[k] = drawn[uint32_t(grouped.synapses[i].weight)];
      if (rule.initial_state)
        rule.initial_state(spec, SynapseId{neurons.gid[n], uint32_t(grouped.synapses[i].weight) - first_drawn[n]},
                           out.state(h, k));
    }
  }
  grouped = SynapseStore();
}

void build_post_history(const EngineConfig& cfg, const ThreadNeurons& neurons, std::vector<PlasticStore>& stores,
                        int64_t keep_steps, PostHistory& out) {
  out = PostHistory();
  // Only the synapses of rules that read the target need its history: with none, no neuron
  // records; otherwise a neuron records when one of its incoming synapses reads it (incoming > 0).
  auto reads = [&](const PlasticStore& st) { return synapse_rule(cfg.projections[st.projection].plasticity.rule).reads_target; };
  uint64_t synapses = 0;
  for (const auto& st : stores)
    if (reads(st)) synapses += st.size();
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
  std::vector<bool> triplet_target(cfg.populations.size(), false);
  for (const auto& st : stores)
    if (synapse_rule(cfg.projections[st.projection].plasticity.rule).triplet_trace)
      triplet_target[cfg.projections[st.projection].target] = true;
  if (std::find(triplet_target.begin(), triplet_target.end(), true) != triplet_target.end()) {
    auto& tr = out.triplet;
    tr.decays.reserve(cfg.populations.size());      // never reallocated: neurons point into it
    for (const auto& pop : cfg.populations) tr.decays.emplace_back(cfg.resolution_ms, pop.tau_minus_triplet_ms, false);
    tr.k.resize(neurons.size());
    tr.last.assign(neurons.size(), 0.0);
    tr.decay.assign(neurons.size(), nullptr);
    for (const auto& range : neurons.ranges)
      if (triplet_target[range.population])
        for (uint64_t k = range.begin; k < range.end; ++k) tr.decay[k] = &tr.decays[range.population];
  }
  for (auto& st : stores) {
    if (!reads(st)) continue;
    st.decay_minus = &out.decays[cfg.projections[st.projection].target];
    for (uint32_t h = 0; h < st.seg_delay.size(); ++h)
      for (uint32_t k = 0; k < st.count(h); ++k)
        if (++out.cold[st.target(h, k)].incoming > kMaxPlasticIncoming)
          throw std::runtime_error("a neuron has more than 2^24 - 1 incoming plastic synapses");
  }
}

}  // namespace ranvier
