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
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "base/huge_pages.hpp"
#include "core/local_network.hpp"
#include "base/spec.hpp"
#include "synapses/synapse_rule.hpp"

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

// One spike of a target neuron: its step (the engine's spike time, in steps: 40 bits last 3.5
// years at 0.1 ms), how many of the neuron's incoming plastic synapses have read it (24 bits:
// the build refuses more incoming plastic synapses), and the trace K- just after it. 16 bytes,
// four to a cache line.
struct PostSpike {
  int64_t step : 40;
  uint64_t reads : 24;
  double k_minus;
};
inline constexpr uint32_t kMaxPlasticIncoming = (uint32_t(1) << 24) - 1;

// The spike histories of a thread's neurons (by thread-local index). Only neurons with incoming
// plastic synapses whose rule reads the target (SynapseRule::reads_target) record; a history is a vector used as a queue (spikes[head..]). What every
// delivery reads is kept apart, 32 bytes per neuron (Hot): the last spike's step and trace and
// the step of the one before, so a delivery that finds no target spike, or only the last, since
// the synapse's previous spike reads nothing else (the last spike's reads are counted there and
// added to its entry by the next record()). Where the history lies (Where) is read by the other
// deliveries; the rest (Cold) by record() alone.
struct PostHistory {
  static constexpr int64_t kNone = -(int64_t(1) << 62);   // no spike
  struct alignas(32) Hot {
    int64_t last = kNone;          // the last spike's step
    double k_minus = 0;            // K- after it
    int64_t previous = kNone;      // the spike before it
    uint32_t last_reads = 0;       // reads of the last spike not yet added to its entry
    bool any() const { return last != kNone; }
  };
  struct Where {
    PostSpike* spikes = nullptr;   // the vector's data and size, renewed by record()
    uint32_t size = 0, head = 0;
  };
  struct Cold {
    std::vector<PostSpike> spikes;
    uint32_t incoming = 0;         // plastic synapses onto the neuron
    const StepDecay* decay = nullptr;   // exp(-k h / tau_minus): its population's
  };
  std::vector<Hot, HugePageAllocator<Hot>> hot;
  std::vector<Where, HugePageAllocator<Where>> where;
  std::vector<Cold> cold;
  std::vector<StepDecay> decays;   // one per population (tau_minus)
  int64_t keep_steps = 0;          // see record()
  double h = 0.1;                  // ms per step
  // The triplet rule's second post-synaptic trace (NEST's triplet K-, tau_minus_triplet of the
  // target): kept apart so that the other rules' data stay as they are, and only for neurons of
  // populations that receive a triplet projection (decay null elsewhere). k[n] holds the trace
  // just after each spike of cold[n].spikes, index for index.
  struct TripletTrace {
    std::vector<std::vector<double>> k;
    std::vector<double> last;                  // the trace after the neuron's last spike
    std::vector<const StepDecay*> decay;       // exp(-k h / tau_minus_triplet), its population's
    std::vector<StepDecay> decays;             // one per population
    bool empty() const { return decay.empty(); }
  } triplet;

  // After record(k, step): the triplet trace of this spike, its values following the history's
  // entries (record() may have dropped some from the front).
  void record_triplet(uint64_t k, int64_t step) {
    const StepDecay* decay = triplet.decay[k];
    if (!decay) return;
    auto& v = triplet.k[k];
    const size_t dropped = v.size() + 1 - where[k].size;
    if (dropped) v.erase(v.begin(), v.begin() + dropped);
    const int64_t previous = hot[k].previous;
    triplet.last[k] = (previous != kNone ? triplet.last[k] * (*decay)(step - previous) : 0.0) + 1.0;
    v.push_back(triplet.last[k]);
  }

  bool empty() const { return hot.empty(); }
  // The neuron fired at `step`: forget the oldest spikes that every incoming synapse has read
  // once the next one lies more than keep_steps (twice the longest delay and a cycle) back, then
  // append this one with its trace.
  void record(uint64_t k, int64_t step) {
    Cold& c = cold[k];
    if (!c.incoming) return;
    Hot& n = hot[k];
    Where& at = where[k];
    auto& v = c.spikes;
    if (n.any()) v.back().reads += n.last_reads;
    n.last_reads = 0;
    while (at.size - at.head > 1 && v[at.head].reads >= c.incoming && step - v[at.head + 1].step > keep_steps)
      ++at.head;
    if (at.head >= 16 && 2 * at.head >= at.size) {   // amortised: the vector stays small
      v.erase(v.begin(), v.begin() + at.head);
      at.head = 0;
    }
    n.k_minus = (n.any() ? n.k_minus * (*c.decay)(step - n.last) : 0.0) + 1.0;
    n.previous = n.last;
    n.last = step;
    PostSpike spike;
    spike.step = step;
    spike.reads = 0;
    spike.k_minus = n.k_minus;
    v.push_back(spike);
    at.spikes = v.data();
    at.size = uint32_t(v.size());
  }
};

// The plastic synapses of one projection on one thread: rows keyed by global source, delay
// segments sorted by target, as SynapseStore's. Each segment is one contiguous record, so that a
// delivery reads one run of lines beside its queue entry (words of 8 bytes):
//   the segment's pre-synaptic trace (SegmentTrace: every synapse of a segment shares its
//   pre-synaptic train), its targets' thread-local indices (4 B each, padded to a word), their
//   weights (double), then the rule's state per synapse (SynapseRule::synapse_state doubles each,
//   the nearest pre-centred rule's K+; as SynapseRule::initial_state fills it at build, else 0).
struct SegmentTrace {
  int64_t last = 0;                     // the step of the source's last delivered spike (0: none yet)
  double k_plus = 0;                    // K+ after it
};

struct PlasticStore {
  uint32_t projection = 0;
  std::unique_ptr<const PlasticDelivery> rule;   // compiled at build (cpp/synapses/)
  uint32_t synapse_state = 0;           // the rule's doubles per synapse beyond the weight
  std::vector<uint32_t> row_head, seg_first;
  std::vector<uint16_t> seg_delay;
  std::vector<uint32_t> seg_record;     // each segment's first word in `records`
  // Read at random, a segment at a time, across hundreds of MB: huge pages spare the TLB misses.
  std::vector<std::byte, HugePageAllocator<std::byte>> records;
  uint64_t column_offset = 0;           // input column = neuron + column_offset (inhibitory: split input)
  const StepDecay* decay_minus = nullptr;  // exp(-k h / tau_minus) of the targets (PostHistory::decays)

  // Words of a segment's record of `count` synapses with `state` doubles each beyond the weight.
  static uint64_t record_words(uint64_t count, uint32_t state) {
    return sizeof(SegmentTrace) / 8 + (count + 1) / 2 + count * (1 + state);
  }
  std::byte* record(uint32_t word) { return records.data() + 8 * uint64_t(word); }
  const std::byte* record(uint32_t word) const { return records.data() + 8 * uint64_t(word); }
  static SegmentTrace& trace_of(std::byte* r) { return *reinterpret_cast<SegmentTrace*>(r); }
  static uint32_t* targets_of(std::byte* r) { return reinterpret_cast<uint32_t*>(r + sizeof(SegmentTrace)); }
  static double* weights_of(std::byte* r, uint32_t count) {
    return reinterpret_cast<double*>(r + sizeof(SegmentTrace) + 8 * ((uint64_t(count) + 1) / 2));
  }

  // Segment h: its synapses, its trace, and synapse k of it (0 <= k < count(h)).
  uint32_t count(uint32_t h) const { return seg_first[h + 1] - seg_first[h]; }
  SegmentTrace& trace(uint32_t h) { return trace_of(record(seg_record[h])); }
  const SegmentTrace& trace(uint32_t h) const { return const_cast<PlasticStore*>(this)->trace(h); }
  uint32_t target(uint32_t h, uint32_t k) const { return targets_of(const_cast<PlasticStore*>(this)->record(seg_record[h]))[k]; }
  double& weight(uint32_t h, uint32_t k) { return weights_of(record(seg_record[h]), count(h))[k]; }
  double weight(uint32_t h, uint32_t k) const { return const_cast<PlasticStore*>(this)->weight(h, k); }
  // The rule's state of synapse k (synapse_state doubles).
  double* state(uint32_t h, uint32_t k) { return weights_of(record(seg_record[h]), count(h)) + count(h) + k * synapse_state; }
  const double* state(uint32_t h, uint32_t k) const { return const_cast<PlasticStore*>(this)->state(h, k); }
  // The segment holding synapse i (its index in the store, row by row, segment by segment).
  uint32_t segment_of(uint64_t i) const {
    return uint32_t(std::upper_bound(seg_first.begin(), seg_first.end(), i) - seg_first.begin() - 1);
  }

  uint64_t size() const { return seg_first.empty() ? 0 : seg_first.back(); }
  uint64_t bytes() const {
    return row_head.size() * 4 + seg_first.size() * 4 + seg_delay.size() * 2 + seg_record.size() * 4 + records.size();
  }
};

// Turns the store build_thread_synapses made for plastic projection j (weights as indices into
// `drawn`) into its plastic store.
void build_plastic_store(const EngineConfig& cfg, uint32_t j, const ThreadNeurons& neurons, SynapseStore& grouped,
                         const std::vector<double>& drawn, PlasticStore& out);
// Counts each neuron's incoming plastic synapses of rules that read the target and sets its
// trace's time constant; empty where no synapse's rule reads its target.
void build_post_history(const EngineConfig& cfg, const ThreadNeurons& neurons, std::vector<PlasticStore>& stores,
                        int64_t keep_steps, PostHistory& out);

// An efficacy on its way: the input column it adds to and its value in the fixed point of the
// input rows. A plastic synapse is updated when its spike is received (PlasticDelivery::deliver)
// and its efficacy waits here, under its arrival step, until delivery adds it to the input.
struct PendingEfficacy {
  uint32_t column;
  int32_t efficacy;
};

// The efficacies that arrive in one step: a growable array written a segment at a time (room(n),
// then the pointer past what was written), with no per-element check or zeroing.
class PendingEfficacies {
 public:
  PendingEfficacy* room(size_t n) {
    if (size_ + n > capacity_) grow(size_ + n);
    return data_.get() + size_;
  }
  void written_to(const PendingEfficacy* end) { size_ = size_t(end - data_.get()); }
  void push_back(PendingEfficacy e) { *room(1) = e; ++size_; }
  const PendingEfficacy* begin() const { return data_.get(); }
  const PendingEfficacy* end() const { return data_.get() + size_; }
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  void clear() { size_ = 0; }

 private:
  void grow(size_t need) {
    const size_t capacity = std::max(need, 2 * capacity_);
    std::unique_ptr<PendingEfficacy[]> data(new PendingEfficacy[capacity]);
    std::copy(begin(), end(), data.get());
    data_ = std::move(data);
    capacity_ = capacity;
  }
  std::unique_ptr<PendingEfficacy[]> data_;
  size_t size_ = 0, capacity_ = 0;
};

// The ring of pending efficacies by arrival step (the delivery queues' ring), seen from one
// received spike: at(d) is the slot of the step at which a synapse of delay d delivers it.
struct PendingRing {
  PendingEfficacies* slots;
  size_t size;                           // slots in the ring
  size_t first;                          // the slot of delay 0, unwrapped (first + d < 2 size)
  PendingEfficacies& at(uint32_t delay) const {
    const size_t q = first + delay;
    return slots[q >= size ? q - size : q];
  }
};

// An efficacy in the fixed point of the input rows.
inline int32_t to_fixed(double w, double scale) {
  const double f = std::rint(w * scale);
  return int32_t(std::clamp(f, -2147483647.0, 2147483647.0));
}

// Synapse k of segment h brought up to `now` (steps): the facilitation by the target's spikes
// that reached the synapse since its last pre-synaptic spike, which NEST applies only at the next
// one. Reads, changes nothing.
inline double weight_up_to_date(const PlasticStore& store, uint32_t h, uint32_t k, const PostHistory& history,
                                int64_t now) {
  return history.empty() ? store.weight(h, k) : store.rule->weight_up_to_date(store, h, k, history, now);
}

}  // namespace ranvier
