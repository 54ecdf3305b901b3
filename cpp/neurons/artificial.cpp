#include "neurons/artificial.hpp"

#include <stdexcept>

namespace ranvier::artificial {
namespace {

class Update final : public PopulationUpdate {
 public:
  Update(const PopulationSpec& spec, const ModelContext& ctx) : p_(Parameters::of(spec, ctx.h)), key_(ctx.key) {}
  // A vectorised compare for all cells, then the few that fired (a cell fires every isi_min
  // steps at most): the cost per cell and step stays a fraction of a nanosecond.
  void step(const StepInput& in, const NeuronColumns& s, uint8_t* fired) const override {
    const int64_t step = in.step;
    int64_t* next = s.next_spike;
#pragma omp simd
    for (uint64_t k = 0; k < s.n; ++k) fired[k] = next[k] == step;
    const uint64_t span = uint64_t(p_.isi_max_steps - p_.isi_min_steps + 1);
    for_each_fired(fired, s.n, [&](uint64_t k) {
      const uint32_t count = ++s.spikes_fired[k];
      const Counter r = philox4x32_10(make_counter(s.gid[k], Purpose::firing, 0, count, 0), key_);
      next[k] = step + p_.isi_min_steps + int64_t((uint64_t(r[0]) * span) >> 32);
    });
  }

 private:
  Parameters p_;
  Key key_;
};

void check(const PopulationSpec& spec, double h) {
  check_no_per_neuron(spec);
  check_initial(spec, kInitialReset);
  const Parameters p = Parameters::of(spec, h);
  if (p.isi_min_steps < 1 || p.isi_max_steps < p.isi_min_steps)
    throw std::invalid_argument("artificial population '" + spec.name + "' needs 1 step <= isi_min_ms <= isi_max_ms");
}

void initialize(const PopulationSpec& spec, const Key& key, double h, const NeuronColumns& s) {
  const int64_t period = Parameters::of(spec, h).isi_max_steps;
  for (uint64_t k = 0; k < s.n; ++k) s.next_spike[k] = first_spike(key, s.gid[k], period);
}

std::unique_ptr<PopulationUpdate> make_update(const PopulationSpec& spec, const ModelContext& ctx, const NeuronColumns&) {
  return std::make_unique<Update>(spec, ctx);
}

}  // namespace

const NeuronModel model{"artificial", check, initialize, make_update};

}  // namespace ranvier::artificial
