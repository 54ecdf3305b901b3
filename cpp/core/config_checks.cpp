#include "core/config_checks.hpp"

#include <stdexcept>
#include <string>
#include <vector>

#include "base/simd.hpp"
#include "neurons/neuron_model.hpp"
#include "synapses/synapse_rule.hpp"

namespace ranvier {

SimdLevel simd_level_named(const std::string& name) {
  if (name == "best") return best_simd_level();
  for (SimdLevel level : {SimdLevel::scalar, SimdLevel::avx2, SimdLevel::avx512})
    if (name == simd_level_name(level)) {
      if (level > best_simd_level())
        throw std::invalid_argument("simd = '" + name + "': this CPU and build run at most '" +
                                    simd_level_name(best_simd_level()) + "'");
      return level;
    }
  throw std::invalid_argument("simd = '" + name + "': one of best, avx512, avx2, scalar");
}

void check_config(EngineConfig& cfg) {
  if (cfg.threads < 1) throw std::invalid_argument("threads must be at least 1");
  simd_level_named(cfg.simd);
  if (cfg.ranks_per_node < 0) throw std::invalid_argument("ranks_per_node must be 0 (the shared-memory nodes) or positive");
  if (cfg.steps_per_cycle < 1 || cfg.steps_per_cycle > 0xFFFF)
    throw std::invalid_argument("steps_per_cycle must lie in [1, 65535]");
  if (cfg.drive_steps == 0) cfg.drive_steps = cfg.steps_per_cycle;
  if (cfg.drive_steps < 1 || cfg.drive_steps % cfg.steps_per_cycle)
    throw std::invalid_argument("drive_steps must be a positive multiple of steps_per_cycle");
  const int64_t reach = cfg.overlap ? 2 * cfg.steps_per_cycle : cfg.steps_per_cycle;
  for (const auto& pr : cfg.projections)
    if (pr.delay_offset_steps < reach)
      throw std::invalid_argument(cfg.overlap ? "with overlap, the communication interval must be at most half the minimum delay"
                                               : "a projection's minimum delay is shorter than the communication interval");
  for (const auto& p : cfg.populations) neuron_model(p.model).check(p, cfg.resolution_ms);
  // Receptors: a projection onto a model with receptors names one of them; others name none.
  for (const auto& pr : cfg.projections) {
    const PopulationSpec& target = cfg.populations.at(pr.target);
    const int receptors = neuron_model(target.model).layout_of(target).receptors;
    const std::string where = "projection " + cfg.populations.at(pr.source).name + " -> " + target.name + ": ";
    if (receptors == 0 && pr.receptor >= 0)
      throw std::invalid_argument(where + "the target's model (" + target.model + ") has no receptors; leave receptor out");
    if (receptors > 0 && (pr.receptor < 0 || pr.receptor >= receptors))
      throw std::invalid_argument(where + "the target's model (" + target.model + ") has " + std::to_string(receptors) +
                                  " receptors: name one, 1 to " + std::to_string(receptors));
  }
  for (const auto& pr : cfg.projections) {
    if (!pr.plastic()) continue;
    const PlasticitySpec& p = pr.plasticity;
    const std::string where = "plastic projection " + cfg.populations[pr.source].name + " -> " +
                              cfg.populations[pr.target].name + ": ";
    const SynapseRule& rule = synapse_rule(p.rule);
    if (rule.reads_target && !(cfg.populations[pr.target].tau_minus_ms > 0))
      throw std::invalid_argument(where + "the target's tau_minus_ms must be positive");
    if (rule.triplet_trace && !(cfg.populations[pr.target].tau_minus_triplet_ms > 0))
      throw std::invalid_argument(where + "the target's tau_minus_triplet_ms must be positive");
    if (rule.check) rule.check(p, where);
  }
  if (cfg.global_interval > 0) {
    // The global pathway holds a spike for up to D cycles, so every synapse between ranks of
    // different area groups, all of them between areas, must be at least D cycles long; with
    // overlap the global exchange finishes one cycle later, so D + 1 cycles.
    for (const auto& p : cfg.populations)
      if (p.area < 0)
        throw std::invalid_argument("the two-tier exchange needs every population in an area; population '" + p.name +
                                    "' has none");
    const int64_t D = cfg.global_interval, L = cfg.steps_per_cycle, lag = cfg.overlap ? 1 : 0;
    if (D * L > 0xFFFF) throw std::invalid_argument("two-tier: global_interval * steps_per_cycle must not exceed 65535 steps");
    for (const auto& pr : cfg.projections) {
      if (cfg.populations[pr.source].area == cfg.populations[pr.target].area) continue;
      if (pr.delay_offset_steps < (D + lag) * L)
        throw std::invalid_argument(
            "two-tier: the global exchange every D = " + std::to_string(D) + " cycles of " + std::to_string(L) +
            " step(s) would deliver spikes late: the shortest inter-area delay (" + cfg.populations[pr.source].name +
            " -> " + cfg.populations[pr.target].name + ") is " + std::to_string(pr.delay_offset_steps) +
            " step(s), and D " + (cfg.overlap ? "+ 1 (with overlap the global exchange finishes a cycle later) " : "") +
            "whole cycles must fit into it: choose D <= " + std::to_string(pr.delay_offset_steps / L - lag));
    }
  }
  std::vector<int> drives(cfg.populations.size(), 0);
  for (const auto& d : cfg.drives)
    if (d.target >= drives.size() || ++drives[d.target] > 1)
      throw std::invalid_argument("each population takes at most one Poisson drive");
  // The drive adds into the excitatory column: a model with split input takes positive drives
  // only, a model with receptors none (it has no column without a receptor).
  for (const auto& d : cfg.drives)
    if (neuron_model(cfg.populations[d.target].model).layout_of(cfg.populations[d.target]).receptors > 0)
      throw std::invalid_argument("population '" + cfg.populations[d.target].name +
                                  "' has receptors: connect a Poisson source population to one of them instead of a drive");
  for (const auto& d : cfg.drives)
    if (neuron_model(cfg.populations[d.target].model).layout_of(cfg.populations[d.target]).split_input &&
        (d.weight_mean < 0 || d.weight_sd > 0))
      throw std::invalid_argument("population '" + cfg.populations[d.target].name +
                                  "' separates excitatory and inhibitory input: its Poisson drive needs weight >= 0 "
                                  "and weight_sd = 0");
}

}  // namespace ranvier
