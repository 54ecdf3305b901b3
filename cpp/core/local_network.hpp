// What one thread owns: a disjoint set of target neurons, their state, and every synapse
// that ends on them. Delivery therefore needs no atomics.
#pragma once
#include <cstdint>
#include <vector>

#include "base/huge_pages.hpp"
#include "base/placement.hpp"
#include "base/spec.hpp"
#include "neurons/neuron_model.hpp"

namespace ranvier {

struct Synapse {          // 8 bytes: one stream to read per delivered segment
  uint32_t target;        // thread-local neuron index
  int32_t weight;         // fixed point, units of 2^-fraction_bits mV
};

// Synapses in rows keyed by global source id. Inside a row they are grouped by delay
// (ascending) and sorted by target; each delay group is a segment with a header.
// Headers of source s: [row_head[s], row_head[s+1]); segment h spans synapses
// [seg_first[h], seg_first[h+1]) with delay seg_delay[h] steps.
// Two layouts, chosen per thread at build: packed, 4 bytes per synapse (the weight in the high
// 32 - target_bits bits, the target in the low target_bits), when the thread's neuron indices
// and every possible weight fit; wide, 8 bytes (Synapse), otherwise. Both hold the same values.
struct SynapseStore {
  std::vector<uint32_t> row_head;    // global neurons + 1
  std::vector<uint32_t> seg_first;   // segments + 1 (sentinel: total synapses)
  std::vector<uint16_t> seg_delay;   // segments
  std::vector<Synapse, HugePageAllocator<Synapse>> synapses;   // wide layout
  std::vector<uint32_t, HugePageAllocator<uint32_t>> packed;   // packed layout
  int target_bits = 0;               // > 0: packed

  bool is_packed() const { return target_bits > 0; }
  uint64_t size() const { return is_packed() ? packed.size() : synapses.size(); }
  uint32_t target(uint64_t i) const {
    return is_packed() ? packed[i] & ((uint32_t(1) << target_bits) - 1) : synapses[i].target;
  }
  int32_t weight(uint64_t i) const { return is_packed() ? int32_t(packed[i]) >> target_bits : synapses[i].weight; }
  uint64_t segments(uint64_t source) const { return row_head[source + 1] - row_head[source]; }
  uint64_t bytes() const {
    return row_head.size() * 4 + seg_first.size() * 4 + seg_delay.size() * 2 + synapses.size() * sizeof(Synapse) +
           packed.size() * 4;
  }
};

// The neurons of one population inside a thread: a contiguous range of local indices.
// Models with separate excitatory and inhibitory inputs (NeuronModel::split_input) get a second
// input column per neuron, after the thread's neurons: synapses with negative weights onto
// neuron k add into column k + inhibitory_offset (0: the range's input is not split). Models with
// R receptors get R - 1 such blocks, one after the other: receptor r >= 1 of neuron k is column
// k + inhibitory_offset + (r - 1) * (end - begin), receptor 0 column k.
struct PopulationRange {
  uint32_t population;
  uint64_t begin, end;
  uint64_t inhibitory_offset = 0;
  uint32_t input_columns = 1;     // per neuron: 1, 2 (split input) or the model's receptors
  uint64_t column(uint64_t k, uint32_t port) const {
    return port == 0 ? k : k + inhibitory_offset + uint64_t(port - 1) * (end - begin);
  }
  // Whether `column` is one of the range's further input columns (port >= 1); the neuron's index.
  bool holds_further_column(uint64_t column, uint64_t& neuron) const {
    if (!inhibitory_offset) return false;
    const uint64_t first = begin + inhibitory_offset, n = end - begin;
    if (column < first || column >= first + uint64_t(input_columns - 1) * n) return false;
    neuron = begin + (column - first) % n;
    return true;
  }
};

struct ThreadNeurons {
  std::vector<uint64_t> gid;            // thread-local index -> global id
  std::vector<uint32_t> gid_lo, gid_hi; // the same split in 32-bit words, for vectorised draws
  std::vector<double> V, c;
  std::vector<int32_t> refractory;      // steps left
  std::vector<int64_t> next_spike;      // artificial cells: the step of the next spike
  std::vector<uint32_t> spikes_fired;   // artificial cells: spikes so far (keys the next interval)
  std::vector<double> extra[kMaxExtraColumns];   // further state variables, where a model needs them
  std::vector<PopulationRange> ranges;
  uint64_t input_columns = 0;           // neurons, then the further columns of split ranges and receptors
  uint64_t size() const { return gid.size(); }
  // The neuron whose input an input column is.
  uint64_t neuron_of_column(uint64_t column) const {
    if (column < size()) return column;
    uint64_t neuron = column;
    for (const auto& r : ranges)
      if (r.holds_further_column(column, neuron)) return neuron;
    return column;
  }
};

// A population range's slice of its thread's state, as the neuron models see it.
inline NeuronColumns columns_of(ThreadNeurons& t, const PopulationRange& r) {
  const uint64_t b = r.begin;
  NeuronColumns s{t.gid.data() + b,        t.V.data() + b,           t.c.data() + b, t.refractory.data() + b,
                  t.next_spike.data() + b, t.spikes_fired.data() + b, {},             r.end - b};
  for (int i = 0; i < kMaxExtraColumns; ++i) s.extra[i] = t.extra[i].empty() ? nullptr : t.extra[i].data() + b;
  return s;
}

// Builds the neurons and the synapse store of thread t on rank r. Every draw is keyed by the
// target's global id (and the projection and synapse index), so the network instance is the
// same for any placement, rank count or thread count.
void build_thread_neurons(const EngineConfig& cfg, const Placement& placement, int rank, int thread,
                          ThreadNeurons& out);
// What each rank works out once, before its threads build their synapses, for the projections
// whose synapses onto a target cannot be drawn from that target's streams alone (Engine::build).
//   fixed total: the in-degree of every neuron of the target population, drawn from the seed
//     alone (the same on every rank).
//   fixed out-degree, explicit lists: for the target population's neurons on this rank (rank-local
//     indices first_index + x), the synapses onto x are items[begin[x], begin[x + 1]), in synapse
//     order: source gids (out-degree) or list entries (lists).
struct ProjectionPlan {
  std::vector<uint32_t> indegrees;
  uint64_t first_index = 0;
  std::vector<uint64_t> begin, items;
};
using ConnectivityPlan = std::vector<ProjectionPlan>;
void draw_indegrees(const EngineConfig& cfg, uint32_t projection, std::vector<uint32_t>& out);
void plan_fixed_outdegree(const EngineConfig& cfg, const Placement& placement, int rank, int threads,
                          uint32_t projection, ProjectionPlan& out);
void plan_list(const EngineConfig& cfg, const Placement& placement, int rank, uint32_t projection,
               ProjectionPlan& out);
// The largest |weight| a projection can draw, in fixed-point units (bounds the packed layout).
double max_abs_weight(const ProjectionSpec& pr);
// The store of every static projection (plastic_projection < 0), or of one plastic projection:
// then wide, each synapse's weight field holding the index of its drawn weight (double) in
// *plastic_weights, which build_plastic_store (plasticity.cpp) turns into the plastic store.
void build_thread_synapses(const EngineConfig& cfg, const Placement& placement, const ConnectivityPlan& plan,
                           const ThreadNeurons& neurons, SynapseStore& out, int plastic_projection = -1,
                           std::vector<double>* plastic_weights = nullptr);

}  // namespace ranvier
