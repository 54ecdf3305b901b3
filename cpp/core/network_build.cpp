#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "core/distributions.hpp"
#include "core/local_network.hpp"
#include "core/philox.hpp"

namespace ranvier {

void build_thread_neurons(const EngineConfig& cfg, const Placement& placement, int rank, int thread,
                          ThreadNeurons& out) {
  const uint64_t n = placement.thread_count(rank, thread);
  out.gid.resize(n);
  out.gid_lo.resize(n);
  out.gid_hi.resize(n);
  for (uint64_t k = 0; k < n; ++k) {
    out.gid[k] = placement.gid(rank, thread, k);
    out.gid_lo[k] = uint32_t(out.gid[k]);
    out.gid_hi[k] = uint32_t(out.gid[k] >> 32);
  }
  out.V.assign(n, 0.0);
  out.c.assign(n, 0.0);
  out.refractory.assign(n, 0);
  out.next_spike.assign(n, 0);
  out.spikes_fired.assign(n, 0);
  out.ranges.clear();
  const Key key = key_from_seed(cfg.seed);
  uint64_t k = 0;
  for (uint32_t p = 0; p < cfg.populations.size(); ++p) {
    const auto& pop = cfg.populations[p];
    const uint64_t begin = k;
    while (k < n && out.gid[k] < pop.first + pop.size) {
      if (pop.artificial) {
        Stream s(key, out.gid[k], Purpose::firing, 0, 0);
        out.next_spike[k] = int64_t(double(s.next()) * 0x1p-32 * double(pop.isi_max_steps));
      } else if (pop.initial_uniform) {
        Stream s(key, out.gid[k], Purpose::initial, 0, 0);
        out.V[k] = pop.reset_mV + (pop.theta_mV - pop.reset_mV) * (double(s.next()) * 0x1p-32);
      } else {
        out.V[k] = pop.reset_mV;
      }
      ++k;
    }
    if (k > begin) out.ranges.push_back({p, begin, k});
  }
}

namespace {

// Calls emit(source_gid, synapse_index) for every synapse of projection j onto target t, in
// increasing source order: Bernoulli(p) over all candidate sources (s != t) by geometric skips.
template <class Emit>
void for_each_source(const EngineConfig& cfg, const Key& key, uint32_t j, uint64_t t, Emit&& emit) {
  const auto& pr = cfg.projections[j];
  const auto& src = cfg.populations[pr.source];
  const bool self_in_source = t >= src.first && t < src.first + src.size;
  const uint64_t candidates = src.size - (self_in_source ? 1 : 0);
  if (pr.probability <= 0 || candidates == 0) return;
  auto source_of = [&](uint64_t i) {
    const uint64_t g = src.first + i;
    return self_in_source && g >= t ? g + 1 : g;
  };
  uint32_t count = 0;
  if (pr.probability >= 1) {
    for (uint64_t i = 0; i < candidates; ++i) emit(source_of(i), count++);
    return;
  }
  Stream stream(key, t, Purpose::connect, j, 0);
  const double log_q = std::log1p(-pr.probability);
  double pos = -1;
  while (true) {
    pos += 1.0 + std::floor(std::log(stream.uniform()) / log_q);
    if (pos >= double(candidates)) break;
    emit(source_of(uint64_t(pos)), count++);
  }
}

}  // namespace

void build_thread_synapses(const EngineConfig& cfg, const ThreadNeurons& neurons, SynapseStore& out) {
  const uint64_t N = cfg.neuron_count();
  const Key key = key_from_seed(cfg.seed);
  const double scale = std::ldexp(1.0, cfg.fraction_bits);

  // Projections by target population.
  std::vector<std::vector<uint32_t>> into(cfg.populations.size());
  for (uint32_t j = 0; j < cfg.projections.size(); ++j) into[cfg.projections[j].target].push_back(j);

  // Pass 1: count synapses per source row.
  std::vector<uint64_t> fill(N + 1, 0);
  for (const auto& range : neurons.ranges)
    for (uint64_t k = range.begin; k < range.end; ++k)
      for (uint32_t j : into[range.population])
        for_each_source(cfg, key, j, neurons.gid[k], [&](uint64_t s, uint32_t) { ++fill[s + 1]; });
  for (uint64_t s = 0; s < N; ++s) fill[s + 1] += fill[s];
  const uint64_t total = fill[N];
  if (total >= (uint64_t(1) << 32)) throw std::runtime_error("more than 2^32 synapses on one thread: use more threads or ranks");
  std::vector<uint64_t> row_start(fill.begin(), fill.end());

  // Pass 2: regenerate, draw weight and delay, place each synapse in its source row. Targets
  // are visited in increasing order, so every row comes out sorted by target. A target's
  // synapses are drawn first and then stored while the destinations (random rows across the
  // whole array) are prefetched a few ahead: the stores then overlap instead of stalling.
  out.synapses.resize(total);
  std::vector<uint16_t> delay(total);
  uint64_t max_delay = 0;
  struct Drawn { uint64_t source; int32_t weight; uint16_t delay; };
  std::vector<Drawn> drawn;
  for (const auto& range : neurons.ranges) {
    for (uint64_t k = range.begin; k < range.end; ++k) {
      const uint64_t t = neurons.gid[k];
      drawn.clear();
      for (uint32_t j : into[range.population]) {
        const auto& pr = cfg.projections[j];
        for_each_source(cfg, key, j, t, [&](uint64_t s, uint32_t index) {
          Stream stream(key, t, Purpose::synapse, j, index);
          double w = pr.weight_mean;
          if (pr.weight_sd > 0) {
            do { w = pr.weight_mean + pr.weight_sd * inverse_normal(stream.uniform()); }
            while (!(w / pr.weight_mean > 0.0 && w / pr.weight_mean < 2.0));
          }
          uint64_t d;
          if (pr.delay_normal) {
            double y;  // in steps
            do { y = (pr.delay_mean_ms + pr.delay_sd_ms * inverse_normal(stream.uniform())) / cfg.resolution_ms; }
            while (!(y >= double(pr.delay_offset_steps)));
            d = std::max<uint64_t>(uint64_t(pr.delay_offset_steps), uint64_t(std::llround(std::min(y, 1e6))));
          } else {
            double x;
            do { x = -pr.delay_scale_ms * std::log(stream.uniform()); } while (!(x < pr.delay_cut_ms));
            d = uint64_t(pr.delay_offset_steps) + uint64_t(std::floor(x / pr.delay_step_ms)) * uint64_t(pr.delay_step_steps);
          }
          if (d > 0xFFFF) throw std::runtime_error("a delay exceeds 65535 steps: use a coarser resolution_ms");
          max_delay = std::max(max_delay, d);
          drawn.push_back({s, int32_t(std::rint(w * scale)), uint16_t(d)});
        });
      }
      constexpr size_t kAhead = 16;
      for (size_t i = 0; i < drawn.size(); ++i) {
        if (i + kAhead < drawn.size()) {
          const uint64_t ahead = fill[drawn[i + kAhead].source];
          __builtin_prefetch(&out.synapses[ahead], 1);
          __builtin_prefetch(&delay[ahead], 1);
        }
        const uint64_t pos = fill[drawn[i].source]++;
        out.synapses[pos] = {uint32_t(k), drawn[i].weight};
        delay[pos] = drawn[i].delay;
      }
    }
  }

  // Group each row by delay (stable counting sort: targets stay sorted) and write headers.
  out.row_head.assign(N + 1, 0);
  out.seg_first.clear();
  out.seg_delay.clear();
  std::vector<uint32_t> hist(max_delay + 1, 0), start(max_delay + 1, 0);
  std::vector<uint16_t> distinct;
  std::vector<Synapse> tmp;
  for (uint64_t s = 0; s < N; ++s) {
    out.row_head[s] = uint32_t(out.seg_first.size());
    const uint64_t b = row_start[s], e = row_start[s + 1];
    if (b == e) continue;
    distinct.clear();
    for (uint64_t i = b; i < e; ++i)
      if (hist[delay[i]]++ == 0) distinct.push_back(delay[i]);
    std::sort(distinct.begin(), distinct.end());
    uint32_t off = 0;
    for (uint16_t d : distinct) {
      start[d] = off;
      out.seg_first.push_back(uint32_t(b + off));
      out.seg_delay.push_back(d);
      off += hist[d];
      hist[d] = 0;
    }
    if (distinct.size() > 1) {
      tmp.resize(e - b);
      for (uint64_t i = b; i < e; ++i) tmp[start[delay[i]]++] = out.synapses[i];
      std::copy(tmp.begin(), tmp.end(), out.synapses.begin() + b);
    }
  }
  out.row_head[N] = uint32_t(out.seg_first.size());
  out.seg_first.push_back(uint32_t(total));
  out.seg_first.shrink_to_fit();
  out.seg_delay.shrink_to_fit();
}

}  // namespace ranvier
