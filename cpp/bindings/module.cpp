// Python bindings: the engine's configuration structs, the Engine, and a few pure functions
// exposed for tests (Philox, the inverse normal CDF).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <memory>

#include "bench/calibration.hpp"
#include "comm/communicator.hpp"
#include "comm/primitive_bench.hpp"
#include "synapses/synapse_rule.hpp"
#include "core/crash_report.hpp"
#include "base/distributions.hpp"
#include "core/engine.hpp"
#include "base/philox.hpp"
#include "neurons/neuron_model.hpp"

namespace nb = nanobind;
using namespace nb::literals;
using namespace ranvier;

namespace {

template <class T>
nb::ndarray<nb::numpy, T, nb::ndim<1>> to_numpy(std::vector<T>&& v) {
  auto* heap = new std::vector<T>(std::move(v));
  nb::capsule owner(heap, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  return nb::ndarray<nb::numpy, T, nb::ndim<1>>(heap->data(), {heap->size()}, owner);
}

template <class T>
nb::ndarray<nb::numpy, T, nb::ndim<2>> to_numpy_2d(std::vector<T>&& v, size_t rows, size_t cols) {
  auto* heap = new std::vector<T>(std::move(v));
  nb::capsule owner(heap, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  return nb::ndarray<nb::numpy, T, nb::ndim<2>>(heap->data(), {rows, cols}, owner);
}


using Int64Array = nb::ndarray<const int64_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using DoubleArray = nb::ndarray<const double, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

// ConnectionRule by name, in the enum's order.
constexpr const char* rule_names[] = {"pairwise", "fixed_total", "fixed_indegree", "fixed_outdegree", "list", "grid"};

}  // namespace

NB_MODULE(_engine, m) {
  m.doc() = "Ranvier's C++ engine";

  nb::list phases, counters, placements;
  for (const char* p : kPhaseNames) phases.append(p);
  for (const auto& [name, value] : counter_table(Counters{}, 0, 0)) counters.append(name);
  placements.append("round-robin");
  placements.append("block");
  placements.append("segments");
  placements.append("random");
  m.attr("PHASES") = phases;
  m.attr("COUNTERS") = counters;
  m.attr("PLACEMENTS") = placements;
  m.attr("EXCHANGES") = exchange_names();
  m.def("calibrate", &calibrate, "memory_bytes"_a, "repeats"_a,
        "Machine figures for bench/roofline.py: stream bandwidth, random access, scatter-add, clock, IPC");
  m.attr("MPI_PRIMITIVES") = primitive_names();
  m.def("mpi_bench", [](bool use_mpi, int64_t comm_handle, const std::string& primitive, size_t words, int repeats) {
    auto comm = make_communicator(use_mpi, comm_handle);
    nb::gil_scoped_release release;
    return time_primitive(*comm, primitive, words, repeats);
  }, "use_mpi"_a, "comm_handle"_a, "primitive"_a, "words"_a, "repeats"_a);

  m.def("philox4x32_10", [](std::vector<uint32_t> ctr, std::vector<uint32_t> key) {
    if (ctr.size() != 4 || key.size() != 2) throw nb::value_error("counter needs 4 words and key 2");
    const Counter out = philox4x32_10({ctr[0], ctr[1], ctr[2], ctr[3]}, {key[0], key[1]});
    return std::vector<uint32_t>(out.begin(), out.end());
  }, "counter"_a, "key"_a);
  // The drive's Poisson counts (AVX-512, AVX2, scalar tail), for tests against a plain reference.
  m.def("poisson_counts", [](std::vector<uint32_t> words, std::vector<uint32_t> thresholds) {
    if (thresholds.size() != PoissonTable::kCounted)
      throw nb::value_error(("thresholds: " + std::to_string(PoissonTable::kCounted) + " words needed").c_str());
    std::vector<uint32_t> count(words.size());
    poisson_counts_of(words.data(), words.size(), thresholds.data(), count.data());
    return count;
  }, "words"_a, "thresholds"_a);
  // The vectorised Philox paths (AVX-512, AVX2, scalar tail), for tests against philox4x32_10.
  m.def("philox_lanes", [](std::vector<uint64_t> ids, uint32_t purpose, uint32_t tag, uint32_t a, uint32_t block,
                           std::vector<uint32_t> key) {
    std::vector<uint32_t> lo(ids.size()), hi(ids.size()), out(4 * ids.size());
    for (size_t i = 0; i < ids.size(); ++i) { lo[i] = uint32_t(ids[i]); hi[i] = uint32_t(ids[i] >> 32); }
    philox4x32_10_lanes(lo.data(), hi.data(), ids.size(), Purpose(purpose), tag, a, block, {key.at(0), key.at(1)},
                        out.data(), ids.size());
    return out;
  }, "ids"_a, "purpose"_a, "tag"_a, "a"_a, "block"_a, "key"_a);
  m.def("philox_series", [](std::vector<uint32_t> base, int word, size_t n, std::vector<uint32_t> key) {
    if (base.size() != 4 || (word != 2 && word != 3)) throw nb::value_error("base needs 4 words; word is 2 or 3");
    std::vector<uint32_t> out(4 * n);
    philox4x32_10_series({base[0], base[1], base[2], base[3]}, word, n, {key.at(0), key.at(1)}, out.data(), n);
    return out;
  }, "base"_a, "word"_a, "n"_a, "key"_a);
  m.def("random_placement", [](std::vector<uint64_t> first, int ranks, int threads, uint64_t seed) {
    // every neuron's (rank, thread, thread index, rank index), and back: the gid of each
    // (rank, thread, thread index) in rank-major, thread-major order (tests)
    const Placement pl = Placement::random(first, ranks, threads, seed);
    const uint64_t n = first.back();
    std::vector<int64_t> rank(n), thread(n), index(n), rank_index(n), back;
    for (uint64_t g = 0; g < n; ++g) {
      const Location at = pl.locate(g);
      rank[g] = at.rank; thread[g] = at.thread; index[g] = int64_t(at.index); rank_index[g] = int64_t(pl.rank_index(g));
    }
    for (int r = 0; r < ranks; ++r)
      for (int t = 0; t < threads; ++t)
        for (uint64_t k = 0; k < pl.thread_count(r, t); ++k) back.push_back(int64_t(pl.gid(r, t, k)));
    return nb::make_tuple(to_numpy(std::move(rank)), to_numpy(std::move(thread)), to_numpy(std::move(index)),
                          to_numpy(std::move(rank_index)), to_numpy(std::move(back)));
  }, "first"_a, "ranks"_a, "threads"_a, "seed"_a, "The random placement of population bounds `first` (tests).");
  m.def("wall_time", &Engine::wall_time, "The engine's wall clock, seconds (its cycle ends use it).");
  m.def("simd_kernels", []() { return avx512_kernels() ? "avx512" : "avx2"; },
        "The kernels of the loops outside the neuron models in this process (set by the last engine made)");
  m.def("best_simd", []() { return simd_level_name(best_simd_level()); }, "The best kernels this CPU and build run");
  m.def("use_simd", [](const std::string& name) { process_simd_level() = simd_level_named(name); }, "name"_a,
        "Sets the process's kernels as an engine of EngineConfig.simd = name does (tests of the kernels)");
  m.def("inverse_normal", &inverse_normal, "p"_a);
  m.def("neuron_simd", []() { return simd_level_name(process_simd_level()); },
        "The kernels the neuron models of the last engine made run (EngineConfig.simd)");
  m.def("install_crash_report", &install_crash_report, "prefix"_a, "suffix"_a,
        "One line on stderr when the process crashes (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT), then "
        "the signal ends it as before (core/crash_report.hpp)");
  m.def("crash_report_line", &crash_report_line, "sig"_a, "The line written for signal sig ('' if none)");
  m.def("uninstall_crash_report", &uninstall_crash_report);
  m.def("crash_report_signals", &crash_report_signals);
  m.def("crash_report_installed", &crash_report_installed);
  m.def("set_crash_notify_fd", &set_crash_notify_fd, "fd"_a,
        "A socket told 'failing' before the crash line (-1: none; ranvier.deathwatch)");
  m.def("finalize_mpi_at_exit", &finalize_mpi_at_exit,
        "MPI_Finalize at the process's exit after status 0, else a line and MPI_Abort (comm/communicator.hpp); "
        "False where it cannot be installed");
  m.def("set_exit_report", &set_exit_report, "prefix"_a, "suffix"_a, "notify_fd"_a);
  m.def("set_exit_agreed", &set_exit_agreed, "agreed"_a,
        "The exit status is the same on every rank: MPI_Finalize whatever it is");
  m.def("build_info", []() {
    nb::dict d;
    d["version"] = RANVIER_VERSION;
    d["compiler"] = RANVIER_COMPILER;
    d["git_commit"] = RANVIER_GIT_COMMIT;
    d["build_type"] = RANVIER_BUILD_TYPE;
    d["mpi"] = have_mpi();
    d["mpi_library"] = mpi_library_name();
    d["mpi_persistent"] = have_persistent_mpi();  // of the library loaded: MPI-4 persistent collectives
    d["openmp"] = true;
    d["openmp_max_threads"] = omp_get_max_threads();
    d["cuda"] = false;
#ifdef __AVX512F__
    d["simd"] = "avx512";
#elif defined(__AVX2__)
    d["simd"] = avx512_kernels() ? "avx2, hot loops avx512" : "avx2";
#else
    d["simd"] = avx512_kernels() ? "sse2, hot loops avx512" : "sse2";
#endif
    d["native"] = bool(RANVIER_NATIVE_BUILD);
    return d;
  });

  m.def("load_neuron_model", &load_neuron_model, "path"_a,
        "Loads a neuron model compiled apart from the engine (a shared object, cpp/neurons/model_abi.hpp) into "
        "the registry of models; returns its name, under which populations name it. RuntimeError in one line "
        "for a file that is not such a model or was compiled against another model interface.");
  m.def("load_synapse_rule", &load_synapse_rule, "path"_a,
        "Loads a synapse rule compiled apart from the engine (a shared object, cpp/synapses/rule_abi.hpp) into "
        "the registry of rules; returns its name, under which PlasticitySpec.rule names it. RuntimeError in one "
        "line for a file that is not such a rule or was compiled against another model interface.");
  m.def("neuron_model_abi", &neuron_model_abi,
        "The digest of the model interface (headers and compiler) this engine was built with");

  nb::class_<NeuronValues>(m, "NeuronValues", "a parameter's values per neuron: an array, or a distribution")
      .def(nb::init<>())
      .def_rw("values", &NeuronValues::values).def_rw("distribution", &NeuronValues::distribution)
      .def_rw("a", &NeuronValues::a).def_rw("b", &NeuronValues::b).def_rw("tag", &NeuronValues::tag);
  // The values the engine gives neurons [first, first + size) (any rank, thread or placement).
  m.def("neuron_values", [](const NeuronValues& v, uint64_t first, uint64_t size, uint64_t seed) {
    if (!v.values.empty() && v.values.size() != size) throw nb::value_error("values.size() must equal size");
    std::vector<double> out(size);
    const Key key = key_from_seed(seed);
    for (uint64_t k = 0; k < size; ++k) out[k] = neuron_value(v, key, first + k, first);
    return to_numpy(std::move(out));
  }, "values"_a, "first"_a, "size"_a, "seed"_a);
  nb::class_<PopulationSpec>(m, "PopulationSpec")
      .def(nb::init<>())
      .def_rw("name", &PopulationSpec::name).def_rw("first", &PopulationSpec::first)
      // The neuron model by its name (cpp/neurons/registry.cpp finds it).
      .def_prop_rw("model", [](const PopulationSpec& p) { return p.model; },
                   [](PopulationSpec& p, const std::string& name) { p.model = neuron_model(name).name; })
      .def_rw("size", &PopulationSpec::size)
      .def_rw("parameters", &PopulationSpec::parameters, "the model's parameters by name")
      .def_rw("per_neuron", &PopulationSpec::per_neuron, "the parameters that vary per neuron, by name")
      .def_rw("initial", &PopulationSpec::initial, "the initial state where it is one word ('reset', 'uniform')")
      .def_rw("sequences", &PopulationSpec::sequences, "the model's parameters that are sequences of numbers, by name")
      .def_rw("integer_sequences", &PopulationSpec::integer_sequences,
              "the model's parameters that are sequences of integers (steps, offsets), by name")
      .def_rw("area", &PopulationSpec::area).def_rw("tau_minus_ms", &PopulationSpec::tau_minus_ms)
      .def_rw("tau_minus_triplet_ms", &PopulationSpec::tau_minus_triplet_ms)
      .def_rw("injected_current", &PopulationSpec::injected_current);
  nb::class_<PlasticitySpec>(m, "PlasticitySpec")
      .def(nb::init<>())
      .def_prop_rw("rule", [](const PlasticitySpec& p) { return p.rule; },
                   [](PlasticitySpec& p, const std::string& name) {
                     try {
                       p.rule = synapse_rule(name).name;
                     } catch (const std::invalid_argument& e) {
                       throw nb::value_error(e.what());
                     }
                   })
      .def_rw("parameters", &PlasticitySpec::parameters);
  nb::class_<ProjectionSpec>(m, "ProjectionSpec")
      .def(nb::init<>())
      .def_rw("source", &ProjectionSpec::source).def_rw("target", &ProjectionSpec::target)
      .def_rw("autapses", &ProjectionSpec::autapses)
      .def_rw("probability", &ProjectionSpec::probability).def_rw("weight_mean", &ProjectionSpec::weight_mean)
      .def_rw("weight_sd", &ProjectionSpec::weight_sd)
      .def_rw("delay_offset_steps", &ProjectionSpec::delay_offset_steps)
      .def_rw("delay_step_steps", &ProjectionSpec::delay_step_steps)
      .def_rw("delay_scale_ms", &ProjectionSpec::delay_scale_ms).def_rw("delay_cut_ms", &ProjectionSpec::delay_cut_ms)
      .def_rw("delay_step_ms", &ProjectionSpec::delay_step_ms)
      .def_rw("delay_normal", &ProjectionSpec::delay_normal).def_rw("delay_mean_ms", &ProjectionSpec::delay_mean_ms)
      .def_rw("delay_sd_ms", &ProjectionSpec::delay_sd_ms)
      .def_rw("delay_redraw_below_ms", &ProjectionSpec::delay_redraw_below_ms)
      .def_rw("delay_redraw_above_ms", &ProjectionSpec::delay_redraw_above_ms)
      .def_prop_rw("rule", [](const ProjectionSpec& p) { return std::string(rule_names[size_t(p.rule)]); },
                   [](ProjectionSpec& p, const std::string& name) {
                     for (size_t i = 0; i < std::size(rule_names); ++i)
                       if (name == rule_names[i]) { p.rule = ConnectionRule(i); return; }
                     throw nb::value_error(("unknown connection rule '" + name + "'").c_str());
                   }, "pairwise, fixed_total, fixed_indegree, fixed_outdegree, list or grid")
      .def("set_grid", [](ProjectionSpec& p, int64_t columns_x, int64_t columns_y, bool periodic, Int64Array dx,
                          Int64Array dy, Int64Array threshold) {
        const size_t n = dx.shape(0);
        if (dy.shape(0) != n || threshold.shape(0) != n || n == 0)
          throw nb::value_error("set_grid: dx, dy and threshold need one entry per offset");
        auto g = std::make_shared<ColumnGridSpec>();
        g->columns_x = columns_x;
        g->columns_y = columns_y;
        g->periodic = periodic;
        for (size_t i = 0; i < n; ++i) {
          g->dx.push_back(int32_t(dx(i)));
          g->dy.push_back(int32_t(dy(i)));
          g->threshold.push_back(uint64_t(threshold(i)));
        }
        if (g->threshold.back() != (uint64_t(1) << 32))
          throw nb::value_error("set_grid: the last threshold must be 2^32");
        p.grid = std::move(g);
      }, "columns_x"_a, "columns_y"_a, "periodic"_a, "dx"_a, "dy"_a, "threshold"_a,
         "The column grid of a grid projection (src/ranvier/grid.py).")
      .def_rw("total_synapses", &ProjectionSpec::total_synapses).def_rw("degree", &ProjectionSpec::degree)
      .def_rw("delay_constant", &ProjectionSpec::delay_constant)
      .def_rw("weight_clip", &ProjectionSpec::weight_clip)
      .def_rw("plasticity", &ProjectionSpec::plasticity)
      .def_rw("receptor", &ProjectionSpec::receptor)
      // The entries of an explicit list (population-local ids), copied once into the engine;
      // weights and delay_steps may be empty (then the projection's laws give them).
      .def("set_list", [](ProjectionSpec& p, Int64Array sources, Int64Array targets, DoubleArray weights,
                          Int64Array delay_steps) {
        const size_t n = sources.shape(0);
        if (targets.shape(0) != n || (weights.shape(0) && weights.shape(0) != n) ||
            (delay_steps.shape(0) && delay_steps.shape(0) != n))
          throw nb::value_error("sources, targets and the given weights and delays need the same length");
        auto list = std::make_shared<ConnectionList>();
        list->sources.resize(n);
        list->targets.resize(n);
        for (size_t i = 0; i < n; ++i) {
          if (sources(i) < 0 || targets(i) < 0) throw nb::value_error("list ids must not be negative");
          list->sources[i] = uint64_t(sources(i));
          list->targets[i] = uint64_t(targets(i));
        }
        list->weights.assign(weights.data(), weights.data() + weights.shape(0));
        for (double w : list->weights) list->max_abs_weight = std::max(list->max_abs_weight, std::abs(w));
        list->delay_steps.resize(delay_steps.shape(0));
        for (size_t i = 0; i < list->delay_steps.size(); ++i) {
          if (delay_steps(i) < 1 || delay_steps(i) > 0xFFFF) throw nb::value_error("list delays must lie in [1, 65535] steps");
          list->delay_steps[i] = uint16_t(delay_steps(i));
        }
        p.list = std::move(list);
      }, "sources"_a, "targets"_a, "weights"_a, "delay_steps"_a)
      .def_prop_ro("list_size", [](const ProjectionSpec& p) { return p.list ? p.list->sources.size() : size_t(0); });
  nb::class_<CurrentSourceSpec>(m, "CurrentSourceSpec")
      .def(nb::init<>())
      .def_rw("targets", &CurrentSourceSpec::targets).def_rw("steps", &CurrentSourceSpec::steps)
      .def_rw("amplitudes_pA", &CurrentSourceSpec::amplitudes_pA)
      .def_rw("noise_interval_steps", &CurrentSourceSpec::noise_interval_steps)
      .def_rw("start_step", &CurrentSourceSpec::start_step).def_rw("stop_step", &CurrentSourceSpec::stop_step)
      .def_rw("noise_mean_pA", &CurrentSourceSpec::noise_mean_pA).def_rw("noise_std_pA", &CurrentSourceSpec::noise_std_pA)
      .def_rw("sine", &CurrentSourceSpec::sine).def_rw("sine_amplitude_pA", &CurrentSourceSpec::sine_amplitude_pA)
      .def_rw("sine_offset_pA", &CurrentSourceSpec::sine_offset_pA)
      .def_rw("sine_frequency_hz", &CurrentSourceSpec::sine_frequency_hz)
      .def_rw("sine_phase_deg", &CurrentSourceSpec::sine_phase_deg);
  m.def("current_source_values", &current_source_values, "spec"_a, "source"_a, "targets"_a, "seed"_a,
        "resolution_ms"_a, "first_step"_a, "n_steps"_a,
        "A current source's current (pA) per step, first_step on, as the engine computes it (the "
        "average over targets for noise)");
  nb::class_<DriveSpec>(m, "DriveSpec")
      .def(nb::init<>())
      .def_rw("target", &DriveSpec::target).def_rw("n_synapses", &DriveSpec::n_synapses)
      .def_rw("rate_hz", &DriveSpec::rate_hz).def_rw("weight_mean", &DriveSpec::weight_mean)
      .def_rw("weight_sd", &DriveSpec::weight_sd);
  nb::class_<EngineConfig>(m, "EngineConfig")
      .def(nb::init<>())
      .def_rw("populations", &EngineConfig::populations).def_rw("projections", &EngineConfig::projections)
      .def_rw("drives", &EngineConfig::drives).def_rw("current_sources", &EngineConfig::current_sources).def_rw("resolution_ms", &EngineConfig::resolution_ms)
      .def_rw("steps_per_cycle", &EngineConfig::steps_per_cycle).def_rw("threads", &EngineConfig::threads)
      .def_rw("exchange", &EngineConfig::exchange).def_rw("placement", &EngineConfig::placement)
      .def_rw("seed", &EngineConfig::seed).def_rw("barrier", &EngineConfig::barrier)
      .def_rw("record_spikes", &EngineConfig::record_spikes).def_rw("record_state", &EngineConfig::record_state)
      .def_rw("record_state_interval", &EngineConfig::record_state_interval)
      .def_rw("fraction_bits", &EngineConfig::fraction_bits).def_rw("use_mpi", &EngineConfig::use_mpi)
      .def_rw("comm_handle", &EngineConfig::comm_handle).def_rw("overlap", &EngineConfig::overlap)
      .def_rw("drive_steps", &EngineConfig::drive_steps)
      .def_rw("placement_bounds", &EngineConfig::placement_bounds)
      .def_rw("placement_ranks", &EngineConfig::placement_ranks)
      .def_rw("global_interval", &EngineConfig::global_interval)
      .def_rw("simd", &EngineConfig::simd).def_rw("grouped_build", &EngineConfig::grouped_build)
      .def_rw("ranks_per_node", &EngineConfig::ranks_per_node);

  nb::class_<Engine>(m, "Engine")
      // The communicator is made here, from the configuration's handle, and handed to the engine.
      .def("__init__", [](Engine* e, EngineConfig cfg) {
        auto comm = make_communicator(cfg.use_mpi, cfg.comm_handle, cfg.ranks_per_node);
        new (e) Engine(std::move(cfg), std::move(comm));
      }, "config"_a)
      .def("build", &Engine::build, nb::call_guard<nb::gil_scoped_release>())
      .def("run_cycles", &Engine::run_cycles, "cycles"_a, nb::call_guard<nb::gil_scoped_release>())
      .def("run_steps", &Engine::run_steps, "steps"_a, nb::call_guard<nb::gil_scoped_release>())
      .def("set_population", &Engine::set_population, "index"_a, "spec"_a)
      .def("set_current_source", &Engine::set_current_source, "index"_a, "spec"_a)
      .def_prop_ro("rank", &Engine::rank)
      .def_prop_ro("ranks", &Engine::ranks)
      .def_prop_ro("cycles_done", &Engine::cycles_done)
      .def_prop_ro("steps_done", &Engine::steps_done)
      .def("synapse_count", &Engine::synapse_count)
      .def("synapse_bytes", &Engine::synapse_bytes)
      .def("synapse_entry_bytes", &Engine::synapse_entry_bytes)
      .def("take_spikes", [](Engine& e) {
        std::vector<uint64_t> gid;
        std::vector<int64_t> step;
        e.take_spikes(gid, step);
        return nb::make_tuple(to_numpy(std::move(gid)), to_numpy(std::move(step)));
      }, "The spikes recorded since the last call (global ids, steps); forgotten by the engine.")
      .def("take_cycle_timers", [](Engine& e) {
        const auto t = e.take_cycle_timers();
        std::vector<double> flat;
        flat.reserve(t.size() * kPhases);
        for (const auto& row : t) flat.insert(flat.end(), row.begin(), row.end());
        return to_numpy_2d(std::move(flat), t.size(), size_t(kPhases));
      }, "Seconds per phase of each cycle run since the last call, [cycle, phase]; forgotten by the engine.")
      .def("take_cycle_ends", [](Engine& e) { return to_numpy(e.take_cycle_ends()); },
           "The wall_time() at which each cycle run since the last call ended; forgotten by the engine.")
      .def("take_cycle_loads", [](Engine& e) {
        const auto loads = e.take_cycle_loads();
        std::vector<int64_t> flat;
        flat.reserve(loads.size() * 2);
        for (const auto& row : loads) flat.insert(flat.end(), row.begin(), row.end());
        return to_numpy_2d(std::move(flat), loads.size(), size_t(2));
      }, "Per cycle since the last call: this rank's spikes emitted and received spikes with a synapse here, "
         "cumulative since the start, [cycle, 2]; forgotten by the engine.")
      .def("set_pace", &Engine::set_pace, "on"_a, "origin"_a, "origin_step"_a,
           "Hold every later cycle's end to origin + (steps since origin_step) x their simulated length (on).")
      .def_prop_ro("pace_wait_seconds", &Engine::pace_wait_seconds)
      .def("partner_ranks", &Engine::partner_ranks,
           "The other ranks holding synapses of this rank's neurons (world ranks, ascending).")
      .def("counters", [](const Engine& e) {
        const Counters c = e.counters();
        nb::dict d;
        for (const auto& [name, value] : counter_table(c, e.events_pending(), e.spikes_unsent())) d[name] = value;
        return d;
      })
      .def("connections", [](const Engine& e) {
        std::vector<uint64_t> s, t;
        std::vector<double> w;
        std::vector<int64_t> d;
        e.connections(s, t, w, d);
        return nb::make_tuple(to_numpy(std::move(s)), to_numpy(std::move(t)), to_numpy(std::move(w)),
                              to_numpy(std::move(d)));
      })
      .def("plastic_weights", [](const Engine& e, uint32_t projection, bool up_to_date) {
        std::vector<uint64_t> s, t;
        std::vector<double> w;
        std::vector<int64_t> d;
        e.plastic_weights(projection, up_to_date, s, t, w, d);
        return nb::make_tuple(to_numpy(std::move(s)), to_numpy(std::move(t)), to_numpy(std::move(w)),
                              to_numpy(std::move(d)));
      }, "projection"_a, "up_to_date"_a = false)
      .def("plastic_state", [](const Engine& e, uint32_t projection) {
        std::vector<double> v;
        const uint32_t doubles = e.plastic_state(projection, v);
        return nb::make_tuple(to_numpy(std::move(v)), doubles);
      }, "projection"_a)
      .def("set_plastic_weights", [](Engine& e, uint32_t projection, DoubleArray w) {
        e.set_plastic_weights(projection, w.data(), w.shape(0));
      }, "projection"_a, "weights"_a)
      .def("plastic_weights_at", [](const Engine& e, uint32_t projection, Int64Array places) {
        std::vector<uint64_t> at(places.shape(0));
        for (size_t i = 0; i < at.size(); ++i) {
          if (places(i) < 0) throw nb::value_error("places must not be negative");
          at[i] = uint64_t(places(i));
        }
        std::vector<double> w;
        e.plastic_weights_at(projection, at, w);
        return to_numpy(std::move(w));
      }, "projection"_a, "places"_a)
      .def("checkpoint_state", [](const Engine& e) {
        StateTables t = e.checkpoint_state();
        nb::dict d;
        for (auto& [name, v] : t.ints) d[name.c_str()] = to_numpy(std::move(v));
        for (auto& [name, v] : t.reals) d[name.c_str()] = to_numpy(std::move(v));
        return d;
      }, "This rank's dynamic state, keyed by global ids: {name: array} (cpp/core/checkpoint.cpp).")
      .def("restore_state", [](Engine& e, nb::dict ints, nb::dict reals, int64_t boundary_step) {
        // Arrays as they are (no conversion, no per-element Python calls): int64 and float64.
        using IntArray = nb::ndarray<const int64_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
        StateTables t;
        for (auto [key, value] : ints) {
          IntArray a;
          if (!nb::try_cast(value, a, false)) throw nb::type_error("restore_state: ints must be 1-d int64 arrays");
          t.ints[nb::cast<std::string>(key)].assign(a.data(), a.data() + a.shape(0));
        }
        for (auto [key, value] : reals) {
          DoubleArray a;
          if (!nb::try_cast(value, a, false)) throw nb::type_error("restore_state: reals must be 1-d float64 arrays");
          t.reals[nb::cast<std::string>(key)].assign(a.data(), a.data() + a.shape(0));
        }
        nb::gil_scoped_release release;
        e.restore_state(t, boundary_step);
      }, "ints"_a, "reals"_a, "boundary_step"_a,
         "Takes up a checkpoint's state (every rank's columns: int64 and float64 arrays) at boundary_step.")
      .def("network_digest", &Engine::network_digest,
           "This rank's share of the static network's digest (sum over ranks modulo 2^64).")
      .def("state_trace", [](const Engine& e) {
        std::vector<uint64_t> ids;
        std::vector<double> V, c, c_in, w, receptors;
        int R = 0;
        e.state_trace(ids, V, c, c_in, w, receptors, R);
        const size_t n = ids.size(), steps = n ? V.size() / n : 0;
        // receptors 3, 4, ...: [row][receptor * steps + step]
        return nb::make_tuple(to_numpy(std::move(ids)), to_numpy_2d(std::move(V), n, steps),
                              to_numpy_2d(std::move(c), n, steps), to_numpy_2d(std::move(c_in), n, steps),
                              to_numpy_2d(std::move(w), n, steps), to_numpy_2d(std::move(receptors), n, size_t(R) * steps),
                              R);
      });
}
