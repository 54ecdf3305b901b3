// The validated network description handed over from Python: plain data, global ids.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace ranvier {

// One parameter's values per neuron: an array over the population (values[gid - first]), or,
// where `values` is empty, a distribution drawn per neuron from Philox keyed by (seed, gid,
// Purpose::parameter, tag), so that a neuron's value is the same for any decomposition.
// distribution: "normal" (a mean, b sd), "uniform" (a low, b high) or "lognormal" (exp of a
// normal of mean a, sd b). neuron_value (cpp/neurons/neuron_model.hpp) evaluates it.
struct NeuronValues {
  std::vector<double> values;
  std::string distribution;
  double a = 0, b = 0;
  uint32_t tag = 0;               // one per parameter of the model, so draws are independent
};

// A population: what every population has; its model's parameters by the model's names (the
// Python front end's), read by the model's file under cpp/neurons/ when the engine is built, so a
// new model needs no field here.
struct PopulationSpec {
  std::string name;
  uint64_t first = 0, size = 0;   // global ids [first, first + size)
  // Its neuron model: the file of this name under cpp/neurons/ (the Python front end's model
  // name, and its module under src/ranvier/neurons/).
  std::string model = "lifca";
  // The model's parameters by name, read with parameter(spec, "tau_m_ms") (cpp/neurons/neuron_model.hpp).
  std::map<std::string, double> parameters;
  // The parameters that vary per neuron, by the same names. `parameters` then holds their means,
  // and the model reads each neuron's own value; "initial_V_mV" is the initial membrane potential
  // (in the potentials of the model's parameters: psc_exp's absolute, lifca's relative to rest).
  std::map<std::string, NeuronValues> per_neuron;
  // The initial state where it is one word for the population (the front end's Population.initial:
  // "reset", or lifca's "uniform"); the model says what it means.
  std::string initial = "reset";
  // Parameters that are sequences rather than one number, by name: real-valued (inhomogeneous_poisson's
  // "rates_hz") and integers (steps and offsets, exact beyond 2^53: spike_train's "train_steps"),
  // read with sequence(spec, name) and integer_sequence(spec, name).
  std::map<std::string, std::vector<double>> sequences;
  std::map<std::string, std::vector<int64_t>> integer_sequences;
  int32_t area = -1;              // the brain area it belongs to (-1: none)
  // The post-synaptic trace of STDP (NEST's tau_minus of an archiving node): every neuron of the
  // population that is the target of a plastic synapse keeps its spike history with this trace.
  double tau_minus_ms = 20;
  // The triplet rule's second post-synaptic trace (NEST's tau_minus_triplet), kept only where the
  // population is the target of a triplet projection.
  double tau_minus_triplet_ms = 110;
  // A current source targets some of its neurons (psc_exp then takes its two-current step, which
  // reads the injected current).
  bool injected_current = false;
};

// How a projection chooses its synapses (the Python front end's Projection rules).
enum class ConnectionRule : uint8_t {
  pairwise,          // every ordered pair (s in source, t in target, s != t) with `probability`
  fixed_total,       // exactly total_synapses, each with a source and a target drawn uniformly
  fixed_indegree,    // every target exactly `degree` synapses, sources drawn uniformly
  fixed_outdegree,   // every source exactly `degree` synapses, targets drawn uniformly
  list,              // the entries of `list`, one synapse each
  grid,              // every target `degree` draws over a grid of columns by distance (ColumnGridSpec)
};
// Multapses and autapses are allowed by every rule but pairwise.

// Explicit connections: population-local ids, one entry per synapse; a weight and a delay per
// entry where given (empty: the projection's weight and delay laws). Shared, never copied, when
// a ProjectionSpec is copied (the engine's configuration is copied on its way in).
struct ConnectionList {
  std::vector<uint64_t> sources, targets;
  std::vector<double> weights;
  std::vector<uint16_t> delay_steps;
  double max_abs_weight = 0;             // of `weights`
};

// The lateral connectivity of a grid of columns (src/ranvier/grid.py): a population's neurons lie
// column by column; each draw picks a column offset (dx[o], dy[o]) by its 32-bit word u, the o
// with threshold[o - 1] <= u < threshold[o], and a source uniformly in that column. Offsets off
// an open grid give no synapse. Shared, never copied, like ConnectionList.
struct ColumnGridSpec {
  int64_t columns_x = 1, columns_y = 1;
  bool periodic = true;
  std::vector<int32_t> dx, dy;
  std::vector<uint64_t> threshold;       // cumulative, the last 2^32
};

// A projection's synapse rule (cpp/synapses/: "static", or a plastic rule such as "stdp") by its
// name, with its parameters by the Python front end's names; each rule reads its own at build.
struct PlasticitySpec {
  std::string rule = "static";
  std::map<std::string, double> parameters;
};

struct ProjectionSpec {
  uint32_t source = 0, target = 0;        // population indices
  ConnectionRule rule = ConnectionRule::pairwise;
  double probability = 0;                 // pairwise
  bool autapses = false;                  // pairwise: (t, t) is a candidate pair too (PyNN's allow_self_connections)
  uint64_t total_synapses = 0;            // fixed_total
  uint64_t degree = 0;                    // fixed_indegree, fixed_outdegree
  std::shared_ptr<const ConnectionList> list;  // list
  std::shared_ptr<const ColumnGridSpec> grid;  // grid
  // Efficacies in the target's input unit (mV, or pA for psc_exp); redrawn until strictly inside
  // (0, 2 mean), or with weight_clip set to zero where the sign flips.
  double weight_mean = 0, weight_sd = 0;
  bool weight_clip = false;
  // The shortest delay (every rule and law); with delay_constant, every delay (no draw).
  int64_t delay_offset_steps = 1;
  bool delay_constant = false;
  int64_t delay_step_steps = 1;
  double delay_scale_ms = 1, delay_cut_ms = 1, delay_step_ms = 1;  // offset + floor(x/step)*step, x ~ Exp(scale) < cut
  // Gaussian delays instead: x ~ N(mean, sd) redrawn until x >= delay_offset_steps * h (or, when
  // delay_redraw_below_ms >= 0, until x >= that) and, when delay_redraw_above_ms >= 0, until also
  // x <= that (NEST's redraw(min, max)), then rounded to the nearest step and raised to at least
  // delay_offset_steps.
  bool delay_normal = false;
  double delay_mean_ms = 1, delay_sd_ms = 0, delay_redraw_below_ms = -1, delay_redraw_above_ms = -1;
  PlasticitySpec plasticity;
  // The target's receptor its synapses add into (0-based; models with receptors, NEST's port
  // receptor + 1), or -1: the weight's sign chooses (split input).
  int32_t receptor = -1;

  bool plastic() const { return plasticity.rule != "static"; }
  bool list_weights() const { return rule == ConnectionRule::list && list && !list->weights.empty(); }
  bool list_delays() const { return rule == ConnectionRule::list && list && !list->delay_steps.empty(); }
};

struct DriveSpec {                        // Poisson input drawn on the fly
  uint32_t target = 0;
  int64_t n_synapses = 0;
  double rate_hz = 0, weight_mean = 0, weight_sd = 0;
};

// A current injected into neurons (pA), piecewise constant in time: amplitudes_pA[i] enters the
// integration of every step from steps[i] on (the step that integrates [steps[i] h, steps[i] h + h]),
// until steps[i + 1]; 0 before steps[0]. Sources on one neuron add, in the order of the list.
// A noise source (noise_interval_steps > 0) instead: from start_step until stop_step, every
// noise_interval_steps steps each target draws its own current noise_mean_pA + noise_std_pA z,
// z standard normal keyed by (seed, target gid, the source's index, the interval): NEST's
// noise_generator, the same on any decomposition.
// A sine source (sine) instead: in every step s with start_step <= s < stop_step,
// sine_offset_pA + y_1(s), y_1(s) the second component of (A cos phi, A sin phi) turned s times by
// the rotation through omega h (omega = 2 pi f / 1000 per ms, phi the phase in radians): NEST's
// ac_generator's recursion, about A sin(omega s h + phi) (cpp/core/currents.cpp).
struct CurrentSourceSpec {
  std::vector<uint64_t> targets;          // global ids
  std::vector<int64_t> steps;             // increasing
  std::vector<double> amplitudes_pA;
  int64_t noise_interval_steps = 0;
  int64_t start_step = 0, stop_step = 0;
  double noise_mean_pA = 0, noise_std_pA = 0;
  bool sine = false;
  double sine_amplitude_pA = 0, sine_offset_pA = 0, sine_frequency_hz = 0, sine_phase_deg = 0;
};

struct EngineConfig {
  std::vector<PopulationSpec> populations;
  std::vector<ProjectionSpec> projections;
  std::vector<DriveSpec> drives;
  std::vector<CurrentSourceSpec> current_sources;
  double resolution_ms = 0.1;
  int64_t steps_per_cycle = 1;            // the minimum delay: spikes are exchanged once per cycle
  int threads = 1;
  std::string exchange = "allgather", placement = "round-robin";
  // placement "segments": gids [placement_bounds[s], placement_bounds[s + 1]) on rank placement_ranks[s].
  std::vector<uint64_t> placement_bounds;
  std::vector<int32_t> placement_ranks;
  // Two-tier exchange when > 0: spikes go to the ranks of their own area group through `exchange`
  // on the group's sub-communicator every cycle, and to all other ranks through `exchange` on all
  // ranks every global_interval cycles (the delay ratio D). Needs D cycles <= every inter-area delay.
  int64_t global_interval = 0;
  uint64_t seed = 1;
  bool barrier = true;                    // time a barrier before each exchange as 'synchronize'
  // Overlapped schedule: each interval's exchange proceeds while the next is computed; the
  // interval (steps_per_cycle) must then be at most half the minimum delay.
  bool overlap = false;
  // The external drive is drawn per block of this many steps (0: steps_per_cycle), a multiple
  // of steps_per_cycle. Set to the minimum delay, it makes the drive, and so every spike, the
  // same whether the schedule is overlapped or not.
  int64_t drive_steps = 0;
  bool record_spikes = true;
  std::vector<uint64_t> record_state;     // global ids whose V and c are recorded
  int64_t record_state_interval = 1;      // steps between samples: V and c at every multiple
  int fraction_bits = 16;                 // synaptic input in fixed point, units of 2^-bits mV
  bool use_mpi = false;                   // false: a single process, no MPI
  int64_t comm_handle = 0;                // with use_mpi: the communicator's Fortran handle (any sign)
  // Settings the front end reads from the environment, once (ranvier.options):
  std::string simd = "best";              // the kernels (cpp/base/simd.hpp): best, avx512, avx2 or scalar
  bool grouped_build = false;             // build every thread's synapses in the grouped layout (tests)
  int ranks_per_node = 0;                 // the hierarchical exchange's nodes: 0 shared memory, else groups of k

  uint64_t neuron_count() const {
    return populations.empty() ? 0 : populations.back().first + populations.back().size;
  }
};

}  // namespace ranvier
