// One rank's share of a simulation: threads, their neurons and synapses, the cycle.
#pragma once
#include <array>
#include <map>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "comm/communicator.hpp"
#include "base/distributions.hpp"
#include "core/local_network.hpp"
#include "base/placement.hpp"
#include "core/plasticity.hpp"
#include "base/simd.hpp"
#include "base/spec.hpp"
#include "exchange/exchange.hpp"
#include "exchange/pathway.hpp"
#include "neurons/neuron_model.hpp"

namespace ranvier {

// Each phase function stays a function of its own (one call per thread and cycle, so no cost
// worth inlining for): profilers such as callgrind then attribute instructions to phases
// (bench/instructions.py).
#define RANVIER_PHASE __attribute__((noinline))

enum Phase { kDeliver, kUpdate, kCollocate, kCommunicate, kSynchronize, kPhases };
inline constexpr std::array<const char*, kPhases> kPhaseNames = {"deliver", "update", "collocate", "communicate",
                                                                 "synchronize"};

struct Counters {
  uint64_t spikes_emitted = 0;
  uint64_t spikes_delivered = 0;           // received spikes with at least one synapse on this rank
  uint64_t synaptic_events_recurrent = 0;  // synapses activated (delivered into input buffers)
  uint64_t delivery_segments = 0;          // delay segments delivered: each starts at an unpredictable address
  uint64_t synaptic_events_external = 0;   // Poisson input events
  uint64_t events_scheduled = 0;           // synapses of received spikes put in the delivery queues
  uint64_t events_expected = 0;            // global out-degree summed over this rank's emitted spikes
  uint64_t exchanges_local = 0;            // two-tier: exchanges inside the area group
  uint64_t exchanges_global = 0;           // exchanges among all ranks
  ExchangeCounters exchange;               // every exchange
  ExchangeCounters exchange_global;        // the part of `exchange` among all ranks
};

// The one table of counters: the names Python sees (_engine.COUNTERS, Result.counters) and their
// values; events_pending and spikes_unsent describe the present (the engine's, not Counters fields).
inline std::vector<std::pair<const char*, uint64_t>> counter_table(const Counters& c, uint64_t events_pending,
                                                                   uint64_t spikes_unsent) {
  return {{"spikes_emitted", c.spikes_emitted},
          {"spikes_sent", c.exchange.spikes_sent},
          {"spikes_received", c.exchange.spikes_received},
          {"spikes_delivered", c.spikes_delivered},
          {"synaptic_events_recurrent", c.synaptic_events_recurrent},
          {"synaptic_events_external", c.synaptic_events_external},
          {"events_scheduled", c.events_scheduled},
          {"events_expected", c.events_expected},
          {"events_pending", events_pending},
          {"spikes_unsent", spikes_unsent},
          {"bytes_sent", c.exchange.bytes_sent},
          {"messages_sent", c.exchange.messages_sent},
          {"overflow_rounds", c.exchange.overflow_rounds},
          {"exchange_resizes", c.exchange.exchange_resizes},
          {"persistent_reinits", c.exchange.persistent_reinits},
          {"exchanges_local", c.exchanges_local},
          {"exchanges_global", c.exchanges_global},
          {"global_spikes_sent", c.exchange_global.spikes_sent},
          {"global_bytes_sent", c.exchange_global.bytes_sent},
          {"global_messages_sent", c.exchange_global.messages_sent},
          {"delivery_segments", c.delivery_segments}};
}

// A segment of synapses to deliver; its queue says in which cycle and step offset.
struct DeliveryEntry {
  uint32_t first, count;
};

// NEST's ac_generator's oscillator (cpp/core/currents.cpp): value_at(s) is y_1 after s turns of
// (A cos phi, A sin phi) through omega h, the same arithmetic as NEST's update; the turns go on
// from the last step asked for, or again from step 0 when an earlier one is asked for (after
// a restore or a new schedule): a function of the step alone, the same on any decomposition.
struct SineOscillator {
  double amplitude = 0, phi_rad = 0, a00 = 1, a01 = 0, a10 = 0, a11 = 1;
  double y0 = 0, y1 = 0;
  int64_t turns = -1;                            // the turns y holds; -1: not started
  SineOscillator() = default;
  SineOscillator(double amplitude_pA, double frequency_hz, double phase_deg, double resolution_ms);
  double value_at(int64_t s);
};

// A current source's current (pA) in steps first .. first + n - 1 as the engine computes it from
// its specification (the source's index and the seed key the noise draws), averaged over
// `targets` in their order (NEST's noise_generator records that average); sources other than
// noise give every target the same current, and the first alone is evaluated.
std::vector<double> current_source_values(const CurrentSourceSpec& spec, uint32_t source,
                                          const std::vector<uint64_t>& targets, uint64_t seed,
                                          double resolution_ms, int64_t first, int64_t n);

// The current sources on one thread's neurons (cpp/core/currents.cpp). `current` holds each
// neuron's injected current (pA) for the step being integrated; empty when no source targets
// the thread. A slot is one (source, neuron) pair: a neuron's current is the sum of its slots'
// amplitudes in source order, the same on any decomposition.
struct InjectedCurrents {
  struct Change {
    int64_t step;        // the first step integrated with the new amplitude
    uint32_t neuron;     // thread-local index
    uint32_t slot;
    double amplitude_pA;
  };
  struct Noise {                                 // a noise source's targets on this thread
    uint32_t source;
    int64_t interval, start, stop;
    double mean, std;
    std::vector<uint32_t> slots;
  };
  struct Sine {                                  // a sine source's targets on this thread
    uint32_t source;
    int64_t start, stop;
    double offset;
    SineOscillator oscillator;
    bool on;                                     // its slots may hold a value (else all 0)
    std::vector<uint32_t> slots;
  };
  std::vector<double> current;                   // per neuron
  std::vector<uint8_t> range_has_current;        // per population range
  std::vector<Change> changes;                   // by step, then neuron, then slot
  std::vector<Noise> noise;
  std::vector<Sine> sine;
  std::vector<double> slot_amplitude;            // per slot, its amplitude now
  std::vector<uint32_t> slot_neuron;             // per slot, its neuron
  std::vector<uint32_t> slot_source;             // per slot, its source
  std::vector<uint32_t> slot_begin;              // per neuron: its slots, CSR, in source order
  std::vector<uint64_t> gid;                     // per neuron: its global id (the noise draws' key)
  Key key{};                                     // the simulation's
  size_t next = 0;                               // the first change not applied yet
  // Brings `current` to step s: applies every change up to s and draws the noise due at s.
  void advance_to(int64_t s);
  void set_amplitude(uint32_t slot, double amplitude_pA) { set_slot(slot, amplitude_pA); }   // restoring

 private:
  void set_slot(uint32_t slot, double amplitude_pA);
};

struct ThreadState {
  ThreadNeurons neurons;
  SynapseStore store;                                // static synapses
  std::vector<PlasticStore> plastic;                 // one per plastic projection
  PostHistory history;                               // spikes of the targets of plastic synapses
  std::vector<int32_t> input;                        // [slot][neuron], fixed point
  std::vector<std::vector<DeliveryEntry>> queue;     // [cycle % ring][step offset]: one queue each
  std::vector<PendingEfficacies> plastic_pending;       // the same ring: plastic efficacies on their way
  std::vector<uint8_t> fired;                        // scratch: neurons that fired this step
  std::vector<uint32_t> extra_neuron, extra_word;    // scratch: further drive events (neuron, word)
  std::vector<int32_t> extra_weight;                 // scratch: their efficacies
  std::vector<uint32_t> extra_at;                    // scratch: their places in the input buffer
  std::vector<uint8_t> extra_tail;                   // scratch: whether their uniform is in a normal tail
  std::vector<uint32_t> extra_tails;                 // scratch: the indices of those
  std::vector<uint32_t> drive_words;                 // scratch: block 0 of the drive, 4 words per neuron
  std::vector<uint32_t> drive_count;                 // scratch: events per neuron this cycle
  std::vector<uint32_t> drive_many;                  // scratch: neurons with more than three events, their ids
  std::vector<uint32_t> drive_block1;                // scratch: block 1 of those neurons' windows
  std::vector<std::vector<uint32_t>> fixed_drive_words;  // per drive: 4 steps of one-step-window counts
  std::vector<uint32_t> fixed_drive_group;           // per drive: the window / 4 they were drawn for
  uint64_t input_stride = 0;                         // neurons per input row, padded against cache aliasing
  std::vector<SpikeRecord> spikes_out;               // this cycle's spikes
  std::vector<uint64_t> rec_gid;                     // spike recorder
  std::vector<int64_t> rec_step;
  // A traced neuron: its index on the thread, its row, and the extra columns recorded as c_in, w
  // and c3, c4, ... (receptors 3, 4, ...; -1 where the model has none).
  struct Traced {
    uint64_t index, row;
    int inhibitory_column, adaptation_column;
    int receptor_columns[kMaxTracedReceptors];
  };
  std::vector<Traced> traced;                        // the state recorder's neurons on this thread
  InjectedCurrents currents;                         // current sources on this thread's neurons
  std::vector<std::unique_ptr<PopulationUpdate>> updates;  // per population range: its model's kernel
  std::vector<NeuronColumns> columns;  // per population range: its columns, made once per cycle by update()
  Counters counters;
};

// A rank's dynamic state for a checkpoint (checkpoint.cpp): named columns keyed by global ids.
struct StateTables {
  std::map<std::string, std::vector<int64_t>> ints;
  std::map<std::string, std::vector<double>> reals;
};

// One rank's engine. The cycle and the build live in engine.cpp; each other concern has its file:
//   config_checks.cpp  the configuration's checks (before anything is built)
//   drive.cpp          the external Poisson drive
//   delivery.cpp       delivery queues, scheduling received spikes, delivering their segments
//   recorders.cpp      spike and state recorders, cycle timers, read-outs
//   cpp/neurons/       the neuron models; cpp/exchange/pathway.hpp the spikes' way between ranks
class Engine {
 public:
  // The communicator is made by the caller (the bindings, from the configuration's handle).
  Engine(EngineConfig cfg, std::unique_ptr<Communicator> comm);
  ~Engine();
  void build();
  // Advances by `steps` steps. A call may end inside a cycle (the communication interval): its
  // steps are integrated, and the cycle's exchange waits for the call that completes it, as
  // NEST's partial slices do. run_cycles(n) is run_steps(n x steps_per_cycle) from a boundary.
  void run_steps(int64_t steps);
  void run_cycles(int64_t cycles);
  // Between run calls: a population's new parameters (the same model, size and layout; its
  // neurons keep their state), and a current source's new schedule (its changes before the next
  // step collapse to the amplitude in force then). Both in currents.cpp.
  void set_population(uint32_t index, const PopulationSpec& spec);
  void set_current_source(uint32_t index, const CurrentSourceSpec& spec);

  int rank() const { return comm_->rank(); }
  int ranks() const { return comm_->size(); }
  int64_t cycles_done() const { return cycle_; }     // complete cycles
  int64_t steps_done() const { return cycle_ * cfg_.steps_per_cycle + offset_; }
  uint64_t synapse_count() const;
  uint64_t synapse_bytes() const;
  std::vector<int> synapse_entry_bytes() const;  // per thread: 4 (packed) or 8 (wide)
  Counters counters() const;               // summed over threads, pending events included separately
  // The other ranks that hold synapses of this rank's neurons: the partners a targeted exchange needs.
  std::vector<uint32_t> partner_ranks() const;
  uint64_t events_pending() const;
  // Spikes of the cycle a call ended inside: recorded, emitted when a later call completes it.
  uint64_t spikes_unsent() const;
  // The spikes recorded and the cycle timers since the last call, handed over and forgotten here,
  // so a long run holds at most one chunk of either (the caller streams or keeps them).
  void take_spikes(std::vector<uint64_t>& gid, std::vector<int64_t>& step);
  std::vector<std::array<double, kPhases>> take_cycle_timers();
  // Wall-clock deadlines (src/ranvier/deadlines.py): the time each cycle's work ended (wall_time's
  // clock), since the last call. With pacing on, every cycle ends no earlier than
  // origin + (steps since origin_step) x the step's simulated length: the run never goes
  // faster than biology. The time spent holding back is kept out of the phases (pace_wait_seconds).
  std::vector<double> take_cycle_ends();
  // Load per cycle (src/ranvier/imbalance.py): this rank's spikes emitted and received spikes
  // with a synapse here, counted since the start (cumulative: the caller takes differences).
  std::vector<std::array<uint64_t, 2>> take_cycle_loads();
  void set_pace(bool on, double origin, int64_t origin_step);
  double pace_wait_seconds() const { return pace_wait_; }
  static double wall_time();
  void connections(std::vector<uint64_t>& src, std::vector<uint64_t>& tgt, std::vector<double>& w,
                   std::vector<int64_t>& d) const;
  // The synapses of plastic projection j on this rank with their current weights (NEST's: as of
  // each synapse's last pre-synaptic spike), or, up_to_date, with the facilitation by target
  // spikes since then applied (read only).
  void plastic_weights(uint32_t j, bool up_to_date, std::vector<uint64_t>& src, std::vector<uint64_t>& tgt,
                       std::vector<double>& w, std::vector<int64_t>& d) const;
  // Sets projection j's weights on this rank, n of them in plastic_weights' order; the weights
  // at given places of that order (the weight recorder).
  void set_plastic_weights(uint32_t j, const double* w, size_t n);
  void plastic_weights_at(uint32_t j, const std::vector<uint64_t>& places, std::vector<double>& out) const;
  // The rule's state of projection j's synapses on this rank (SynapseRule::synapse_state doubles
  // each, synapse after synapse), in plastic_weights' order; returns the doubles per synapse.
  uint32_t plastic_state(uint32_t j, std::vector<double>& out) const;
  // Checkpoints (checkpoint.cpp), between run_cycles calls: this rank's state keyed by global ids;
  // restoring the state of every rank's checkpoint (any decomposition) at its boundary step
  // (a whole number of this engine's cycles); the static network's order-independent digest.
  StateTables checkpoint_state() const;
  void restore_state(const StateTables& state, int64_t boundary_step);
  uint64_t network_digest() const;
  bool has_plastic_store(uint32_t projection) const;   // on this rank, any thread
  // V, c, c_in and w of the recorded neurons on this rank: ids, and row-major [id][step] arrays
  // (c_in and w NaN where a neuron's model has none).
  // receptors: [row][receptor 3, 4, ...][step], `traced_receptors` of them (NaN where none).
  void state_trace(std::vector<uint64_t>& ids, std::vector<double>& V, std::vector<double>& c,
                   std::vector<double>& c_in, std::vector<double>& w, std::vector<double>& receptors,
                   int& traced_receptors) const;

 private:
  // Phases (one call per thread and cycle).
  void deliver(ThreadState& ts, int64_t cycle);                                   // delivery.cpp
  void schedule_plastic(ThreadState& ts, const std::vector<SpikeRecord>& records, int64_t cycle);   // delivery.cpp
  void drive(ThreadState& ts, int64_t cycle);                                     // drive.cpp
  void update(ThreadState& ts, int64_t cycle, int64_t begin, int64_t end);  // steps [begin, end) of the cycle
  void collocate(int64_t cycle);
  void schedule(ThreadState& ts, const std::vector<SpikeRecord>& records, int64_t base_cycle);  // delivery.cpp
  uint64_t fixed_weight_drive(ThreadState& ts, const PopulationRange& range, uint32_t di, const PoissonTable& table,
                              int32_t weight, uint32_t window);                   // drive.cpp
  // Build steps.
  void build_target_table();
  void build_delivery_queues();                                                   // delivery.cpp
  void build_state_recorder();
  void build_current_sources();                                                  // currents.cpp
  void record_state(const ThreadState& ts, int64_t step);                         // recorders.cpp
  void size_state_trace(int64_t start, int64_t stop);                              // room for the samples of a call
  // The parts of a checkpoint (checkpoint.cpp), each saved and restored by one pair.
  void save_neurons(StateTables& out) const;
  void save_pending(StateTables& out) const;
  void save_plastic(StateTables& out) const;
  void save_histories(StateTables& out) const;
  void save_currents(StateTables& out) const;
  void restore_neurons(const StateTables& s);
  void restore_pending(const StateTables& s, int64_t boundary_step);
  void restore_plastic(const StateTables& s);
  void restore_histories(const StateTables& s);
  void restore_triplet_histories(const StateTables& s);
  void restore_currents(const StateTables& s, int64_t boundary_step);
  // Rows of the input buffer follow the step modulo the drive block.
  int64_t input_row(int64_t cycle, int64_t offset) const {
    return (cycle * cfg_.steps_per_cycle + offset) % cfg_.drive_steps;
  }

  EngineConfig cfg_;
  std::unique_ptr<Communicator> comm_;
  Placement placement_;
  std::unique_ptr<SpikePathway> pathway_;  // how spikes reach other ranks: the exchange(s)
  TargetTable targets_;                    // per neuron of this rank: the world ranks with its synapses
  std::vector<uint64_t> out_degree_;       // global out-degree of this rank's neurons (rank-local index)
  std::vector<uint8_t> has_targets_;       // per global source: any synapse on this rank
  std::vector<ThreadState> threads_;
  std::vector<const std::vector<SpikeRecord>*> thread_spikes_;  // each thread's spikes_out
  std::vector<PoissonTable> poisson_;      // per population: external events per cycle
  std::vector<std::array<double, kPhases>> timers_;
  std::vector<double> cycle_ends_;
  std::vector<std::array<uint64_t, 2>> cycle_loads_;
  bool pace_ = false;
  double pace_origin_ = 0, pace_wait_ = 0;
  int64_t pace_origin_step_ = 0;
  std::vector<uint64_t> traced_ids_;
  std::vector<double> trace_V_, trace_c_, trace_c_in_;  // [step][row], grown per run; c_in: NaN where none
  std::vector<double> trace_w_;            // likewise, only where a traced neuron's model has a w (trace_w_used_)
  bool trace_w_used_ = false;
  int trace_receptors_ = 0;                // receptors beyond two recorded (c3, ...): the most of any traced neuron
  std::vector<double> trace_receptor_[kMaxTracedReceptors];   // likewise, [step][row] each
  size_t trace_base_ = 0;
  int64_t trace_first_sample_ = 0;         // samples (multiples of the interval) before the run call
  int64_t cycle_ = 0;                      // complete cycles
  int64_t offset_ = 0;                     // steps of cycle_ done (a call that ended inside it)
  std::array<double, kPhases> partial_timer_{};  // their phases' seconds, added when it completes
  int64_t queue_cycles_ = 1;
  Counters rank_counters_;                 // rank-level counts (master thread)
};

}  // namespace ranvier
