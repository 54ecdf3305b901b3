// Spike-timing-dependent plasticity, the way NEST 3.10 computes it (models/stdp_synapse.h,
// stdp_nn_*_synapse.h, stdp_pl_synapse_hom.h, nestkernel/archiving_node.cpp), so the same network
// gives the same weights in both simulators:
//   - the whole delay d is dendritic: a pre-synaptic spike at t_pre pairs with post-synaptic
//     spikes t_post seen at the synapse at t_post + d;
//   - a weight changes only when a pre-synaptic spike is delivered: first facilitation by the
//     target's spikes in (t_last - d, t_pre - d] (t_last: the source's previous spike), then
//     depression by the target's trace K- just before t_pre - d; the delivered efficacy is the
//     new weight;
//   - each target neuron keeps its spike history with K- after each spike, until every incoming
//     plastic synapse has read a spike (an access count, as NEST's) and a later spike is old
//     enough that no pending delivery can ask for the trace before it.
// Every quantity is a function of one synapse's pre-synaptic spike train and its target's spike
// train, both the same for any decomposition, and a synapse's updates happen in the order of its
// pre-synaptic spikes: weights are bit-identical for any ranks, threads, exchange and placement.
// Weights are kept in double precision; the efficacy added to the input is rounded to the fixed
// point of static synapses at each delivery, so sums stay independent of order.
#pragma once
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/local_network.hpp"
#include "core/spec.hpp"

namespace ranvier {

// exp(-k h / tau) for whole steps k, tabulated: the exponentials of the update are all of this
// form. The table holds exactly what the direct expression gives (the same operations on the same
// operands), so a value is the same whether it comes from the table or, beyond it, from std::exp.
// divide: exp((-k h) / tau) (NEST's stdp_synapse); else exp(-k h * (1 / tau)) (its archiving
// node and the power law).
class StepDecay {
 public:
  static constexpr int64_t kSize = 8192;   // 819 ms at 0.1 ms: most intervals between spikes
  StepDecay() = default;
  StepDecay(double h, double tau, bool divide) : h_(h), tau_(tau), inv_(1.0 / tau), divide_(divide) {
    table_.resize(kSize);
    for (int64_t k = 0; k < kSize; ++k) table_[k] = direct(k);
  }
  double operator()(int64_t k) const { return k >= 0 && k < kSize ? table_[k] : direct(k); }

 private:
  double direct(int64_t k) const { return divide_ ? std::exp((double(-k) * h_) / tau_) : std::exp(double(-k) * h_ * inv_); }
  std::vector<double> table_;
  double h_ = 0.1, tau_ = 1, inv_ = 1;
  bool divide_ = true;
};

// One spike of a target neuron: its step (the engine's spike time, in steps), the trace K- just
// after it, and how many of the neuron's incoming plastic synapses have read it.
struct PostSpike {
  int64_t step;
  double k_minus;
  uint32_t reads;
};

// The spike histories of a thread's neurons (by thread-local index). Only neurons with incoming
// plastic synapses record; a history is a vector used as a queue (spikes[head..]).
struct PostHistory {
  struct Neuron {
    std::vector<PostSpike> spikes;
    uint32_t head = 0;
    uint32_t incoming = 0;      // plastic synapses onto the neuron
    double k_minus = 0;         // K- after the last spike
    int64_t last = 0;           // the last spike's step
    const StepDecay* decay = nullptr;   // exp(-k h / tau_minus): its population's
  };
  std::vector<Neuron> neurons;
  std::vector<StepDecay> decays;        // one per population (tau_minus)
  int64_t keep_steps = 0;       // see record()
  double h = 0.1;               // ms per step

  bool empty() const { return neurons.empty(); }
  // The neuron fired at `step`: forget the oldest spikes that every incoming synapse has read
  // once the next one lies more than keep_steps (twice the longest delay and a cycle) back, then
  // append this one with its trace.
  void record(uint64_t k, int64_t step) {
    Neuron& n = neurons[k];
    if (!n.incoming) return;
    while (n.spikes.size() - n.head > 1 && n.spikes[n.head].reads >= n.incoming &&
           step - n.spikes[n.head + 1].step > keep_steps)
      ++n.head;
    if (n.head >= 64 && 2 * n.head >= n.spikes.size()) {   // amortised: the vector stays small
      n.spikes.erase(n.spikes.begin(), n.spikes.begin() + n.head);
      n.head = 0;
    }
    n.k_minus = n.k_minus * (*n.decay)(step - n.last) + 1.0;
    n.last = step;
    n.spikes.push_back({step, n.k_minus, 0});
  }
};

// The plastic synapses of one projection on one thread: rows keyed by global source, delay
// segments sorted by target, as SynapseStore's; a weight (double) per synapse. The source's last
// spike and its trace K+ are per segment (every synapse of a segment shares its pre-synaptic
// train), except for the nearest-neighbour pre-centred rule, which resets K+ per synapse.
struct PlasticStore {
  uint32_t projection = 0;
  PlasticitySpec rule;
  std::vector<uint32_t> row_head, seg_first;
  std::vector<uint16_t> seg_delay;
  std::vector<int64_t> seg_last;        // the step of the source's last delivered spike (0: none yet)
  std::vector<double> seg_k_plus;       // K+ after it
  std::vector<uint32_t> neuron;         // thread-local index of each synapse's target
  std::vector<double> weight;
  std::vector<double> k_plus;           // per synapse: the pre-centred rule only
  uint64_t column_offset = 0;           // input column = neuron + column_offset (inhibitory: split input)
  StepDecay decay_plus;                 // exp(-k h / tau_plus)

  uint64_t size() const { return weight.size(); }
  uint64_t bytes() const {
    return row_head.size() * 4 + seg_first.size() * 4 + seg_delay.size() * 2 + seg_last.size() * 8 +
           seg_k_plus.size() * 8 + neuron.size() * 4 + weight.size() * 8 + k_plus.size() * 8;
  }
};

// Turns the store build_thread_synapses made for plastic projection j (weights as indices into
// `drawn`) into its plastic store.
void build_plastic_store(const EngineConfig& cfg, uint32_t j, const ThreadNeurons& neurons, SynapseStore& grouped,
                         const std::vector<double>& drawn, PlasticStore& out);
// Counts each neuron's incoming plastic synapses and sets its trace's time constant.
void build_post_history(const EngineConfig& cfg, const ThreadNeurons& neurons,
                        const std::vector<PlasticStore>& stores, int64_t keep_steps, PostHistory& out);

// Delivers segment h of `store`, whose spike is integrated in step `step` (its spike time plus
// the delay is step + 1): updates every weight, adds the efficacies (fixed point, `scale` units
// per input unit) to the input row `row`. Returns the synapses delivered.
uint32_t deliver_plastic_segment(PlasticStore& store, uint32_t h, int64_t step, PostHistory& history, int32_t* row,
                                 double scale);

// A synapse's weight brought up to `now` (steps): the facilitation by the target's spikes that
// reached the synapse since its last pre-synaptic spike, which NEST applies only at the next one.
// Reads, changes nothing.
double weight_up_to_date(const PlasticStore& store, uint32_t h, uint32_t i, const PostHistory& history, int64_t now);

}  // namespace ranvier
